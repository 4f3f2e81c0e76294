//! Keys to intents: what a key press means in the view's current mode. Pure (a key and a mode
//! in, an intent out); the loop carries intents out.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::model::{Action, Mode};

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Move the selection by this many rows.
    Move(isize),
    /// Ask to apply an action to the selected program.
    Ask(Action),
    /// Yes to the question asked.
    Confirm,
    /// No to the question, or close the logs.
    Back,
    /// Show (or hide) the selected program's last log lines.
    Logs,
    /// Leave the view.
    Quit,
    /// Nothing.
    Nothing,
}

/// The key help shown in the footer.
pub const HELP: &str = "↑/↓ select · r restart · s stop · u start · l logs · q quit";

/// What `key` means in `mode`.
pub fn intent(key: &KeyEvent, mode: &Mode) -> Intent {
    if key.kind == KeyEventKind::Release {
        return Intent::Nothing;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('d')) {
        return Intent::Quit;
    }
    if let Mode::Confirm(..) = mode {
        return match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => Intent::Confirm,
            _ => Intent::Back,
        };
    }
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => Intent::Move(-1),
        KeyCode::Down | KeyCode::Char('j') => Intent::Move(1),
        KeyCode::PageUp => Intent::Move(-10),
        KeyCode::PageDown => Intent::Move(10),
        KeyCode::Home | KeyCode::Char('g') => Intent::Move(isize::MIN / 2),
        KeyCode::End | KeyCode::Char('G') => Intent::Move(isize::MAX / 2),
        KeyCode::Char('r') => Intent::Ask(Action::Restart),
        KeyCode::Char('s') => Intent::Ask(Action::Stop),
        KeyCode::Char('u') => Intent::Ask(Action::Start),
        KeyCode::Char('l') | KeyCode::Enter => Intent::Logs,
        KeyCode::Esc if matches!(mode, Mode::Logs(..)) => Intent::Back,
        KeyCode::Char('q') | KeyCode::Esc => Intent::Quit,
        _ => Intent::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_mean_what_the_footer_says() {
        let t = Mode::Table;
        assert_eq!(intent(&key(KeyCode::Down), &t), Intent::Move(1));
        assert_eq!(intent(&key(KeyCode::Char('k')), &t), Intent::Move(-1));
        assert_eq!(
            intent(&key(KeyCode::Char('r')), &t),
            Intent::Ask(Action::Restart)
        );
        assert_eq!(
            intent(&key(KeyCode::Char('s')), &t),
            Intent::Ask(Action::Stop)
        );
        assert_eq!(
            intent(&key(KeyCode::Char('u')), &t),
            Intent::Ask(Action::Start)
        );
        assert_eq!(intent(&key(KeyCode::Char('l')), &t), Intent::Logs);
        assert_eq!(intent(&key(KeyCode::Char('q')), &t), Intent::Quit);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(intent(&ctrl_c, &t), Intent::Quit);
    }

    #[test]
    fn a_question_takes_y_for_yes_and_anything_else_for_no() {
        let asking = Mode::Confirm(Action::Restart, "api".into());
        assert_eq!(intent(&key(KeyCode::Char('y')), &asking), Intent::Confirm);
        assert_eq!(intent(&key(KeyCode::Char('n')), &asking), Intent::Back);
        assert_eq!(intent(&key(KeyCode::Char('q')), &asking), Intent::Back);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(
            intent(&ctrl_c, &asking),
            Intent::Quit,
            "Ctrl-C always quits"
        );
    }

    #[test]
    fn escape_closes_the_logs_and_quits_from_the_table() {
        let logs = Mode::Logs("api".into(), None);
        assert_eq!(intent(&key(KeyCode::Esc), &logs), Intent::Back);
        assert_eq!(intent(&key(KeyCode::Esc), &Mode::Table), Intent::Quit);
        assert_eq!(intent(&key(KeyCode::Char('l')), &logs), Intent::Logs);
    }
}

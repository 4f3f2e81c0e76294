//! The live view's frame, drawn with ratatui from the model: the header lines as a bar across
//! the top, the table with the selected row highlighted, the logs panel when open, and two
//! footer lines (the last news, then the keys or the question being asked).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState};

use super::input::HELP;
use super::model::{COLUMNS, Mode, Model};

/// Draws the whole view into `frame`.
pub fn draw(frame: &mut Frame, model: &Model) {
    let header = model.header_lines();
    let logs_height = match model.mode {
        Mode::Logs(..) => frame.area().height / 2,
        _ => 0,
    };
    let [top, table, logs, note, keys] = Layout::vertical([
        Constraint::Length(header.len() as u16),
        Constraint::Min(2),
        Constraint::Length(logs_height),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let bar = Style::new().add_modifier(Modifier::REVERSED);
    let lines: Vec<Line> = header.into_iter().map(Line::from).collect();
    frame.render_widget(Paragraph::new(lines).style(bar), top);
    draw_table(frame, model, table);
    if let Mode::Logs(name, text) = &model.mode {
        draw_logs(frame, name, text.as_deref(), logs);
    }
    frame.render_widget(Paragraph::new(model.note.as_str()), note);
    let bottom = match &model.mode {
        Mode::Confirm(action, name) => Line::from(format!("{} {name}? (y/n)", action.verb()))
            .style(Style::new().add_modifier(Modifier::BOLD)),
        Mode::Logs(..) => Line::from(format!("Esc closes the logs · {HELP}")),
        Mode::Table => Line::from(HELP),
    };
    frame.render_widget(Paragraph::new(bottom), keys);
}

/// The programs' table; columns as wide as their widest cell, the last one takes the rest.
fn draw_table(frame: &mut Frame, model: &Model, area: Rect) {
    let rows = model.rows();
    let mut widths: Vec<u16> = COLUMNS.iter().map(|c| c.chars().count() as u16).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(&r.cells) {
            *w = (*w).max(c.chars().count() as u16);
        }
    }
    let last = widths.len() - 1;
    let constraints: Vec<Constraint> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i == last {
                Constraint::Fill(1)
            } else {
                Constraint::Length(*w)
            }
        })
        .collect();
    let table = Table::new(rows.into_iter().map(|r| Row::new(r.cells)), constraints)
        .header(Row::new(COLUMNS).style(Style::new().add_modifier(Modifier::BOLD)))
        .column_spacing(1)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(model.selected_index());
    frame.render_stateful_widget(table, area, &mut state);
}

/// The selected program's last log lines, the newest at the bottom.
fn draw_logs(frame: &mut Frame, name: &str, text: Option<&str>, area: Rect) {
    let inner = area.height.saturating_sub(2) as usize;
    let lines: Vec<Line> = match text {
        None => vec![Line::from("reading…")],
        Some("") => vec![Line::from("(no output kept)")],
        Some(t) => {
            let all: Vec<&str> = t.lines().collect();
            let from = all.len().saturating_sub(inner);
            all[from..].iter().map(|l| Line::from(*l)).collect()
        }
    };
    let block = Block::new()
        .borders(Borders::TOP | Borders::BOTTOM)
        .title(format!(" {name}: last lines "));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::top::model::Action;
    use crate::cli::top::model::tests::program;
    use crate::model::State;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn screen(model: &Model, width: u16, height: u16) -> Vec<String> {
        let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
        t.draw(|f| draw(f, model)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect()
    }

    fn model() -> Model {
        let mut m = Model::new();
        m.apply_status(
            1,
            vec![
                program("api", State::Running),
                program("db", State::Backoff),
            ],
            None,
            Default::default(),
            Some(1000),
        );
        m
    }

    #[test]
    fn the_view_shows_the_boot_the_rows_and_the_keys() {
        let s = screen(&model(), 80, 10);
        assert!(s[0].starts_with("ctrlinit up 1s · 2 programs"), "{s:#?}");
        assert!(s[1].starts_with("NAME"), "{s:#?}");
        assert!(s[2].starts_with("api  running"), "{s:#?}");
        assert!(s[3].starts_with("db   backoff"), "{s:#?}");
        assert!(s[9].starts_with("↑/↓ select"), "{s:#?}");
    }

    #[test]
    fn a_question_and_the_logs_take_the_footer_and_half_the_screen() {
        let mut m = model();
        m.mode = Mode::Confirm(Action::Restart, "db".into());
        let s = screen(&m, 80, 10);
        assert!(s[9].starts_with("restart db? (y/n)"), "{s:#?}");
        m.mode = Mode::Logs("db".into(), Some("db | one\ndb | two\n".into()));
        let s = screen(&m, 80, 12);
        let text = s.join("\n");
        assert!(text.contains(" db: last lines "), "{text}");
        assert!(text.contains("db | two"), "{text}");
    }
}

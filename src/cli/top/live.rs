//! The live view's loop: takes the terminal, starts the feeds, then draws, waits for the next
//! message, applies it, until a quit, a signal or the init going away. Every way out returns
//! through here, so the terminal guard is dropped (and the terminal restored) before the exit.

use std::io;
use std::path::Path;
use std::sync::mpsc::{self, Sender};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::feeds::{self, Msg, Snapshot};
use super::guard::Guard;
use super::input::{Intent, intent};
use super::model::{Mode, Model};
use super::render;
use crate::cli::ctl::{EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE};

/// How the loop goes on after a message.
enum Flow {
    Continue,
    /// End with this status, saying this (on the restored screen) first.
    Exit(u8, Option<String>),
}

/// Runs the view from a first snapshot (taken before the terminal, so an unreachable init is
/// said on the normal screen).
pub fn run(socket: &Path, first: Snapshot, sampler: super::figures::Sampler) -> u8 {
    let signals = feeds::block_signals();
    let (tx, rx) = mpsc::channel();
    let mut model = Model::new();
    apply(&mut model, first);
    let guard = match Guard::enter() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("ctrlinit top: cannot use the terminal: {e} (--once prints one frame)");
            return EXIT_FAILED;
        }
    };
    start_feeds(socket, sampler, signals, &tx);
    let (code, said) = match draw_loop(&mut model, socket, &rx, &tx) {
        Ok(Flow::Exit(code, said)) => (code, said),
        Ok(Flow::Continue) => (EXIT_OK, None),
        Err(e) => (EXIT_FAILED, Some(format!("the terminal failed: {e}"))),
    };
    drop(guard);
    if let Some(said) = said {
        eprintln!("ctrlinit top: {said}");
    }
    code
}

/// Starts the threads that feed the view: the event stream first (so the refreshes that follow
/// include what it missed), the refresher, the keyboard, the signals.
fn start_feeds(
    socket: &Path,
    sampler: super::figures::Sampler,
    signals: nix::sys::signal::SigSet,
    tx: &Sender<Msg>,
) {
    let (s, t) = (socket.to_path_buf(), tx.clone());
    std::thread::spawn(move || feeds::events(s, t));
    let (s, t) = (socket.to_path_buf(), tx.clone());
    std::thread::spawn(move || feeds::refresher(s, sampler, t));
    let t = tx.clone();
    std::thread::spawn(move || feeds::input(t));
    let t = tx.clone();
    std::thread::spawn(move || feeds::signals(signals, t));
}

/// Draws, then applies every message waiting, until one ends the view.
fn draw_loop(
    model: &mut Model,
    socket: &Path,
    rx: &mpsc::Receiver<Msg>,
    tx: &Sender<Msg>,
) -> io::Result<Flow> {
    // No `clear()`: it asks the terminal where its cursor is and waits for the answer; the
    // guard cleared the screen already.
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    loop {
        terminal.draw(|f| render::draw(f, model))?;
        // The feeds hold senders as long as they run; the refresher never stops by itself.
        let Ok(first) = rx.recv() else {
            return Ok(Flow::Exit(EXIT_FAILED, Some("every feed ended".into())));
        };
        for msg in std::iter::once(first).chain(rx.try_iter()) {
            if let Flow::Exit(code, said) = handle(model, msg, socket, tx) {
                return Ok(Flow::Exit(code, said));
            }
        }
    }
}

/// Applies one message to the model (and starts what it asks for).
fn handle(model: &mut Model, msg: Msg, socket: &Path, tx: &Sender<Msg>) -> Flow {
    match msg {
        Msg::Key(k) => return on_intent(model, intent(&k, &model.mode), socket, tx),
        // The next draw takes the new size (ratatui compares it with the last).
        Msg::Resize => {}
        Msg::Event(e) => model.apply_event(&e),
        Msg::Snapshot(s) => {
            apply(model, *s);
            // An open logs panel follows the output at the figures' pace.
            if let Mode::Logs(name, _) = &model.mode {
                feeds::read_logs(socket.to_path_buf(), name.clone(), tx.clone());
            }
        }
        Msg::Note(n) => model.note = n,
        Msg::Logs(name, text) => {
            if let Mode::Logs(open, shown) = &mut model.mode
                && *open == name
            {
                *shown = Some(text);
            }
        }
        Msg::Gone(why) => {
            return Flow::Exit(
                EXIT_UNREACHABLE,
                Some(format!("ctrlinit went away ({why}); the view is closed")),
            );
        }
        Msg::Signal(sig) => return Flow::Exit(128u8.saturating_add(sig as u8), None),
    }
    Flow::Continue
}

/// Carries out what a key asked for.
fn on_intent(model: &mut Model, i: Intent, socket: &Path, tx: &Sender<Msg>) -> Flow {
    let selected = model.selected().map(str::to_string);
    match i {
        Intent::Quit => return Flow::Exit(EXIT_OK, None),
        Intent::Move(by) => model.move_selection(by),
        Intent::Ask(action) => {
            if let Some(name) = selected {
                model.mode = Mode::Confirm(action, name);
            }
        }
        Intent::Confirm => {
            if let Mode::Confirm(action, name) = std::mem::replace(&mut model.mode, Mode::Table) {
                model.note = format!("{} {name}…", action.verb());
                feeds::act(socket.to_path_buf(), action, name, tx.clone());
            }
        }
        Intent::Back => model.mode = Mode::Table,
        Intent::Logs => match (&model.mode, selected) {
            (Mode::Logs(..), _) | (_, None) => model.mode = Mode::Table,
            (_, Some(name)) => {
                model.mode = Mode::Logs(name.clone(), None);
                feeds::read_logs(socket.to_path_buf(), name, tx.clone());
            }
        },
        Intent::Nothing => {}
    }
    Flow::Continue
}

/// Puts a snapshot into the model.
pub fn apply(model: &mut Model, s: Snapshot) {
    model.apply_status(s.seq, s.programs, s.network, s.figures, s.init_uptime_ms);
    model.apply_surroundings(s.previous_boot, s.externals);
}

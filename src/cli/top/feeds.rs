//! What feeds the live view, each on a thread of its own and all into one channel: the event
//! stream, a status snapshot once a second (with the processes' figures), the keyboard and
//! window size, signals, and the answers of the actions and log reads the view asks for. The
//! loop that owns the model reads the channel and nothing else, so it never blocks on the init.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};
use ratatui::crossterm::event::{self, Event, KeyEvent};

use super::figures::{Figures, Sampler};
use super::model::Action;
use super::procfs;
use crate::api::client::{Client, ClientError};
use crate::model::protocol::{
    EventRecord, ExternalStatus, NetworkStatus, PreviousBoot, ProgramStatus, Request, Response,
};

/// How often the figures are refreshed: the only polling of the socket `top` does (states
/// arrive as events in between).
pub const REFRESH: Duration = Duration::from_secs(1);

/// How long a status answer may take (a loaded machine answers late, not never).
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// How long a restart, stop or start may take to apply, as the command line's default.
const ACTION_WAIT: Duration = Duration::from_secs(30);

/// How many of a program's last lines the logs panel asks for.
const LOG_LINES: usize = 200;

/// One status answer with what the client measured beside it.
#[derive(Debug)]
pub struct Snapshot {
    /// The last event the answer includes.
    pub seq: u64,
    /// Every program, in configuration order.
    pub programs: Vec<ProgramStatus>,
    /// The network watch, when there is one.
    pub network: Option<NetworkStatus>,
    /// How the boot before this one ended, when the run ledger is on.
    pub previous_boot: Option<PreviousBoot>,
    /// The external dependencies, by name.
    pub externals: Vec<ExternalStatus>,
    /// Each program's CPU % and memory.
    pub figures: HashMap<String, Figures>,
    /// How long the init has run, in milliseconds.
    pub init_uptime_ms: Option<u64>,
}

/// Why a snapshot could not be had.
#[derive(Debug)]
pub enum Trouble {
    /// No answer: the init is unreachable, closed the connection, or answered garbage.
    Client(ClientError),
    /// The init answered with an error (or with something else than a status).
    Answer(String),
}

impl std::fmt::Display for Trouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trouble::Client(e) => write!(f, "{e}"),
            Trouble::Answer(e) => write!(f, "{e}"),
        }
    }
}

/// What arrives on the view's channel.
#[derive(Debug)]
pub enum Msg {
    /// A key was pressed.
    Key(KeyEvent),
    /// The window changed size.
    Resize,
    /// A state change from the event stream.
    Event(EventRecord),
    /// A fresh status with figures.
    Snapshot(Box<Snapshot>),
    /// Something to say under the table: an action's outcome, a missed refresh.
    Note(String),
    /// A program's last log lines (its name, the text).
    Logs(String, String),
    /// The init went away: why.
    Gone(String),
    /// A signal asked the view to end.
    Signal(i32),
}

/// Asks for a status and samples the processes it lists.
pub fn snapshot(socket: &Path, sampler: &mut Sampler, hz: u64) -> Result<Snapshot, Trouble> {
    let mut client = Client::connect(socket).map_err(Trouble::Client)?;
    // The init as this client sees it: the peer of the connection (PID 1 inside the container).
    let init_pid = client.peer_pid();
    let answer = client
        .call(
            &Request::Status {
                names: vec![],
                usage: true,
            },
            ANSWER_WAIT,
        )
        .map_err(Trouble::Client)?;
    let (seq, programs, network, previous_boot, externals) = match answer {
        Response::Status {
            seq,
            programs,
            network,
            previous_boot,
            externals,
        } => (seq, programs, network, previous_boot, externals),
        Response::Error { error, .. } => return Err(Trouble::Answer(error)),
        other => return Err(Trouble::Answer(format!("unexpected answer: {other:?}"))),
    };
    let (samples, init_uptime_ms) = procfs::sample(&programs, init_pid, hz);
    let figures = sampler.figures(&programs, &samples, hz);
    Ok(Snapshot {
        seq,
        programs,
        network,
        previous_boot,
        externals,
        figures,
        init_uptime_ms,
    })
}

/// Whether a client error means the init is gone (rather than slow).
fn gone(e: &ClientError) -> bool {
    matches!(e, ClientError::Unreachable(..) | ClientError::Closed)
}

/// A snapshot every [`REFRESH`], until the view ends or the init goes away.
pub fn refresher(socket: PathBuf, mut sampler: Sampler, tx: Sender<Msg>) {
    let hz = procfs::clock_hz();
    loop {
        std::thread::sleep(REFRESH);
        let msg = match snapshot(&socket, &mut sampler, hz) {
            Ok(s) => Msg::Snapshot(Box::new(s)),
            Err(Trouble::Client(e)) if gone(&e) => Msg::Gone(e.to_string()),
            Err(e) => Msg::Note(format!("status: {e}")),
        };
        let end = matches!(msg, Msg::Gone(_));
        if tx.send(msg).is_err() || end {
            return;
        }
    }
}

/// The event stream, until it ends: its end is the init's.
pub fn events(socket: PathBuf, tx: Sender<Msg>) {
    let mut client = match Client::connect(&socket) {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(Msg::Gone(e.to_string()));
            return;
        }
    };
    if let Err(e) = client.send(&Request::Events, None) {
        let _ = tx.send(Msg::Gone(e.to_string()));
        return;
    }
    loop {
        let msg = match client.next_response() {
            Ok(Some(Response::Event { event })) => Msg::Event(event),
            // Events were missed (the stream lagged): the next snapshot catches up.
            Ok(Some(Response::Error { error, .. })) => Msg::Note(error),
            Ok(Some(_)) => continue,
            Ok(None) => Msg::Gone("ctrlinit closed the control connection".into()),
            Err(e) => Msg::Gone(e.to_string()),
        };
        let end = matches!(msg, Msg::Gone(_));
        if tx.send(msg).is_err() || end {
            return;
        }
    }
}

/// Keys and window size changes, until the terminal fails.
pub fn input(tx: Sender<Msg>) {
    loop {
        let msg = match event::read() {
            Ok(Event::Key(k)) => Msg::Key(k),
            Ok(Event::Resize(..)) => Msg::Resize,
            Ok(_) => continue,
            Err(_) => return,
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

/// The signals that end the view (the terminal is in raw mode: Ctrl-C arrives as a key, these
/// come from `kill` or a closed terminal). Blocked here, in the first thread, before any other
/// exists, so every thread inherits the mask and only [`signals`] takes them.
pub fn block_signals() -> SigSet {
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        set.add(s);
    }
    let _ = set.thread_block();
    set
}

/// Waits for the blocked signals and hands each to the view.
pub fn signals(set: SigSet, tx: Sender<Msg>) {
    while let Ok(sig) = set.wait() {
        if tx.send(Msg::Signal(sig as i32)).is_err() {
            return;
        }
    }
}

/// Applies `action` to `name` on a thread of its own; its outcome comes back as a note.
pub fn act(socket: PathBuf, action: Action, name: String, tx: Sender<Msg>) {
    std::thread::spawn(move || {
        let timeout_ms = ACTION_WAIT.as_millis() as u64;
        let names = vec![name.clone()];
        let request = match action {
            Action::Restart => Request::Restart {
                names,
                all: false,
                timeout_ms,
            },
            Action::Stop => Request::Stop {
                names,
                all: false,
                timeout_ms,
            },
            Action::Start => Request::Start {
                names,
                all: false,
                timeout_ms,
            },
        };
        let verb = action.verb();
        let note = match Client::connect(&socket)
            .and_then(|mut c| c.call(&request, ACTION_WAIT + ANSWER_WAIT))
        {
            Ok(Response::Done { message }) => message,
            Ok(Response::Error { error, .. }) => format!("{verb} {name} failed: {error}"),
            Ok(other) => format!("{verb} {name}: unexpected answer {other:?}"),
            Err(e) => format!("{verb} {name}: {e}"),
        };
        let _ = tx.send(Msg::Note(note));
    });
}

/// Reads `name`'s last log lines (from the init's memory) on a thread of its own.
pub fn read_logs(socket: PathBuf, name: String, tx: Sender<Msg>) {
    std::thread::spawn(move || {
        let request = Request::Logs {
            names: vec![name.clone()],
            lines: LOG_LINES,
            follow: false,
            by_program: false,
        };
        let text = match Client::connect(&socket).and_then(|mut c| c.call(&request, ANSWER_WAIT)) {
            Ok(Response::Logs { text }) => text,
            Ok(Response::Error { error, .. }) => format!("(logs: {error})"),
            Ok(other) => format!("(logs: unexpected answer {other:?})"),
            Err(e) => format!("(logs: {e})"),
        };
        let _ = tx.send(Msg::Logs(name, text));
    });
}

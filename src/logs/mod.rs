//! Program output and ctrlinit's own log: capture, framing, sinks. Crash reports are
//! [`crate::crash`]'s; the log thread calls it once a crashed run's pipes are drained.
//!
//! Everything here runs on the *log thread* (its own single-threaded runtime) and the *console
//! thread* (blocking writes to stdout), never on the supervisor's thread: a slow disk or a
//! stalled console can make programs wait for their pipes, but never delays a restart or the
//! control socket. The supervisor talks to the log thread through [`Logs`], whose methods only
//! queue a command and return.
//!
//! Per program: one pump per pipe (stdout, stderr) reads large chunks, frames whole lines with
//! one `memrchr` per read ([`frame`]), and hands the same block to the file ([`file`]), the
//! ring of last lines ([`ring`]) and, formatted, to the console ([`console`]).

pub mod console;
pub mod file;
pub mod frame;
mod hub;
mod own;
mod pump;
pub mod ring;

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

pub use own::OwnLogLayer;

use crate::config::Config;
use crate::crash::CrashInfo;

/// Which pipe a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// The program's stdout.
    Stdout,
    /// The program's stderr.
    Stderr,
    /// ctrlinit's own log.
    Log,
}

impl Stream {
    /// `stdout`, `stderr` or `log`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::Log => "log",
        }
    }
}

/// What the log thread is asked to do.
pub enum Command {
    /// New settings (at start and after a reload).
    Configure(Arc<Config>),
    /// Read a freshly spawned process's pipes. `run` is `None` for a hook's output.
    Attach {
        /// Program name.
        program: String,
        /// The run, for drain tracking (crash reports wait for it).
        run: Option<u64>,
        /// Read end of its stdout pipe.
        stdout: OwnedFd,
        /// Read end of its stderr pipe.
        stderr: OwnedFd,
    },
    /// A line of ctrlinit's own log.
    Own {
        /// `INFO`, `WARN` …
        level: tracing::Level,
        /// The message.
        message: String,
        /// When it happened (not when the log thread got to it).
        at: std::time::SystemTime,
    },
    /// Reopen every log file (SIGUSR1).
    Reopen,
    /// Write a crash report once the run's pipes are drained.
    Crash(Box<CrashInfo>),
    /// The last lines of programs, formatted as on the console.
    Tail {
        /// Programs (all when empty).
        programs: Vec<String>,
        /// Lines per program.
        lines: usize,
        /// Each program's lines together (by name) instead of merged in time order.
        by_program: bool,
        /// Where the formatted lines go.
        reply: tokio::sync::oneshot::Sender<Vec<u8>>,
    },
    /// Stream new lines of programs (all when empty) until the receiver is dropped.
    Follow {
        /// Programs (all when empty).
        programs: Vec<String>,
        /// Where formatted blocks go; a follower that cannot keep up misses lines.
        tx: tokio::sync::mpsc::Sender<Vec<u8>>,
    },
    /// Drain every pipe (bounded), flush, and stop.
    Shutdown,
}

/// The supervisor's handle on the log thread.
pub struct Logs {
    tx: UnboundedSender<Command>,
    thread: Option<JoinHandle<()>>,
}

impl Logs {
    /// Prepares the log and crash directories and starts the log and console threads.
    ///
    /// Fails when a directory that was configured explicitly cannot be created or written; a
    /// default one that cannot be used only disables what needs it (with a warning).
    pub fn start(config: Arc<Config>) -> Result<Self, String> {
        let dirs = hub::prepare_dirs(&config.init)?;
        let (tx, rx) = unbounded_channel();
        let thread = std::thread::Builder::new()
            .name("ctrlinit-logs".into())
            .spawn(move || hub::run(config, dirs, rx))
            .map_err(|e| format!("failed to start the log thread: {e}"))?;
        Ok(Logs {
            tx,
            thread: Some(thread),
        })
    }

    /// A sender for ctrlinit's own log layer and other threads.
    pub fn sender(&self) -> UnboundedSender<Command> {
        self.tx.clone()
    }

    /// Queues `cmd` for the log thread.
    pub fn send(&self, cmd: Command) {
        let _ = self.tx.send(cmd);
    }

    /// Drains and flushes everything, then waits for the log and console threads to end.
    pub fn shutdown(mut self) {
        let _ = self.tx.send(Command::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

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

mod command;
pub mod console;
mod dirs;
pub mod file;
pub mod frame;
mod hub;
pub mod ledger;
mod own;
mod own_queue;
mod pump;
pub mod ring;
mod shared;
pub mod syslog;

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

pub use command::{Command, LineWatch, Stream, Taps};
pub use own::OwnLogLayer;

use crate::config::Config;

/// The supervisor's handle on the log thread.
pub struct Logs {
    tx: UnboundedSender<Command>,
    thread: Option<JoinHandle<()>>,
    fallbacks: Vec<String>,
    syslog: Option<Arc<syslog::SyslogCounters>>,
}

impl Logs {
    /// Prepares the log and crash directories and starts the log and console threads.
    ///
    /// `before` is given a sender first, before the thread exists: ctrlinit's own log is set up
    /// there, so what the thread says as it opens the log files (a file it refuses) is not lost.
    ///
    /// Fails when a directory that was configured explicitly cannot be created or written; a
    /// default one that cannot be used only disables what needs it (with a warning).
    pub fn start(
        config: Arc<Config>,
        before: impl FnOnce(UnboundedSender<Command>),
    ) -> Result<Self, String> {
        let dirs = dirs::prepare_dirs(&config.init)?;
        let fallbacks = dirs.fallbacks.clone();
        // Bound here, before any program starts: nothing logged during start-up is lost.
        let sockets = syslog::open(&config.init)?;
        let counters = sockets
            .as_ref()
            .map(|_| Arc::new(syslog::SyslogCounters::default()));
        let intake = sockets.zip(counters.clone());
        let (tx, rx) = unbounded_channel();
        before(tx.clone());
        // After `before`: what reading it says (an unclean previous boot) is logged.
        let ledger = ledger::prepare(dirs.log_dir.as_deref(), &config.init, dirs.log_mode);
        let thread = std::thread::Builder::new()
            .name("ctrlinit-logs".into())
            .spawn(move || hub::run(config, dirs, ledger, rx, intake))
            .map_err(|e| format!("failed to start the log thread: {e}"))?;
        Ok(Logs {
            tx,
            thread: Some(thread),
            fallbacks,
            syslog: counters,
        })
    }

    /// What a default directory that could not be used turned off, each with its fix.
    pub fn fallbacks(&self) -> &[String] {
        &self.fallbacks
    }

    /// What the syslog intake counted (`None`: `[init] syslog` is off).
    pub fn syslog_counters(&self) -> Option<Arc<syslog::SyslogCounters>> {
        self.syslog.clone()
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

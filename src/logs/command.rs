//! What the log thread is told, and which stream a line came from.

use std::os::fd::OwnedFd;
use std::sync::Arc;

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

/// A pattern a run's output is watched for (`ready = { log = "…" }`): the first line that
/// matches calls `on_match`, once; the watch then ends.
pub struct LineWatch {
    /// The pattern.
    pub pattern: regex::bytes::Regex,
    /// What a match does (tells the supervisor the run is ready).
    pub on_match: Box<dyn FnOnce() + Send>,
}

/// What a run's output is tapped for, beyond its sinks.
#[derive(Default)]
pub struct Taps {
    /// A readiness pattern, until it matches.
    pub watch: Option<LineWatch>,
    /// Set to the time of the last output (milliseconds since the Unix epoch), for a
    /// `silence` check.
    pub activity: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

/// What the log thread is asked to do.
pub enum Command {
    /// New settings (at start and after a reload).
    Configure(Arc<Config>),
    /// The running programs by main process and session, for the syslog intake's attribution
    /// (sent by the owner loop whenever a run starts or ends).
    SyslogOwners(crate::sys::ancestry::Owners<super::syslog::run::Run>),
    /// Read a freshly spawned process's pipes. `run` is `None` for a hook's output.
    Attach {
        /// Program name.
        program: String,
        /// The run, for drain tracking (crash reports wait for it).
        run: Option<u64>,
        /// Read end of its stdout pipe.
        stdout: OwnedFd,
        /// Read end of its stderr pipe (`None`: its stderr is its stdout's pipe).
        stderr: Option<OwnedFd>,
        /// What its output is watched for.
        taps: Taps,
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
        /// Then stream the new lines here (`logs -f`) until the receiver is dropped, from the
        /// same turn of the log thread as the tail: a line written between the tail and a
        /// follow asked for apart was lost. A follower that cannot keep up misses lines.
        follow: Option<tokio::sync::mpsc::Sender<Vec<u8>>>,
    },
    /// Append a record to the run ledger (one `write`; nothing when the ledger is off).
    Ledger(Box<crate::model::ledger::Record>),
    /// Drain every pipe (bounded), flush, and stop.
    Shutdown,
}

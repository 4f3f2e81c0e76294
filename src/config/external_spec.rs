//! The settings of an `[external.NAME]` table, as the loader leaves them (read in
//! `external_table.rs`): how it is checked, how often, and what its start may take.

use std::time::Duration;

/// A host (a name, resolved at each check, or an IP literal) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    /// As written: `config`, `10.0.0.5`, `::1` (without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// How an external is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExternalCheck {
    /// A TCP connect.
    Tcp(HostPort),
    /// An HTTP GET answered 2xx or 3xx.
    Http {
        /// The URL as written.
        url: String,
        /// Where to connect.
        at: HostPort,
        /// Path and query.
        path: String,
    },
    /// A command that exits 0.
    Exec(Vec<String>),
    /// A program of another ctrlinit, through its probe endpoint (`[init] http`).
    Ctrlinit {
        /// The peer's endpoint.
        at: HostPort,
        /// The peer's program.
        program: String,
    },
}

impl ExternalCheck {
    /// The kind and target, as results and `status` say them: `tcp config:8082`.
    pub fn describe(&self) -> String {
        match self {
            ExternalCheck::Tcp(at) => format!("tcp {at}"),
            ExternalCheck::Http { url, .. } => format!("http {url}"),
            ExternalCheck::Exec(argv) => format!("exec {}", argv.join(" ")),
            ExternalCheck::Ctrlinit { at, program } => format!("ctrlinit {at} program {program}"),
        }
    }

    /// The host a check resolves, if any.
    pub fn host(&self) -> Option<&HostPort> {
        match self {
            ExternalCheck::Tcp(at)
            | ExternalCheck::Http { at, .. }
            | ExternalCheck::Ctrlinit { at, .. } => Some(at),
            ExternalCheck::Exec(_) => None,
        }
    }
}

/// What happens when an external is not ready within `start_timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// Its dependents keep waiting (the timeout is only said in the log).
    Wait,
    /// The container gives up: the way down, then exit with `[init] exit_code` (75 by
    /// default, EX_TEMPFAIL: the engine starts the container again, as after a spent budget).
    Exit,
}

/// One `[external.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalSpec {
    /// Its name, as `depends_on` writes it.
    pub name: String,
    /// How it is checked.
    pub check: ExternalCheck,
    /// Time between the end of one check and the start of the next.
    pub interval: Duration,
    /// How long one check may take.
    pub timeout: Duration,
    /// Failing checks in a row that make a ready external down.
    pub failures: u32,
    /// Passing checks in a row that make it ready.
    pub successes: u32,
    /// How long it may take to be ready the first time.
    pub start_timeout: Option<Duration>,
    /// What happens then.
    pub on_timeout: OnTimeout,
    /// `file:line`.
    pub defined_at: String,
}

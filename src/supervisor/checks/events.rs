//! What check tasks tell the owner loop: readiness results, liveness results, and the
//! schedule of exec checks (the owner loop spawns those, as it spawns every process).

use super::health::CheckResult;
use crate::model::ProgramId;

/// What a check's task tells the owner loop.
#[derive(Debug)]
pub(crate) enum ProbeEvent {
    /// A `tcp` or `file` check passed.
    Passed {
        /// The program.
        id: ProgramId,
        /// The run it checked.
        run: u64,
    },
    /// A forking daemon's pid file, written by this run, names `pid`.
    PidFile {
        /// The program.
        id: ProgramId,
        /// The run whose launcher forked.
        run: u64,
        /// The pid the file holds.
        pid: i32,
    },
    /// Time to run an `exec` check again.
    RetryDue {
        /// The program.
        id: ProgramId,
        /// The run it checks.
        run: u64,
    },
    /// A liveness check ended (see `liveness`).
    Checked {
        /// The program.
        id: ProgramId,
        /// The run it checked.
        run: u64,
        /// What it found.
        result: CheckResult,
    },
    /// Time for an `exec` liveness check.
    ExecCheckDue {
        /// The program.
        id: ProgramId,
        /// The run it checks.
        run: u64,
    },
    /// An adopted main process (not ctrlinit's child) exited.
    AdoptedExited {
        /// The program.
        id: ProgramId,
        /// The process.
        pid: i32,
    },
    /// A check of an external dependency ended.
    External {
        /// The external.
        name: String,
        /// Whether it passed.
        passed: bool,
        /// What it found.
        output: String,
        /// A peer ctrlinit's boot id and program run.
        peer_run: Option<String>,
    },
    /// Time for an external's `exec` check; `done` is dropped once it ended.
    ExternalExecDue {
        /// The external.
        name: String,
        /// Dropped when the check's process was reaped (or could not start).
        done: tokio::sync::oneshot::Sender<()>,
    },
    /// An external's `exec` check outlived its timeout.
    ExternalExecOverdue {
        /// The check's process.
        pid: i32,
    },
    /// An `exec` liveness check outlived its timeout.
    ExecCheckOverdue {
        /// The program.
        id: ProgramId,
        /// The check's process.
        pid: i32,
    },
}

impl ProbeEvent {
    /// Whether an external dependency's check sent it.
    pub(crate) fn is_external(&self) -> bool {
        matches!(
            self,
            ProbeEvent::External { .. }
                | ProbeEvent::ExternalExecDue { .. }
                | ProbeEvent::ExternalExecOverdue { .. }
        )
    }

    /// Whether a liveness check (not a readiness check) sent it.
    pub(crate) fn is_liveness(&self) -> bool {
        matches!(
            self,
            ProbeEvent::Checked { .. }
                | ProbeEvent::ExecCheckDue { .. }
                | ProbeEvent::ExecCheckOverdue { .. }
        )
    }
}

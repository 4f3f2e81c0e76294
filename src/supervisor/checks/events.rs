//! What check tasks tell the owner loop: readiness results, liveness results, and the
//! schedule of exec checks (the owner loop spawns those, as it spawns every process).

use std::sync::{Mutex, MutexGuard};

use tokio::sync::mpsc::UnboundedSender;

use crate::model::ProgramId;
use crate::supervisor::core::health::CheckResult;

/// An external check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    /// Whether it passed; `None` when the other side only said it is busy (no verdict).
    pub(crate) passed: Option<bool>,
    /// What it found.
    pub(crate) output: String,
    /// A peer ctrlinit's boot id and program run.
    pub(crate) peer_run: Option<String>,
}

impl Report {
    /// A failed check, and why.
    pub(crate) fn failed(why: String) -> Report {
        Report {
            passed: Some(false),
            output: why,
            peer_run: None,
        }
    }
}

/// Where one external's check task leaves its results for the owner loop: the latest only, so
/// however fast a check reports (a peer's stream), the loop's queue holds at most one event per
/// external, and a slow turn of the loop sees the newest result, not a backlog.
#[derive(Debug)]
pub(crate) struct Mailbox {
    /// The external.
    pub(crate) name: String,
    latest: Mutex<Option<Report>>,
    tx: UnboundedSender<ProbeEvent>,
}

impl Mailbox {
    /// The mailbox of external `name`, telling the loop on `tx`.
    pub(crate) fn new(name: String, tx: UnboundedSender<ProbeEvent>) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Mailbox {
            name,
            latest: Mutex::new(None),
            tx,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Option<Report>> {
        self.latest.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leaves `report` in place of any the loop has not taken yet (and tells the loop when
    /// there was none); false when the loop is gone.
    pub(crate) fn post(self: &std::sync::Arc<Self>, report: Report) -> bool {
        let was_empty = self.lock().replace(report).is_none();
        if !was_empty {
            return !self.tx.is_closed();
        }
        let event = ProbeEvent::External {
            mailbox: std::sync::Arc::clone(self),
        };
        self.tx.send(event).is_ok()
    }

    /// Tells the loop something else (an `exec` check due); false when it is gone.
    pub(crate) fn tell(&self, event: ProbeEvent) -> bool {
        self.tx.send(event).is_ok()
    }

    /// The result waiting, taken by the loop.
    pub(crate) fn take(&self) -> Option<Report> {
        self.lock().take()
    }
}

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
    /// A check of an external dependency ended: its result waits in `mailbox` (the latest
    /// only: one such event per external at most is queued).
    External {
        /// The external's mailbox.
        mailbox: std::sync::Arc<Mailbox>,
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

//! Readiness checks, every kind behind one type: [`Probes`] starts a run's check, ends the checks
//! of runs that moved on, and turns what checks report (a task's result, an exec check's exit)
//! into the core's [`Input::Ready`].
//!
//! `tcp` and `file` checks are tasks on the owner loop's runtime, tried every `interval` until
//! they pass. `exec` checks are processes: spawned by the [`Launcher`] and reaped by the owner
//! loop's one reaper, which hands their pids here ([`Probes::reaped`]). Checks run only while a
//! run is `starting`, so an idle supervisor has none waking it. They are keyed by program id,
//! so a reload of other programs leaves them running.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tracing::debug;

use super::core::{Core, Input};
use super::launch::Launcher;
use super::program::Phase;
use crate::config::{ProgramSpec, ReadyProbe};
use crate::model::{Exit, ProgramId};
use crate::sys::init::signal_group;

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
    /// Time to run an `exec` check again.
    RetryDue {
        /// The program.
        id: ProgramId,
        /// The run it checks.
        run: u64,
    },
}

/// One run's check in flight.
struct Probe {
    run: u64,
    task: Option<JoinHandle<()>>,
    exec_pid: Option<i32>,
}

impl Probe {
    fn cancel(self) {
        if let Some(task) = self.task {
            task.abort();
        }
        if let Some(pid) = self.exec_pid {
            signal_group(pid, Signal::SIGKILL);
        }
    }
}

/// Every readiness check in flight, at most one per program.
pub(crate) struct Probes {
    checks: HashMap<ProgramId, Probe>,
    tx: UnboundedSender<ProbeEvent>,
}

impl Probes {
    /// No checks yet; tasks report on `tx`.
    pub(crate) fn new(tx: UnboundedSender<ProbeEvent>) -> Self {
        Probes {
            checks: HashMap::new(),
            tx,
        }
    }

    /// Starts the check of run `run` of `spec` (a check of an older run of it ends).
    pub(crate) fn start(
        &mut self,
        id: ProgramId,
        run: u64,
        spec: &ProgramSpec,
        launcher: &Launcher,
    ) {
        let Some(check) = &spec.ready else { return };
        if let Some(old) = self.checks.remove(&id) {
            old.cancel();
        }
        let task = match &check.probe {
            ReadyProbe::Tcp(addr) => Some(tokio::spawn(tcp(
                *addr,
                check.interval,
                id,
                run,
                self.tx.clone(),
            ))),
            ReadyProbe::File(path) => Some(tokio::spawn(file(
                path.clone(),
                check.interval,
                id,
                run,
                self.tx.clone(),
            ))),
            ReadyProbe::Exec(_) => None,
        };
        self.checks.insert(
            id,
            Probe {
                run,
                task,
                exec_pid: None,
            },
        );
        if matches!(check.probe, ReadyProbe::Exec(_)) {
            self.spawn_exec(id, run, spec, launcher);
        }
    }

    fn spawn_exec(&mut self, id: ProgramId, run: u64, spec: &ProgramSpec, launcher: &Launcher) {
        let Some(check) = &spec.ready else { return };
        let ReadyProbe::Exec(argv) = &check.probe else {
            return;
        };
        let pid = match launcher.check(spec, argv) {
            Ok(pid) => Some(pid),
            Err(e) => {
                debug!(
                    "{}: readiness check failed to start: {}",
                    spec.name, e.message
                );
                None
            }
        };
        // One that could not start is tried again after the interval, like one that failed.
        let task = pid
            .is_none()
            .then(|| tokio::spawn(retry_later(check.interval, id, run, self.tx.clone())));
        self.checks.insert(
            id,
            Probe {
                run,
                task,
                exec_pid: pid,
            },
        );
    }

    /// A check task's report: `Ready` when it passed for the run still being checked.
    pub(crate) fn event(
        &mut self,
        event: ProbeEvent,
        core: &Core,
        launcher: &Launcher,
    ) -> Option<Input> {
        match event {
            ProbeEvent::Passed { id, run } => {
                self.checks.get(&id).filter(|p| p.run == run)?;
                self.checks.remove(&id);
                Some(Input::Ready { id, run })
            }
            ProbeEvent::RetryDue { id, run } => {
                self.checks.get(&id).filter(|p| p.run == run)?;
                let spec = std::sync::Arc::clone(&core.program(id)?.spec);
                self.spawn_exec(id, run, &spec, launcher);
                None
            }
        }
    }

    /// Whether `pid` is an exec check's process.
    pub(crate) fn owns(&self, pid: i32) -> bool {
        self.checks.values().any(|p| p.exec_pid == Some(pid))
    }

    /// An exec check's process ended: `Ready` when it exited 0, else its next try is scheduled.
    pub(crate) fn reaped(&mut self, pid: i32, exit: Exit, core: &Core) -> Option<Input> {
        let (&id, probe) = self
            .checks
            .iter_mut()
            .find(|(_, p)| p.exec_pid == Some(pid))?;
        probe.exec_pid = None;
        let run = probe.run;
        if exit == Exit::Code(0) {
            self.checks.remove(&id);
            return Some(Input::Ready { id, run });
        }
        let interval = core.program(id)?.spec.ready.as_ref()?.interval;
        probe.task = Some(tokio::spawn(retry_later(
            interval,
            id,
            run,
            self.tx.clone(),
        )));
        None
    }

    /// Ends the checks of runs that are no longer starting (or of programs gone).
    pub(crate) fn cancel_stale(&mut self, core: &Core) {
        let stale: Vec<ProgramId> = self
            .checks
            .iter()
            .filter(|(id, probe)| {
                !core.program(**id).is_some_and(|p| {
                    matches!(p.phase, Phase::Starting { .. }) && p.run == probe.run
                })
            })
            .map(|(&id, _)| id)
            .collect();
        for id in stale {
            if let Some(probe) = self.checks.remove(&id) {
                probe.cancel();
            }
        }
    }
}

/// Tries a TCP connect every `interval` until one succeeds, then reports the run ready.
async fn tcp(
    addr: SocketAddr,
    interval: Duration,
    id: ProgramId,
    run: u64,
    tx: UnboundedSender<ProbeEvent>,
) {
    loop {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            let _ = tx.send(ProbeEvent::Passed { id, run });
            return;
        }
        tokio::time::sleep(interval).await;
    }
}

/// Checks for `path` every `interval` until it exists, then reports the run ready.
async fn file(
    path: PathBuf,
    interval: Duration,
    id: ProgramId,
    run: u64,
    tx: UnboundedSender<ProbeEvent>,
) {
    loop {
        if path.exists() {
            let _ = tx.send(ProbeEvent::Passed { id, run });
            return;
        }
        tokio::time::sleep(interval).await;
    }
}

/// Asks the owner loop to run an `exec` check again after `interval`.
async fn retry_later(interval: Duration, id: ProgramId, run: u64, tx: UnboundedSender<ProbeEvent>) {
    tokio::time::sleep(interval).await;
    let _ = tx.send(ProbeEvent::RetryDue { id, run });
}

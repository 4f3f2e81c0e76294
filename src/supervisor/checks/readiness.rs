//! Readiness checks, every kind behind one type: [`Probes`] starts a run's check, ends the checks
//! of runs that moved on, and turns what checks report (a task's result, an exec check's exit)
//! into the core's [`Input::Ready`].
//!
//! `tcp`, `http` and `file` checks are tasks on the owner loop's runtime, tried every
//! `interval` until they pass (a file counts only if this run wrote it); an `uptime` check is
//! a task that sleeps that long, then passes. `exec` checks are
//! processes: spawned by the [`Launcher`] and reaped by the owner loop's one reaper, which hands
//! their pids here ([`Probes::reaped`]). A notification fd is a task reading its pipe until the
//! newline. The program itself tells the other kinds: `notify` through the sd_notify socket
//! (the runner's), `log` through the log thread's line watch (see `wiring`). Checks run only
//! while a run is `starting`, so an idle supervisor has none waking it. They are keyed by
//! program id, so a reload of other programs leaves them running.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

pub(crate) use super::events::ProbeEvent;
use super::in_process;
use crate::config::{HttpTarget, ProgramSpec, ReadyProbe};
use crate::model::{Exit, ProgramId};
use crate::supervisor::core::program::Phase;
use crate::supervisor::core::{Core, Input};
use crate::supervisor::processes::launch::Launcher;
use crate::supervisor::processes::wiring::Evidence;
use crate::sys::init::signal_group;
use crate::sys::stamps::Baseline;
use std::os::fd::OwnedFd;

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

    /// Starts the check of run `run` of `spec` (a check of an older run of it ends), with the
    /// evidence the run was spawned with.
    pub(crate) fn start(
        &mut self,
        id: ProgramId,
        run: u64,
        spec: &ProgramSpec,
        launcher: &Launcher,
        evidence: &mut Evidence,
    ) {
        let Some(check) = &spec.ready else { return };
        if let Some(old) = self.checks.remove(&id) {
            old.cancel();
        }
        let (interval, tx) = (check.interval, self.tx.clone());
        let task = match &check.probe {
            ReadyProbe::Tcp(addr) => Some(tokio::spawn(tcp(*addr, interval, id, run, tx))),
            ReadyProbe::Http(target) => {
                Some(tokio::spawn(http(target.clone(), interval, id, run, tx)))
            }
            ReadyProbe::File(path) => {
                let baseline = evidence.ready_file.take();
                Some(tokio::spawn(file(
                    path.clone(),
                    baseline,
                    interval,
                    id,
                    run,
                    tx,
                )))
            }
            ReadyProbe::Fd(_) => evidence
                .notify_fd
                .take()
                .map(|fd| tokio::spawn(notification_fd(fd, id, run, tx))),
            ReadyProbe::Uptime(d) => Some(tokio::spawn(uptime(*d, id, run, tx))),
            ReadyProbe::Exec(_) | ReadyProbe::Notify | ReadyProbe::Log(_) => None,
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

    /// Waits for a forking daemon's pid file (written by run `run`), then reports the pid it
    /// names; the runner checks that pid belongs to the run.
    pub(crate) fn await_pid_file(
        &mut self,
        id: ProgramId,
        run: u64,
        spec: &ProgramSpec,
        evidence: &mut Evidence,
    ) {
        let Some(path) = spec.pidfile.clone() else {
            return;
        };
        if let Some(old) = self.checks.remove(&id) {
            old.cancel();
        }
        let interval = spec
            .ready
            .as_ref()
            .map_or(PID_FILE_INTERVAL, |r| r.interval.min(PID_FILE_INTERVAL));
        let baseline = evidence.pid_file.take();
        let owners: Vec<u32> = spec.run_as.uid.into_iter().collect();
        let file = PidFile {
            path,
            baseline,
            owners,
        };
        let task = tokio::spawn(pid_file(file, interval, id, run, self.tx.clone()));
        self.checks.insert(
            id,
            Probe {
                run,
                task: Some(task),
                exec_pid: None,
            },
        );
    }

    fn spawn_exec(&mut self, id: ProgramId, run: u64, spec: &ProgramSpec, launcher: &Launcher) {
        let Some(check) = &spec.ready else { return };
        let ReadyProbe::Exec(argv) = &check.probe else {
            return;
        };
        let pid = match launcher.check(spec, argv, (id, run)) {
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
            ProbeEvent::PidFile { id, run, .. } => {
                // Its wait is over either way; the runner judges the pid.
                self.checks.get(&id).filter(|p| p.run == run)?;
                self.checks.remove(&id);
                None
            }
            ProbeEvent::RetryDue { id, run } => {
                self.checks.get(&id).filter(|p| p.run == run)?;
                let spec = std::sync::Arc::clone(&core.program(id)?.spec);
                self.spawn_exec(id, run, &spec, launcher);
                None
            }
            _ => None,
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
                    matches!(p.phase, Phase::Starting { .. } | Phase::Forked { .. })
                        && p.run == probe.run
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

/// Tries a GET every `interval` until one answers 2xx or 3xx, then reports the run ready.
async fn http(
    target: HttpTarget,
    interval: Duration,
    id: ProgramId,
    run: u64,
    tx: UnboundedSender<ProbeEvent>,
) {
    // Each try may take as long as the pause between tries, and at least a second.
    let timeout = interval.max(Duration::from_secs(1));
    loop {
        if in_process::http(&target, timeout).await.passed {
            let _ = tx.send(ProbeEvent::Passed { id, run });
            return;
        }
        tokio::time::sleep(interval).await;
    }
}

/// Checks every `interval` for `path` written by this run, then reports the run ready.
async fn file(
    path: PathBuf,
    baseline: Option<Baseline>,
    interval: Duration,
    id: ProgramId,
    run: u64,
    tx: UnboundedSender<ProbeEvent>,
) {
    loop {
        if in_process::fresh_file(&path, baseline.as_ref()) {
            let _ = tx.send(ProbeEvent::Passed { id, run });
            return;
        }
        tokio::time::sleep(interval).await;
    }
}

/// Reports the run ready once it has stayed up `d`. A run that ends sooner is no longer
/// `starting`, so `cancel_stale` aborts this task before it reports (and a late report for an
/// old run is dropped by its run number).
async fn uptime(d: Duration, id: ProgramId, run: u64, tx: UnboundedSender<ProbeEvent>) {
    tokio::time::sleep(d).await;
    let _ = tx.send(ProbeEvent::Passed { id, run });
}

/// How often a pid file is looked for, at most (a daemon's launcher has exited: its pid file
/// is due any moment).
const PID_FILE_INTERVAL: Duration = Duration::from_millis(50);

/// Largest pid file read: a pid and a newline, with room for stray whitespace.
const PID_FILE_CAP: u64 = 64;

/// A forking daemon's pid file, as awaited.
struct PidFile {
    path: PathBuf,
    /// It before the spawn (one an earlier run left never counts).
    baseline: Option<Baseline>,
    /// Who may own it besides root: the program's user.
    owners: Vec<u32>,
}

/// Checks every `interval` for the pid file written by this run holding a pid, then reports it.
/// A file ctrlinit refuses to read (a link, not a regular file, a stranger's) is said so once,
/// and awaited still: the daemon may yet write the real one.
async fn pid_file(
    file: PidFile,
    interval: Duration,
    id: ProgramId,
    run: u64,
    tx: UnboundedSender<ProbeEvent>,
) {
    let mut told = None;
    loop {
        if in_process::fresh_file(&file.path, file.baseline.as_ref()) {
            match read_pid(&file.path, &file.owners) {
                Ok(Some(pid)) => {
                    let _ = tx.send(ProbeEvent::PidFile { id, run, pid });
                    return;
                }
                Ok(None) => {}
                Err(e) => {
                    let why = e.to_string();
                    if told.as_ref() != Some(&why) {
                        warn!(
                            "the pid file {} is refused: {why}; still waiting for a pid file ctrlinit can trust",
                            file.path.display()
                        );
                        told = Some(why);
                    }
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}

/// The pid in a pid file (a positive number, surrounded by whitespace at most); `Ok(None)`
/// while it is missing, empty or half-written; an error when it is refused (see
/// [`crate::sys::files::read_trusted_regular`]).
fn read_pid(path: &std::path::Path, owners: &[u32]) -> std::io::Result<Option<i32>> {
    let bytes = match crate::sys::files::read_trusted_regular(path, PID_FILE_CAP, owners) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let pid: Option<i32> = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|t| t.trim().parse().ok());
    Ok(pid.filter(|&p| p > 0))
}

/// Reads the notification pipe until a newline (ready) or its end (never ready: the readiness
/// deadline decides). At most a few bytes are read; the pipe is closed once the newline came.
async fn notification_fd(fd: OwnedFd, id: ProgramId, run: u64, tx: UnboundedSender<ProbeEvent>) {
    let Ok(pipe) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else {
        return;
    };
    let mut buf = [0u8; 64];
    loop {
        if pipe.readable().await.is_err() {
            return;
        }
        match pipe.try_read(&mut buf) {
            Ok(0) => return,
            Ok(n) if buf[..n].contains(&b'\n') => {
                let _ = tx.send(ProbeEvent::Passed { id, run });
                return;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// Asks the owner loop to run an `exec` check again after `interval`.
async fn retry_later(interval: Duration, id: ProgramId, run: u64, tx: UnboundedSender<ProbeEvent>) {
    tokio::time::sleep(interval).await;
    let _ = tx.send(ProbeEvent::RetryDue { id, run });
}

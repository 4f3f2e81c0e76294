//! Liveness checks of running programs, every kind behind one type: [`HealthChecks`] starts a
//! run's checks when it becomes ready, ends them when it stops running, and turns what they find
//! into the core's [`Input::Checked`].
//!
//! `http`, `tcp`, `heartbeat` and `silence` run inside ctrlinit: one task per program on the
//! owner loop's runtime, sleeping `interval` between attempts (an idle program costs one timer
//! wake-up per check). `exec` checks are processes, spawned by the [`Launcher`] and reaped by
//! the owner loop's one reaper; a check that outlives its `timeout` has its process group
//! killed, and fails.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::Signal;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::events::ProbeEvent;
use super::http_get::fmt_secs;
use super::in_process;
use crate::config::{HealthProbe, HealthSettings, ProgramSpec};
use crate::model::{Exit, ProgramId};
use crate::supervisor::core::health::CheckResult;
use crate::supervisor::core::program::Phase;
use crate::supervisor::core::{Core, Input};
use crate::supervisor::processes::launch::Launcher;
use crate::supervisor::processes::wiring::Evidence;
use crate::sys::init::signal_group;
use crate::sys::stamps::Baseline;

/// Most of an exec check's output shown (`status --json`, the log, the termination message).
pub(crate) const OUTPUT_SHOWN: usize = 512;

/// An exec check's process in flight.
struct ExecInFlight {
    pid: i32,
    output: Arc<CheckOutput>,
    /// Reads the output while the check runs.
    drain: JoinHandle<()>,
    started: Instant,
    deadline: JoinHandle<()>,
    timed_out: bool,
}

/// One run's liveness checks.
struct Watch {
    run: u64,
    /// The check loop (in-process kinds) or the wait before the next exec check.
    task: Option<JoinHandle<()>>,
    exec: Option<ExecInFlight>,
}

impl Watch {
    fn cancel(self) {
        if let Some(t) = self.task {
            t.abort();
        }
        if let Some(e) = self.exec {
            e.deadline.abort();
            e.drain.abort();
            signal_group(e.pid, Signal::SIGKILL);
        }
    }
}

/// Every running program's liveness checks, at most one watch per program.
pub(crate) struct HealthChecks {
    watches: HashMap<ProgramId, Watch>,
    tx: UnboundedSender<ProbeEvent>,
}

impl HealthChecks {
    /// No checks yet; tasks report on `tx`.
    pub(crate) fn new(tx: UnboundedSender<ProbeEvent>) -> Self {
        HealthChecks {
            watches: HashMap::new(),
            tx,
        }
    }

    /// Starts the checks of run `run` of `spec`, which just became ready.
    pub(crate) fn start(
        &mut self,
        id: ProgramId,
        run: u64,
        spec: &ProgramSpec,
        evidence: &mut Evidence,
    ) {
        let Some(settings) = spec.health.clone() else {
            return;
        };
        let Some(check) = settings.check.clone() else {
            return;
        };
        if let Some(old) = self.watches.remove(&id) {
            old.cancel();
        }
        let tx = self.tx.clone();
        let task = match check {
            HealthProbe::Exec(_) => tokio::spawn(exec_due(settings.interval, id, run, tx)),
            probe => {
                let taps = Taps {
                    heartbeat: evidence.heartbeat.take(),
                    activity: evidence.activity.clone(),
                    ready_ms: in_process::epoch_ms(),
                };
                tokio::spawn(in_process(probe, settings, taps, id, run, tx))
            }
        };
        self.watches.insert(
            id,
            Watch {
                run,
                task: Some(task),
                exec: None,
            },
        );
    }

    /// A check task's report, or an exec check's schedule: `Checked` for the run still watched.
    pub(crate) fn event(
        &mut self,
        event: ProbeEvent,
        core: &Core,
        launcher: &Launcher,
    ) -> Option<Input> {
        match event {
            ProbeEvent::Checked { id, run, result } => {
                self.watches.get(&id).filter(|w| w.run == run)?;
                Some(Input::Checked { id, run, result })
            }
            ProbeEvent::ExecCheckDue { id, run } => {
                self.watches.get(&id).filter(|w| w.run == run)?;
                let spec = Arc::clone(&core.program(id)?.spec);
                self.spawn_exec(id, run, &spec, launcher)
            }
            ProbeEvent::ExecCheckOverdue { id, pid } => {
                let watch = self.watches.get_mut(&id)?;
                let exec = watch.exec.as_mut().filter(|e| e.pid == pid)?;
                exec.timed_out = true;
                signal_group(pid, Signal::SIGKILL);
                None
            }
            _ => None,
        }
    }

    fn spawn_exec(
        &mut self,
        id: ProgramId,
        run: u64,
        spec: &ProgramSpec,
        launcher: &Launcher,
    ) -> Option<Input> {
        let settings = spec.health.as_ref()?;
        let Some(HealthProbe::Exec(argv)) = &settings.check else {
            return None;
        };
        match launcher.captured_check(spec, argv, (id, run)) {
            Ok((pid, fd)) => {
                let output = Arc::new(CheckOutput {
                    fd,
                    kept: Mutex::new(Vec::with_capacity(OUTPUT_SHOWN)),
                });
                let drain = tokio::spawn(drain(Arc::clone(&output)));
                let tx = self.tx.clone();
                let timeout = settings.timeout;
                let deadline = tokio::spawn(async move {
                    tokio::time::sleep(timeout).await;
                    let _ = tx.send(ProbeEvent::ExecCheckOverdue { id, pid });
                });
                let watch = self.watches.get_mut(&id)?;
                watch.task = None;
                watch.exec = Some(ExecInFlight {
                    pid,
                    output,
                    drain,
                    started: Instant::now(),
                    deadline,
                    timed_out: false,
                });
                None
            }
            Err(e) => {
                // Could not start: a failed check, tried again after the interval.
                self.schedule_next(id, settings.interval);
                Some(Input::Checked {
                    id,
                    run,
                    result: CheckResult {
                        passed: false,
                        output: truncate(&e.message),
                        took: Duration::ZERO,
                    },
                })
            }
        }
    }

    fn schedule_next(&mut self, id: ProgramId, after: Duration) {
        if let Some(w) = self.watches.get_mut(&id) {
            w.task = Some(tokio::spawn(exec_due(after, id, w.run, self.tx.clone())));
        }
    }

    /// Whether `pid` is an exec check's process.
    pub(crate) fn owns(&self, pid: i32) -> bool {
        self.watches
            .values()
            .any(|w| w.exec.as_ref().is_some_and(|e| e.pid == pid))
    }

    /// An exec check's process ended: its result, and the next check scheduled.
    pub(crate) fn reaped(&mut self, pid: i32, exit: Exit, core: &Core) -> Option<Input> {
        let (&id, watch) = self
            .watches
            .iter_mut()
            .find(|(_, w)| w.exec.as_ref().is_some_and(|e| e.pid == pid))?;
        let exec = watch.exec.take()?;
        exec.deadline.abort();
        exec.drain.abort();
        // What it wrote before it ended and the drain has not read yet.
        exec.output.read_available();
        let run = watch.run;
        let settings = core.program(id)?.spec.health.clone()?;
        let result = exec_result(&exec, exit, &settings);
        // The next check starts `interval` after this one started, as in-process checks do.
        self.schedule_next(id, settings.interval.saturating_sub(exec.started.elapsed()));
        Some(Input::Checked { id, run, result })
    }

    /// Ends the checks of runs that no longer run (or of programs gone).
    pub(crate) fn cancel_stale(&mut self, core: &Core) {
        let stale: Vec<ProgramId> = self
            .watches
            .iter()
            .filter(|(id, w)| {
                !core
                    .program(**id)
                    .is_some_and(|p| matches!(p.phase, Phase::Running { .. }) && p.run == w.run)
            })
            .map(|(&id, _)| id)
            .collect();
        for id in stale {
            if let Some(w) = self.watches.remove(&id) {
                w.cancel();
            }
        }
    }
}

/// What an in-process check reads besides its settings.
struct Taps {
    heartbeat: Option<Baseline>,
    activity: Option<Arc<AtomicU64>>,
    ready_ms: u64,
}

/// Checks every `interval`, reporting each result. Checks start `interval` apart whatever they
/// take (a check that times out does not push the next one back), so a hang is seen within
/// `interval × failures + timeout`.
async fn in_process(
    probe: HealthProbe,
    settings: HealthSettings,
    taps: Taps,
    id: ProgramId,
    run: u64,
    tx: UnboundedSender<ProbeEvent>,
) {
    let first = tokio::time::Instant::now() + settings.interval;
    let mut ticks = tokio::time::interval_at(first, settings.interval);
    // A check that took longer than the interval is followed by the next at once, then the
    // rhythm resumes from there (no burst of missed checks).
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let result = match &probe {
            HealthProbe::Tcp(addr) => in_process::tcp(*addr, settings.timeout).await,
            HealthProbe::Http(target) => in_process::http(target, settings.timeout).await,
            HealthProbe::Heartbeat { path, max_age } => {
                in_process::heartbeat(path, *max_age, taps.heartbeat.as_ref())
            }
            HealthProbe::Silence(limit) => match &taps.activity {
                Some(a) => in_process::silence(a, taps.ready_ms, *limit),
                None => return,
            },
            HealthProbe::Exec(_) => return,
        };
        if tx.send(ProbeEvent::Checked { id, run, result }).is_err() {
            return;
        }
    }
}

/// Asks for the next exec check after `after`.
async fn exec_due(after: Duration, id: ProgramId, run: u64, tx: UnboundedSender<ProbeEvent>) {
    tokio::time::sleep(after).await;
    let _ = tx.send(ProbeEvent::ExecCheckDue { id, run });
}

/// An exec check's verdict: exit 0 in time passes; its output (what the pipe holds) is kept.
fn exec_result(exec: &ExecInFlight, exit: Exit, settings: &HealthSettings) -> CheckResult {
    let kept = exec.output.kept.lock().unwrap_or_else(|e| e.into_inner());
    let said = String::from_utf8_lossy(&kept).trim().to_string();
    let (passed, output) = if exec.timed_out {
        (
            false,
            format!("timed out after {}", fmt_secs(settings.timeout)),
        )
    } else if exit == Exit::Code(0) {
        (true, said)
    } else if said.is_empty() {
        (false, exit.to_string())
    } else {
        (false, format!("{exit}: {said}"))
    };
    CheckResult {
        passed,
        output: truncate(&output),
        took: exec.started.elapsed(),
    }
}

/// An exec check's output pipe (ctrlinit's end, non-blocking): its first [`OUTPUT_SHOWN`] bytes
/// are kept and the rest read and dropped as they come, so a check that prints more than a pipe
/// holds is never blocked writing (and timed out for it). The lock is only between the check's
/// drain task and the owner loop, which both run on the loop's one thread.
struct CheckOutput {
    fd: OwnedFd,
    kept: Mutex<Vec<u8>>,
}

impl CheckOutput {
    /// Reads what the pipe holds now; false once it has ended (or failed).
    fn read_available(&self) -> bool {
        let mut buf = [0u8; 16 << 10];
        loop {
            match nix::unistd::read(&self.fd, &mut buf) {
                Ok(0) => return false,
                Ok(n) => {
                    let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
                    let room = OUTPUT_SHOWN.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return true,
                Err(_) => return false,
            }
        }
    }
}

impl AsRawFd for CheckOutput {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Reads an exec check's output as it is written, until the pipe ends.
async fn drain(output: Arc<CheckOutput>) {
    // SAFETY: the Arc keeps the descriptor open, and the same, for as long as the AsyncFd holds
    // it; the AsyncFd deregisters it when dropped, before the Arc can close it.
    let Ok(fd) = (unsafe { AsyncFd::register_with_interest(output, Interest::READABLE) }) else {
        return;
    };
    loop {
        let Ok(mut ready) = fd.readable().await else {
            return;
        };
        if !fd.get_ref().read_available() {
            return;
        }
        ready.clear_ready();
    }
}

/// `s`, cut at [`OUTPUT_SHOWN`] bytes on a character boundary, on one line.
fn truncate(s: &str) -> String {
    let mut end = s.len().min(OUTPUT_SHOWN);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].replace(['\n', '\r'], " ")
}

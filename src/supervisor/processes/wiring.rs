//! What a run is started with beyond its spec, made just before its spawn: the sd_notify
//! variables, the notification pipe, the taps on its output, and the evidence its checks will
//! judge it by (what its ready and heartbeat files were before it existed, so a file an earlier
//! run left never counts).

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tokio::sync::mpsc::UnboundedSender;

use crate::config::{HealthProbe, ProgramSpec, ReadyProbe};
use crate::logs::{LineWatch, Taps};
use crate::model::ProgramId;
use crate::supervisor::checks::events::ProbeEvent;
use crate::sys::stamps::Baseline;

/// What goes into the spawn.
#[derive(Default)]
pub(crate) struct Wiring {
    /// `NOTIFY_SOCKET`, `WATCHDOG_USEC`.
    pub(crate) env: Vec<(&'static str, String)>,
    /// The notification pipe's write end, at its number.
    pub(crate) fds: Vec<(i32, OwnedFd)>,
    /// What the log thread watches its output for.
    pub(crate) taps: Taps,
    /// `cgroup.procs` of the cgroup it joins (see `tracking`).
    pub(crate) cgroup: Option<OwnedFd>,
}

/// What the run's checks judge it by, kept by the runner until they start.
#[derive(Debug, Default)]
pub(crate) struct Evidence {
    /// The ready file before the spawn.
    pub(crate) ready_file: Option<Baseline>,
    /// The heartbeat file before the spawn.
    pub(crate) heartbeat: Option<Baseline>,
    /// The time of its last output line (ms since the epoch), for a `silence` check.
    pub(crate) activity: Option<Arc<AtomicU64>>,
    /// The notification pipe's read end, for `ready = { fd = N }`.
    pub(crate) notify_fd: Option<OwnedFd>,
    /// A forking daemon's pid file before the spawn (one an earlier run left never counts).
    pub(crate) pid_file: Option<Baseline>,
}

/// Prepares run `run` of `spec` (program `id`); `notify_socket` is the sd_notify socket's
/// path, `checks::readiness` where a log-line match is reported.
pub(crate) fn prepare(
    spec: &ProgramSpec,
    id: ProgramId,
    run: u64,
    notify_socket: &Path,
    probes: &UnboundedSender<ProbeEvent>,
) -> std::io::Result<(Wiring, Evidence)> {
    let mut wiring = Wiring::default();
    let mut evidence = Evidence::default();
    if spec.speaks_notify() {
        wiring
            .env
            .push(("NOTIFY_SOCKET", notify_socket.display().to_string()));
    }
    if let Some(every) = spec.health.as_ref().and_then(|h| h.watchdog) {
        wiring
            .env
            .push(("WATCHDOG_USEC", every.as_micros().to_string()));
    }
    if let Some(path) = &spec.pidfile {
        evidence.pid_file = Some(Baseline::of(path));
    }
    match spec.ready.as_ref().map(|r| &r.probe) {
        Some(ReadyProbe::File(path)) => evidence.ready_file = Some(Baseline::of(path)),
        Some(ReadyProbe::Fd(n)) => {
            let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            wiring.fds.push((*n, write));
            evidence.notify_fd = Some(read);
        }
        Some(ReadyProbe::Log(pattern)) => {
            let tx = probes.clone();
            wiring.taps.watch = Some(LineWatch {
                pattern: pattern.regex.clone(),
                on_match: Box::new(move || {
                    let _ = tx.send(ProbeEvent::Passed { id, run });
                }),
            });
        }
        _ => {}
    }
    match spec.health.as_ref().and_then(|h| h.check.as_ref()) {
        Some(HealthProbe::Heartbeat { path, .. }) => evidence.heartbeat = Some(Baseline::of(path)),
        Some(HealthProbe::Silence(_)) => {
            let clock = Arc::new(AtomicU64::new(0));
            wiring.taps.activity = Some(Arc::clone(&clock));
            evidence.activity = Some(clock);
        }
        _ => {}
    }
    Ok((wiring, evidence))
}

//! What the probe endpoint reports, as plain functions of the core's state: liveness and
//! readiness of the container (`/livez`, `/readyz`) and the numbers behind `/metrics`.

use std::time::Duration;

use super::core::Core;
use super::core::program::{Phase, RestartCauses, Target};
use crate::config::Kind;
use crate::model::State;

/// The container's liveness and readiness, with what stands in the way of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeAnswer {
    /// No program is past its liveness threshold, and the container is not stopping.
    pub live: bool,
    /// Every program meant to be up is up (a service ready, a oneshot completed), and the
    /// container is not stopping.
    pub ready: bool,
    /// Why it is not live.
    pub not_live: Vec<String>,
    /// Why it is not ready.
    pub not_ready: Vec<String>,
}

/// `/livez` and `/readyz` now.
pub fn probe_answer(core: &Core) -> ProbeAnswer {
    let mut not_live = Vec::new();
    let mut not_ready = Vec::new();
    if core.shutting_down() {
        not_live.push("the container is stopping".to_string());
        not_ready.push("the container is stopping".to_string());
    }
    for p in core.programs() {
        if p.is_unhealthy() {
            let last = p
                .health
                .as_ref()
                .and_then(|h| h.last.as_ref())
                .map_or(String::new(), |l| format!(": {}", l.result.output));
            not_live.push(format!("{} is unhealthy{last}", p.name()));
        }
        if p.target != Target::Up {
            continue;
        }
        let up = match p.spec.kind {
            Kind::Service => matches!(p.phase, Phase::Running { .. }),
            Kind::Oneshot => p.phase == Phase::Completed,
        };
        if !up {
            not_ready.push(format!("{} is {}", p.name(), p.state()));
        }
    }
    ProbeAnswer {
        live: not_live.is_empty(),
        ready: not_ready.is_empty(),
        not_live,
        not_ready,
    }
}

/// One program's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramMetrics {
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: State,
    /// Running (a service) or completed (a oneshot).
    pub up: bool,
    /// Restarts by cause.
    pub restarts: RestartCauses,
    /// How its last run ended, as a shell status (128 + signal when killed).
    pub last_exit_status: Option<i32>,
    /// How long its last start took to become ready.
    pub ready_time: Option<Duration>,
    /// Liveness, when it has a health table: checks made, failed, the last one's duration, and
    /// whether it is past its threshold.
    pub health: Option<HealthMetrics>,
    /// Its `[program.NAME.limits]` guards, when it has any: (limit, last figure) for memory in
    /// bytes and for open descriptors (the figure `None` until read in the current run).
    pub limits: Option<LimitMetrics>,
}

/// A guarded program's limits and its current run's last figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitMetrics {
    /// `memory` and the resident memory last read.
    pub memory: Option<(u64, Option<u64>)>,
    /// `fds` and the open descriptors last counted.
    pub fds: Option<(u64, Option<u64>)>,
}

/// A program's liveness numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthMetrics {
    /// Checks made.
    pub checks_total: u64,
    /// Checks failed.
    pub failures_total: u64,
    /// How long the last check took.
    pub last_duration: Option<Duration>,
    /// Whether it passed its threshold.
    pub unhealthy: bool,
}

/// The numbers the owner loop knows (the endpoint adds the process's own).
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Every program.
    pub programs: Vec<ProgramMetrics>,
    /// Orphans reaped that belonged to no program.
    pub orphans_reaped: u64,
    /// sd_notify datagrams from processes that belong to no program speaking it.
    pub notify_foreign: u64,
    /// sd_notify datagrams dropped because their sender's user sent over its rate.
    pub notify_rate_limited: u64,
    /// The network watch (`[init.network]`), when there is one.
    pub network: Option<NetworkMetrics>,
    /// Every external dependency: name, ready, checks made, restarts it caused.
    pub externals: Vec<(String, bool, u64, u64)>,
    /// The syslog intake's counters (`[init] syslog`): name (without `ctrlinit_syslog_` and
    /// `_total`), help, value. Empty when syslog is off.
    pub syslog: Vec<(&'static str, &'static str, u64)>,
}

/// The network watch's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkMetrics {
    /// Interfaces watched.
    pub watched: usize,
    /// Of them, present now.
    pub present: usize,
    /// Whether every watched interface is gone (within the grace or past it).
    pub lost: bool,
    /// Times every watched interface stayed gone past the grace.
    pub losses: u64,
}

/// `/metrics` now.
pub fn metrics(core: &Core, orphans_reaped: u64, notify_foreign: u64) -> Metrics {
    let programs = core
        .programs()
        .iter()
        .map(|p| ProgramMetrics {
            name: p.name().to_string(),
            state: p.state(),
            up: match p.spec.kind {
                Kind::Service => matches!(p.phase, Phase::Running { .. }),
                Kind::Oneshot => p.phase == Phase::Completed,
            },
            restarts: p.causes,
            last_exit_status: p.last_exit.map(|e| e.shell_code()),
            ready_time: p.ready_took,
            health: p.spec.health.as_ref().map(|_| {
                let h = p.health.as_ref();
                HealthMetrics {
                    checks_total: h.map_or(0, |h| h.checks_total),
                    failures_total: h.map_or(0, |h| h.failures_total),
                    last_duration: h.and_then(|h| h.last.as_ref()).map(|l| l.result.took),
                    unhealthy: p.is_unhealthy(),
                }
            }),
            limits: p.spec.limits.as_ref().filter(|l| l.guarded()).map(|l| {
                let m = p.measured.map(|(m, _)| m).unwrap_or_default();
                LimitMetrics {
                    memory: l.memory.map(|n| (n, m.memory_bytes)),
                    fds: l.fds.map(|n| (n, m.fds)),
                }
            }),
        })
        .collect();
    let externals = core
        .externals()
        .iter()
        .map(|e| {
            let ready = e.state == crate::supervisor::ExternalState::Ready;
            (e.spec.name.clone(), ready, e.checks, e.restarts_caused)
        })
        .collect();
    Metrics {
        programs,
        orphans_reaped,
        notify_foreign,
        network: None,
        externals,
        notify_rate_limited: 0,
        syslog: Vec::new(),
    }
}

//! What the run ledger hears of the supervisor: facts read off the notices the owner loop
//! already announces (state changes, the start of a shutdown), with the program's state at that
//! moment for the figures (exit, restarts by cause, backoff, budget). The loop only builds a
//! record and queues it for the log thread, which writes it (`logs::ledger`): the ledger never
//! blocks the loop.
//!
//! Two facts are not in the notices and are told here by the runner: a spawn (its pid; a run
//! that waits for readiness announces nothing at its spawn) and the boot's end.

use std::collections::HashMap;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use super::core::notices;
use super::core::program::{DownReason, Phase, Program, Target};
use super::core::{Core, Notice};
use crate::logs::Command as LogCommand;
use crate::logs::ledger::record;
use crate::model::ledger::{Cause, Fact};
use crate::model::{Exit, ProgramId, State};

/// The ledger's view of one program's current run.
#[derive(Debug, Clone, Default)]
struct Seen {
    run: u64,
    ended: bool,
    ready: bool,
    /// Restarts by policy, by dependency and by hand when the run began.
    policy: u64,
    dependency: u64,
    manual: u64,
    readiness: u64,
    limit: u64,
    /// Why its stop began (the announced change to `stopping`), if it was stopped.
    stop_why: Option<String>,
}

/// Turns announced notices into ledger records for the log thread.
pub(crate) struct LedgerTap {
    on: bool,
    logs: UnboundedSender<LogCommand>,
    runs: HashMap<ProgramId, Seen>,
    /// When the shutdown began, and why.
    shutdown: Option<(Instant, String)>,
}

fn policy_restarts(p: &Program) -> u64 {
    p.causes.exit + p.causes.readiness + p.causes.health + p.causes.limit
}

impl LedgerTap {
    /// A tap sending to the log thread behind `logs`; `on` is false when the ledger is off
    /// (then it records nothing, and costs a branch a notice).
    pub(crate) fn new(on: bool, logs: UnboundedSender<LogCommand>) -> Self {
        LedgerTap {
            on,
            logs,
            runs: HashMap::new(),
            shutdown: None,
        }
    }

    fn send(&self, fact: Fact) {
        let _ = self.logs.send(LogCommand::Ledger(Box::new(record(fact))));
    }

    /// The boot's first record.
    pub(crate) fn boot(&self, config: &crate::config::Config, pid1: bool) {
        if !self.on {
            return;
        }
        let hash = crate::model::ledger::fnv1a(
            format!("{:?}{:?}", config.init, config.programs).as_bytes(),
        );
        let previous = crate::logs::ledger::previous_boot()
            .map_or_else(|| "first".to_string(), |p| p.ended.clone());
        self.send(Fact::Boot {
            version: env!("CARGO_PKG_VERSION").to_string(),
            config_hash: format!("{hash:016x}"),
            hostname: crate::sys::boot::hostname(),
            pid1,
            previous,
        });
    }

    /// Run `p.run` of `p` was spawned as `pid` (`None`: its start failed).
    pub(crate) fn spawned(&mut self, p: &Program, pid: Option<i32>, now: Instant) {
        if !self.on {
            return;
        }
        // The run before it ended, if that was not told yet.
        self.check_end(p, now);
        self.runs.insert(
            p.id,
            Seen {
                run: p.run,
                policy: policy_restarts(p),
                dependency: p.causes.dependency,
                manual: p.causes.manual,
                readiness: p.causes.readiness,
                limit: p.causes.limit,
                ..Seen::default()
            },
        );
        if let Some(pid) = pid {
            self.send(Fact::Start {
                program: p.name().to_string(),
                run: p.run,
                pid,
            });
        }
    }

    /// A notice the owner loop announces.
    pub(crate) fn noticed(&mut self, n: &Notice, core: &Core, now: Instant) {
        if !self.on {
            return;
        }
        let Some(name) = &n.program else {
            if let Some(reason) = notices::shutdown_reason_of(&n.message) {
                self.shutdown.get_or_insert((now, reason.to_string()));
            }
            return;
        };
        let Some(p) = core.id_of(name).and_then(|id| core.program(id)) else {
            return;
        };
        if let Some(seen) = self.runs.get_mut(&p.id) {
            match n.transition {
                Some((_, State::Stopping)) => seen.stop_why = Some(n.message.clone()),
                Some((State::Starting, State::Running)) if !seen.ready && seen.run == p.run => {
                    seen.ready = true;
                    let took = p
                        .ready_took
                        .filter(|_| p.spec.ready.is_some())
                        .unwrap_or_else(|| {
                            p.run_started
                                .map_or_else(Default::default, |t| now.saturating_duration_since(t))
                        });
                    self.send(Fact::Ready {
                        program: p.name().to_string(),
                        run: p.run,
                        latency_ms: took.as_millis() as u64,
                    });
                }
                _ => {}
            }
        }
        self.check_end(p, now);
    }

    /// Tells the end of `p`'s run once it is over, with the restart decision that followed.
    fn check_end(&mut self, p: &Program, now: Instant) {
        let Some(seen) = self.runs.get(&p.id) else {
            return;
        };
        let over = p.run != seen.run || !p.phase.is_live();
        if seen.ended || !over {
            return;
        }
        let seen = seen.clone();
        let (code, signal) = match p.last_exit {
            Some(Exit::Code(c)) => (Some(c), None),
            Some(Exit::Signal { sig, .. }) => (None, Some(crate::model::signals::signal_name(sig))),
            None => (None, None),
        };
        let uptime = p
            .run_started
            .map_or_else(Default::default, |t| now.saturating_duration_since(t));
        self.send(Fact::Exit {
            program: p.name().to_string(),
            run: seen.run,
            code,
            signal,
            cause: cause_of(p, &seen),
            uptime_ms: uptime.as_millis() as u64,
        });
        if policy_restarts(p) > seen.policy {
            let delay = match p.phase {
                Phase::Backoff { until } => until.saturating_duration_since(now),
                _ => std::time::Duration::ZERO,
            };
            self.send(Fact::Restart {
                program: p.name().to_string(),
                delay_ms: delay.as_millis() as u64,
                in_window: p.history.in_window(p.spec.restart_window, now),
                max_restarts: p.spec.max_restarts,
            });
        }
        if p.phase == Phase::Exhausted || p.target == Target::Down(DownReason::Exhausted) {
            self.send(Fact::Exhausted {
                program: p.name().to_string(),
                max_restarts: p.spec.max_restarts,
            });
        }
        if let Some(s) = self.runs.get_mut(&p.id) {
            s.ended = true;
        }
    }

    /// The boot ends with `code`: its last record.
    pub(crate) fn end(&self, code: i32, now: Instant) {
        if !self.on {
            return;
        }
        let (began, reason) = self
            .shutdown
            .clone()
            .unwrap_or_else(|| (now, "ctrlinit exits".to_string()));
        self.send(Fact::End {
            reason: crate::model::ledger::bounded_text(&reason),
            exit_status: code,
            shutdown_ms: now.saturating_duration_since(began).as_millis() as u64,
        });
    }
}

/// Why `p`'s run (as `seen` when it began) ended.
fn cause_of(p: &Program, seen: &Seen) -> Cause {
    let stopped_for = |word: &str| seen.stop_why.as_deref().is_some_and(|w| w.contains(word));
    if p.failed_to_start {
        Cause::StartFailed
    } else if p.oom_killed {
        Cause::Oom
    } else if p.over_limit.is_some() || p.causes.limit > seen.limit {
        Cause::Limit
    } else if p.unhealthy.is_some() {
        Cause::Health
    } else if p.causes.manual > seen.manual
        || matches!(
            p.target,
            Target::Down(DownReason::Manual | DownReason::Restart)
        )
    {
        Cause::ByHand
    } else if p.causes.dependency > seen.dependency {
        if stopped_for("because external ") {
            Cause::External
        } else {
            Cause::Propagated
        }
    } else if p.target == Target::Down(DownReason::Shutdown) {
        Cause::Stop
    } else if matches!(
        p.target,
        Target::Down(DownReason::Removed | DownReason::Changed)
    ) {
        Cause::Reload
    } else if p.causes.readiness > seen.readiness
        || p.short_of_uptime.is_some()
        || stopped_for("not ready within")
    {
        Cause::Readiness
    } else {
        by_exit(p)
    }
}

/// A run that ended by itself: a success, or a crash.
fn by_exit(p: &Program) -> Cause {
    match p.last_exit {
        Some(e @ Exit::Code(_)) if e.is_success(&p.spec.success_codes) => Cause::Exit,
        Some(Exit::Signal { sig, core_dumped })
            if !core_dumped && p.signals_sent & 1u64.checked_shl(sig as u32).unwrap_or(0) != 0 =>
        {
            Cause::Stop
        }
        _ => Cause::Crash,
    }
}

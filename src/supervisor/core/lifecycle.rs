//! A run from its spawn to its end: spawned or not, ready, the main process reaped, the rest of
//! its group stopped, the finish hook, and the verdict of the restart policy.

use std::sync::Arc;
use std::time::Instant;

use super::{Action, Core, Level};
use crate::config::{Kind, OnExhausted};
use crate::model::Exit;
use crate::supervisor::core::notices;
use crate::supervisor::core::policy::{self, Verdict};
use crate::supervisor::core::program::{After, DownReason, Phase, Stopping, Target};

impl Core {
    pub(super) fn spawned(&mut self, i: usize, pid: i32, now: Instant, acts: &mut Vec<Action>) {
        if self.programs[i].phase != Phase::Spawning {
            return;
        }
        let p = &mut self.programs[i];
        p.run_started = Some(now);
        p.signals_sent = 0;
        p.failed_to_start = false;
        p.oom_killed = false;
        p.last_start_error = None;
        p.unhealthy = None;
        p.watchdog_due = None;
        p.notified = Default::default();
        p.short_of_uptime = None;
        p.over_limit = None;
        p.adoption_refused = None;
        p.measured = None;
        let (id, run) = (p.id, p.run);
        let spec = Arc::clone(&p.spec);
        let (phase, why) = match (spec.kind, &spec.ready) {
            (Kind::Oneshot, _) => (
                Phase::Starting {
                    pid,
                    pgid: pid,
                    ready_by: None,
                },
                notices::spawned(pid, false),
            ),
            (Kind::Service, Some(_)) => {
                // A forking daemon is checked once adopted (its launcher is not the daemon).
                if spec.pidfile.is_none() {
                    acts.push(Action::Probe { id, run });
                }
                (
                    Phase::Starting {
                        pid,
                        pgid: pid,
                        ready_by: Some(now + spec.ready_timeout),
                    },
                    notices::spawned(pid, true),
                )
            }
            (Kind::Service, None) if spec.pidfile.is_some() => (
                Phase::Starting {
                    pid,
                    pgid: pid,
                    ready_by: Some(now + spec.ready_timeout),
                },
                notices::spawned(pid, true),
            ),
            (Kind::Service, None) => (
                Phase::Running { pid, pgid: pid },
                notices::spawned(pid, false),
            ),
        };
        let running = matches!(phase, Phase::Running { .. });
        self.set_phase(i, phase, now, why, acts);
        if running {
            self.became_ready(i, now, acts);
        }
    }

    pub(super) fn spawn_failed(
        &mut self,
        i: usize,
        exit: Exit,
        error: &str,
        exec_failed: bool,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        if self.programs[i].phase != Phase::Spawning {
            return;
        }
        let p = &mut self.programs[i];
        p.last_exit = Some(exit);
        p.run_started = Some(now);
        p.failed_to_start = true;
        // Told in full once: a loop of the same failure is then told by its backoff lines.
        if p.last_start_error.as_deref() != Some(error) {
            p.last_start_error = Some(error.to_string());
            let msg = notices::start_failed(&p.spec, error, exec_failed);
            if p.spec.passthrough {
                // The `--` command's failure ends the container at once: said on stderr now,
                // not through the log thread (the log keeps it too).
                acts.push(Action::TellNow(format!("ctrlinit: {msg}")));
                self.notice(Some(i), Level::Debug, None, msg, acts);
            } else {
                self.notice(Some(i), Level::Error, None, msg, acts);
            }
        }
        let then = After::Policy {
            forced_failure: false,
        };
        self.complete(i, then, now, acts);
    }

    pub(super) fn ready(&mut self, i: usize, run: u64, now: Instant, acts: &mut Vec<Action>) {
        let p = &self.programs[i];
        if let Phase::Starting { pid, pgid, .. } = p.phase
            && p.run == run
            && p.spec.kind == Kind::Service
        {
            let took = p
                .run_started
                .map(|t| now.saturating_duration_since(t))
                .unwrap_or_default();
            self.programs[i].ready_took = Some(took);
            self.set_phase(
                i,
                Phase::Running { pid, pgid },
                now,
                notices::ready_after(took),
                acts,
            );
            self.became_ready(i, now, acts);
        }
    }

    pub(super) fn reaped(
        &mut self,
        pid: i32,
        exit: Exit,
        group_empty: bool,
        oom_killed: bool,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let Some(i) = self.owner_of(pid) else {
            return;
        };
        if let Phase::Finishing { then, .. } = self.programs[i].phase {
            let msg = notices::finish_ended(self.programs[i].name(), exit);
            self.notice(Some(i), Level::Debug, None, msg, acts);
            self.complete(i, then, now, acts);
            return;
        }
        if let Phase::PreStopping(s) = self.programs[i].phase {
            if s.hook == Some(pid) {
                let why = format!("pre_stop hook ended ({exit})");
                self.pre_stop_over(i, &why, now, acts);
                return;
            }
            // The main process ended while the hook ran.
            self.main_ended_in_pre_stop(i, acts);
        }
        self.programs[i].oom_killed = oom_killed;
        if self.launcher_done(i, pid, exit == Exit::Code(0), now, acts) {
            return;
        }
        self.main_exited(i, pid, exit, group_empty, now, acts);
    }

    /// The main process of program `i` ended: stop the rest of its group (when anything is
    /// left of it), then decide.
    fn main_exited(
        &mut self,
        i: usize,
        pid: i32,
        exit: Exit,
        group_empty: bool,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let p = &mut self.programs[i];
        p.last_exit = Some(exit);
        let uptime = p
            .run_started
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default();
        let crashed = match exit {
            Exit::Signal { sig, core_dumped } => core_dumped || p.signals_sent & (1 << sig) == 0,
            Exit::Code(_) => false,
        };
        // A run stopped for going past a limit gets a report too: the figure is what a leak
        // hunt starts from, and its last lines may say what grew.
        if crashed || p.over_limit.is_some() {
            acts.push(Action::Crashed {
                id: p.id,
                pid,
                exit,
                uptime,
                oom_killed: p.oom_killed,
                limit: p.over_limit.clone(),
            });
        }
        let stop_signal = p.spec.stop_signal;
        match p.phase {
            Phase::Stopping(ref mut s) => {
                s.leader = None;
                let msg = notices::leader_ended(self.programs[i].name(), pid, exit);
                self.notice(Some(i), Level::Info, None, msg, acts);
                if group_empty {
                    self.group_gone(i, now, acts);
                }
            }
            Phase::Starting { pgid, .. } | Phase::Running { pgid, .. } => {
                // supervisord's startsecs: a run that ends before its uptime failed to start,
                // even with a success code, so `on-failure` restarts it and it is counted.
                if let (Phase::Starting { .. }, Some(up), true) =
                    (p.phase, p.spec.ready_uptime(), p.wants_up())
                {
                    p.short_of_uptime = Some(up);
                }
                let then = if p.wants_up() {
                    After::Policy {
                        forced_failure: p.short_of_uptime.is_some(),
                    }
                } else {
                    After::Target
                };
                if group_empty {
                    // Nothing left to stop: the decision says how the run ended.
                    self.run_finish_or_complete(i, then, now, acts);
                } else {
                    let kill_at = self.kill_deadline(i, now);
                    self.signal_run(i, pgid, stop_signal, acts);
                    let phase = Phase::Stopping(Stopping {
                        pgid,
                        leader: None,
                        kill_at: Some(kill_at),
                        give_up_at: None,
                        then,
                    });
                    let why = notices::ended_with_group_left(pid, exit, uptime);
                    self.set_phase(i, phase, now, why, acts);
                }
            }
            _ => {}
        }
        self.propagate_restart(i, now, acts);
    }

    /// Programs that live in `i` (`restart = true` on it, or on one that does) restart: the
    /// running ones are stopped, dependents first, and come back up together once all are
    /// down (then each waits until its dependencies hold again); one in backoff just waits.
    fn propagate_restart(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let roots: Vec<usize> = self
            .graph
            .dependents(i)
            .iter()
            .copied()
            .filter(|&d| d != i && self.graph.deps(d).iter().any(|e| e.on == i && e.restart))
            .collect();
        let cause = self.programs[i].name().to_string();
        self.propagate_from(&roots, &cause, now, acts);
    }

    /// `roots` and the programs that live in them restart because of `cause` (a program's
    /// name, or `external NAME`).
    pub(super) fn propagate_from(
        &mut self,
        roots: &[usize],
        cause: &str,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let mut living_in: Vec<usize> = Vec::new();
        for &r in roots {
            if !living_in.contains(&r) && self.programs[r].wants_up() {
                living_in.push(r);
            }
        }
        let mut frontier = living_in.clone();
        while let Some(k) = frontier.pop() {
            for &d in self.graph.dependents(k) {
                let restarts = self.graph.deps(d).iter().any(|e| e.on == k && e.restart);
                if restarts && !living_in.contains(&d) && self.programs[d].wants_up() {
                    living_in.push(d);
                    frontier.push(d);
                }
            }
        }
        let mut set = Vec::new();
        for d in living_in {
            let p = &mut self.programs[d];
            match p.phase {
                Phase::Starting { .. } | Phase::Forked { .. } | Phase::Running { .. } => {
                    p.forced_restarts += 1;
                    p.causes.dependency += 1;
                    set.push(p.id);
                }
                Phase::Backoff { .. } => {
                    p.forced_restarts += 1;
                    p.causes.dependency += 1;
                    let why = notices::restarting_because(cause);
                    self.set_phase(d, Phase::Waiting, now, why, acts);
                }
                _ => {}
            }
        }
        if !set.is_empty() {
            self.propagated.push((cause.to_string(), set));
        }
    }

    pub(super) fn group_gone(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let Phase::Stopping(Stopping {
            leader: None, then, ..
        }) = self.programs[i].phase
        else {
            return;
        };
        self.run_finish_or_complete(i, then, now, acts);
    }

    pub(super) fn finish_spawned(&mut self, i: usize, pid: i32) {
        if let Phase::Finishing { pid: p, .. } = &mut self.programs[i].phase {
            *p = Some(pid);
        }
    }

    pub(super) fn finish_failed(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        if let Phase::Finishing { then, .. } = self.programs[i].phase {
            self.complete(i, then, now, acts);
        }
    }

    pub(super) fn run_finish_or_complete(
        &mut self,
        i: usize,
        then: After,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let p = &self.programs[i];
        if p.spec.finish.is_some() {
            let deadline = self.bounded(now + p.spec.stop_timeout);
            acts.push(Action::RunFinish {
                id: p.id,
                exit: p.last_exit,
            });
            let phase = Phase::Finishing {
                pid: None,
                deadline,
                then,
            };
            self.set_phase(i, phase, now, notices::RUNNING_FINISH.into(), acts);
        } else {
            self.complete(i, then, now, acts);
        }
    }

    /// The run is over (group gone, hook done): apply the target or the restart policy.
    pub(super) fn complete(&mut self, i: usize, then: After, now: Instant, acts: &mut Vec<Action>) {
        if let Target::Down(reason) = self.programs[i].target {
            self.set_phase(i, Phase::Stopped, now, reason.as_str().into(), acts);
            return;
        }
        let forced_failure = match then {
            After::Target => {
                self.set_phase(i, Phase::Waiting, now, String::new(), acts);
                return;
            }
            After::Policy { forced_failure } => forced_failure,
        };
        let p = &mut self.programs[i];
        let ran_for = p
            .run_started
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default();
        let spec = Arc::clone(&p.spec);
        let exit = p.last_exit;
        let verdict = policy::decide(&spec, &mut p.history, exit, forced_failure, ran_for, now);
        let how = notices::how_run_ended(notices::RunEnding {
            exit,
            failed_to_start: p.failed_to_start,
            oom_killed: p.oom_killed,
            forced_failure,
            unhealthy: p.unhealthy.as_deref(),
            over_limit: p.over_limit.as_deref(),
            adoption_refused: p.adoption_refused.is_some(),
            short_of_uptime: p.short_of_uptime,
            ran_for,
            ready_timeout: spec.ready_timeout,
        });
        if let Verdict::Restart { .. } = verdict {
            let causes = &mut p.causes;
            let early = p.short_of_uptime.is_some();
            match (&p.unhealthy, forced_failure && !early) {
                (Some(_), _) => causes.health += 1,
                (None, _) if p.over_limit.is_some() => causes.limit += 1,
                (None, true) => causes.readiness += 1,
                (None, false) => causes.exit += 1,
            }
        }
        match verdict {
            Verdict::Completed => {
                self.set_phase(i, Phase::Completed, now, how, acts);
                if spec.main {
                    self.main_ended(i, 0, now, acts);
                }
            }
            Verdict::Exited => {
                let why = notices::not_restarted(&how, &spec);
                self.set_phase(i, Phase::Exited, now, why, acts);
                if spec.main {
                    let code = exit.map_or(1, |e| e.shell_code());
                    self.main_ended(i, code, now, acts);
                }
            }
            Verdict::Restart { delay, in_window } => {
                let why = notices::restart_after(&how, in_window, &spec, delay);
                if delay.is_zero() {
                    // No backoff state to show: say why it restarts, then restart.
                    let msg = notices::restarting_at_once(&spec.name, &why);
                    self.notice(Some(i), Level::Warn, None, msg, acts);
                    self.set_phase(i, Phase::Waiting, now, String::new(), acts);
                } else {
                    self.set_phase(i, Phase::Backoff { until: now + delay }, now, why, acts);
                }
            }
            Verdict::Exhausted { in_window } => self.exhausted(i, in_window, &how, now, acts),
        }
    }

    fn exhausted(
        &mut self,
        i: usize,
        in_window: u32,
        how: &str,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let spec = Arc::clone(&self.programs[i].spec);
        match spec.on_exhausted {
            OnExhausted::Exit => {
                let code = self.init.exit_code;
                // One clear line (the state change says it all); the shutdown refers to it.
                let line = notices::exhausted_exit(&spec, in_window, how, code);
                self.set_phase(i, Phase::Exhausted, now, line.clone(), acts);
                acts.push(Action::TerminationMessage(line));
                let reason = notices::exhausted_reason(&spec.name);
                self.begin_shutdown(code as i32, &reason, now, acts);
            }
            OnExhausted::Stop => {
                let line = notices::exhausted_stop(&spec, in_window, how);
                self.programs[i].target = Target::Down(DownReason::Exhausted);
                self.set_phase_at(i, Phase::Stopped, now, line, Level::Error, acts);
                if spec.main {
                    let code = self.init.exit_code as i32;
                    self.main_ended(i, code, now, acts);
                }
            }
        }
    }
}

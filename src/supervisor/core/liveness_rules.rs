//! A running program's liveness and what it says about itself: liveness check results, the
//! sd_notify watchdog, and sd_notify messages (`READY=1`, `STATUS=`, `MAINPID=` …).
//!
//! An unhealthy program with `on_failure = "restart"` is stopped as a failed run: its end goes
//! through the restart policy like a crash (it counts toward the budget; exhausting it exits the
//! container), and `restart = true` dependents are restarted after it (see `lifecycle`).

use std::time::{Duration, Instant};

use super::{Action, Core, Level};
use crate::config::{OnHealthFailure, ReadyProbe};
use crate::supervisor::core::health::{CheckResult, Health, HealthStatus};
use crate::supervisor::core::notices;
use crate::supervisor::core::notify_message::NotifyMessage;
use crate::supervisor::core::program::{After, Phase, Stopping};

impl Core {
    /// Program `i` just became ready (entered `running`): its liveness starts over, its
    /// watchdog is armed, and its checks start.
    pub(super) fn became_ready(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let p = &mut self.programs[i];
        p.notified.reloading = false;
        let Some(settings) = p.spec.health.clone() else {
            return;
        };
        match &mut p.health {
            Some(h) => h.restart(&settings, now),
            None => p.health = Some(Health::new(&settings, now)),
        }
        p.watchdog_due = settings.watchdog.map(|w| now + w);
        if settings.check.is_some() {
            acts.push(Action::Watch {
                id: p.id,
                run: p.run,
            });
        }
    }

    /// A liveness check of run `run` ended with `result`.
    pub(super) fn checked(
        &mut self,
        i: usize,
        run: u64,
        result: CheckResult,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let p = &mut self.programs[i];
        if p.run != run || !matches!(p.phase, Phase::Running { .. }) {
            return;
        }
        let Some(settings) = p.spec.health.clone() else {
            return;
        };
        let Some(health) = p.health.as_mut() else {
            return;
        };
        let output = result.output.clone();
        let Some((from, to)) = health.record(&settings, result, now) else {
            return;
        };
        let check = settings
            .check
            .as_ref()
            .map_or_else(String::new, |c| c.describe());
        self.health_changed(i, from, to, &check, &output, acts);
        if to == HealthStatus::Unhealthy {
            let cause = notices::unhealthy_cause(&check, &output, settings.failures);
            self.unhealthy(i, cause, settings.on_failure, now, acts);
        }
    }

    /// Tells a liveness change (to the log and `events`).
    fn health_changed(
        &mut self,
        i: usize,
        from: HealthStatus,
        to: HealthStatus,
        check: &str,
        output: &str,
        acts: &mut Vec<Action>,
    ) {
        let level = match to {
            HealthStatus::Unhealthy => Level::Error,
            HealthStatus::Failing { .. } => Level::Warn,
            _ => Level::Info,
        };
        let name = self.programs[i].name().to_string();
        let msg = notices::health_changed(&name, &from.to_string(), &to.to_string(), check, output);
        acts.push(Action::Notice(super::Notice {
            program: Some(name),
            level,
            transition: None,
            message: msg,
            health: Some(to.to_string()),
        }));
    }

    /// Program `i` passed its failure threshold: restart it (as a failed run) or only mark it.
    fn unhealthy(
        &mut self,
        i: usize,
        cause: String,
        on_failure: OnHealthFailure,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        if on_failure == OnHealthFailure::Mark || !self.programs[i].wants_up() {
            return;
        }
        if !matches!(self.programs[i].phase, Phase::Running { .. }) {
            return;
        }
        self.programs[i].unhealthy = Some(cause.clone());
        self.programs[i].watchdog_due = None;
        let then = After::Policy {
            forced_failure: true,
        };
        self.stop_live_run(i, then, notices::unhealthy_restart(&cause), now, acts);
    }

    /// Watchdogs whose time passed (called from `tick`).
    pub(super) fn watchdogs_due(&mut self, now: Instant, acts: &mut Vec<Action>) {
        for i in 0..self.programs.len() {
            let p = &self.programs[i];
            if matches!(p.phase, Phase::Running { .. }) && p.watchdog_due.is_some_and(|d| d <= now)
            {
                let every = p
                    .spec
                    .health
                    .as_ref()
                    .and_then(|h| h.watchdog)
                    .unwrap_or(Duration::ZERO);
                self.watchdog_failed(i, notices::watchdog_missed(every), now, acts);
            }
        }
    }

    /// The watchdog was missed (or triggered): unhealthy at once, as systemd's `WatchdogSec`.
    fn watchdog_failed(&mut self, i: usize, what: String, now: Instant, acts: &mut Vec<Action>) {
        let p = &mut self.programs[i];
        // Disarmed until the next WATCHDOG=1: one miss is told once.
        p.watchdog_due = None;
        let Some(settings) = p.spec.health.clone() else {
            return;
        };
        let Some(health) = p.health.as_mut() else {
            return;
        };
        let result = CheckResult {
            passed: false,
            output: what.clone(),
            took: Duration::ZERO,
        };
        if let Some((from, to)) = health.fail_now(result, now) {
            self.health_changed(i, from, to, "watchdog", &what, acts);
        }
        let cause = format!("watchdog: {what}");
        self.unhealthy(i, cause, settings.on_failure, now, acts);
    }

    /// The program said something over sd_notify.
    pub(super) fn notified(
        &mut self,
        i: usize,
        m: NotifyMessage,
        main_pgid: Option<i32>,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        if !self.programs[i].phase.is_live() {
            return;
        }
        let p = &mut self.programs[i];
        if let Some(status) = m.status {
            p.notified.status = Some(status);
        }
        p.notified.reloading |= m.reloading;
        p.notified.stopping |= m.stopping;
        if let Some(errno) = m.errno {
            p.notified.errno = Some(errno);
            let msg = notices::notify_errno(p.name(), errno);
            self.notice(Some(i), Level::Warn, None, msg, acts);
        }
        if let (Some(pid), Some(pgid)) = (m.main_pid, main_pgid) {
            self.main_pid(i, pid, pgid, acts);
        }
        if let Some(more) = m.extend_timeout {
            self.extend_timeout(i, now + more);
        }
        if m.watchdog {
            self.watchdog_fed(i, now, acts);
        }
        if m.watchdog_trigger && matches!(self.programs[i].phase, Phase::Running { .. }) {
            self.watchdog_failed(i, notices::WATCHDOG_TRIGGERED.into(), now, acts);
        }
        let p = &self.programs[i];
        let notify_ready = matches!(
            p.spec.ready.as_ref().map(|r| &r.probe),
            Some(ReadyProbe::Notify)
        );
        if m.ready {
            self.programs[i].notified.reloading = false;
            if notify_ready {
                let run = self.programs[i].run;
                self.ready(i, run, now, acts);
            }
        }
    }

    /// `MAINPID=`: the run's main process is now `pid` (the shell checked it belongs to the
    /// program), leading group `pgid`.
    fn main_pid(&mut self, i: usize, pid: i32, pgid: i32, acts: &mut Vec<Action>) {
        let p = &mut self.programs[i];
        let from = match &mut p.phase {
            Phase::Starting {
                pid: main,
                pgid: group,
                ..
            }
            | Phase::Running {
                pid: main,
                pgid: group,
            } => {
                let from = *main;
                (*main, *group) = (pid, pgid);
                from
            }
            _ => return,
        };
        if from != pid {
            let id = p.id;
            let msg = notices::main_pid_changed(p.name(), from, pid);
            self.notice(Some(i), Level::Info, None, msg, acts);
            acts.push(Action::Adopted { id, pid });
        }
    }

    /// `EXTEND_TIMEOUT_USEC=`: the start (readiness deadline) or stop under way may last until
    /// `until` (a stop still within the container's stop budget). A stop's `pre_stop` hook is
    /// part of it: both the hook's deadline and the SIGKILL deadline move, so the hook keeps
    /// running and the stop signal follows it.
    fn extend_timeout(&mut self, i: usize, until: Instant) {
        let bounded = self.bounded(until);
        match &mut self.programs[i].phase {
            Phase::Starting {
                ready_by: Some(by), ..
            } => *by = (*by).max(until),
            Phase::PreStopping(s) => {
                s.until = s.until.max(bounded);
                s.kill_at = s.kill_at.max(bounded);
            }
            Phase::Stopping(Stopping {
                kill_at: Some(at), ..
            }) => *at = (*at).max(bounded),
            _ => {}
        }
    }

    /// `WATCHDOG=1`: the deadline moves on. For a program whose only liveness is its watchdog,
    /// the first ping makes it healthy; a ping after a miss counts toward its recovery; the rest
    /// only move the deadline.
    fn watchdog_fed(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let p = &mut self.programs[i];
        let Some(settings) = p.spec.health.clone() else {
            return;
        };
        let (Some(every), Phase::Running { .. }) = (settings.watchdog, p.phase) else {
            return;
        };
        let was_disarmed = p.watchdog_due.is_none();
        p.watchdog_due = Some(now + every);
        if let Some(health) = p.health.as_mut()
            && (health.status == HealthStatus::Starting && settings.check.is_none()
                || was_disarmed && health.status == HealthStatus::Unhealthy)
        {
            let result = CheckResult {
                passed: true,
                output: "WATCHDOG=1".into(),
                took: Duration::ZERO,
            };
            if let Some((from, to)) = health.record(&settings, result, now) {
                self.health_changed(i, from, to, "watchdog", "WATCHDOG=1", acts);
            }
        }
    }
}

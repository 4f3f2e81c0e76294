//! Deadlines: each phase carries its own (see `program.rs`), and each kind has a handler of its
//! own here. [`Core::tick`] finds the programs whose deadline passed and hands each to the handler
//! of its phase.

use std::time::Instant;

use nix::sys::signal::Signal;

use super::{Action, Core, KILL_GRACE, Level};
use crate::supervisor::core::notices;
use crate::supervisor::core::program::{After, Phase, Stopping};

impl Core {
    pub(super) fn tick(&mut self, now: Instant, acts: &mut Vec<Action>) {
        if self.shutdown.is_none() {
            self.external_deadlines(now, acts);
        }
        if self
            .shutdown
            .as_ref()
            .and_then(|s| s.drain_until)
            .is_some_and(|d| d <= now)
        {
            self.end_drain(acts);
        }
        if let Some(s) = &self.shutdown
            && !s.killed
            && s.deadline <= now
        {
            self.stop_budget_spent(now, acts);
        }
        for i in 0..self.programs.len() {
            if self.programs[i].phase.deadline().is_some_and(|d| d <= now) {
                self.deadline_passed(i, now, acts);
            }
        }
        self.watchdogs_due(now, acts);
    }

    /// Which deadline of program `i` passed.
    fn deadline_passed(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        match self.programs[i].phase {
            Phase::Starting { .. } => self.ready_timed_out(i, now, acts),
            Phase::Forked { .. } => {
                let run = self.programs[i].run;
                let why = notices::no_pid_file(&self.programs[i].spec);
                self.adoption_failed(i, (run, false), &why, now, acts);
            }
            Phase::Backoff { .. } => self.backoff_over(i, now, acts),
            Phase::PreStopping(_) => self.pre_stop_timed_out(i, now, acts),
            Phase::Stopping(s) if s.kill_at.is_some() => self.kill_due(i, s, now, acts),
            Phase::Stopping(s) if s.leader.is_none() => self.group_outlived_kill(i, s, now, acts),
            // The container is stopping: its budget bounds every wait, this one too.
            Phase::Stopping(s) if self.shutdown.is_some() => {
                self.group_outlived_kill(i, s, now, acts)
            }
            Phase::Stopping(_) => self.leader_outlived_kill(i, acts),
            Phase::Finishing { pid, then, .. } => self.finish_timed_out(i, pid, then, now, acts),
            _ => {}
        }
    }

    /// The container's stop budget is spent: kill what is left.
    fn stop_budget_spent(&mut self, now: Instant, acts: &mut Vec<Action>) {
        let msg = notices::stop_budget_spent(self.init.stop_timeout);
        self.notice(None, Level::Warn, None, msg, acts);
        self.kill_everything(now, acts);
    }

    /// Not ready within `ready_timeout`: stop it; the run counts as failed.
    fn ready_timed_out(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let why = notices::not_ready_within(self.programs[i].spec.ready_timeout);
        let then = After::Policy {
            forced_failure: true,
        };
        self.stop_live_run(i, then, why, now, acts);
    }

    /// The restart delay is over: wait for dependencies, then start.
    fn backoff_over(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        self.set_phase(i, Phase::Waiting, now, String::new(), acts);
    }

    /// The group outlived its stop timeout: SIGKILL.
    fn kill_due(&mut self, i: usize, s: Stopping, now: Instant, acts: &mut Vec<Action>) {
        self.signal_run(i, s.pgid, Signal::SIGKILL, acts);
        self.programs[i].phase = Phase::Stopping(Stopping {
            kill_at: None,
            give_up_at: Some(now + KILL_GRACE),
            ..s
        });
        let msg = notices::sending_sigkill(&self.programs[i].spec, s.pgid);
        self.notice(Some(i), Level::Warn, None, msg, acts);
    }

    /// Members of a group whose leader is gone outlived SIGKILL (uninterruptible sleep): move on
    /// without them.
    fn group_outlived_kill(&mut self, i: usize, s: Stopping, now: Instant, acts: &mut Vec<Action>) {
        let msg = notices::group_survived_kill(self.programs[i].name(), s.pgid, KILL_GRACE);
        self.notice(Some(i), Level::Warn, None, msg, acts);
        self.run_finish_or_complete(i, s.then, now, acts);
    }

    /// The leader itself outlived SIGKILL: keep waiting for its reap, without a deadline, so
    /// the loop does not spin.
    fn leader_outlived_kill(&mut self, i: usize, acts: &mut Vec<Action>) {
        let Phase::Stopping(ref mut s) = self.programs[i].phase else {
            return;
        };
        s.give_up_at = None;
        let leader = s.leader;
        let msg = notices::leader_survived_kill(self.programs[i].name(), leader, KILL_GRACE);
        self.notice(Some(i), Level::Warn, None, msg, acts);
    }

    /// The finish hook overran: kill it and move on.
    fn finish_timed_out(
        &mut self,
        i: usize,
        pid: Option<i32>,
        then: After,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        if let Some(pid) = pid {
            acts.push(Action::Signal {
                pgid: pid,
                signal: Signal::SIGKILL,
                cont: false,
                run_of: None,
            });
        }
        let msg = notices::finish_killed(self.programs[i].name());
        self.notice(Some(i), Level::Warn, None, msg, acts);
        self.complete(i, then, now, acts);
    }
}

//! Stopping a live run: its `pre_stop` hook first, when it has one (bounded by
//! `pre_stop_timeout`, within the program's stop time and the container's budget), then its stop
//! signal (for a `--` command stopping with the container, the signal that asked for it, as it
//! came), then SIGKILL once its stop time is spent.

use std::time::Instant;

use nix::sys::signal::Signal;

use super::{Action, Core, Level};
use crate::supervisor::core::notices;
use crate::supervisor::core::program::{After, Phase, PreStopping, Stopping};

impl Core {
    /// Program `i`'s `pre_stop` hook could not be spawned: the stop goes on without it.
    pub(super) fn pre_stop_failed(
        &mut self,
        i: usize,
        error: &str,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let why = format!("pre_stop hook failed to start: {error}");
        self.pre_stop_over(i, &why, now, acts);
    }

    /// Sends the stop signal to a live program's group (after its `pre_stop` hook); `then`
    /// follows from its target.
    pub(super) fn begin_stop(
        &mut self,
        i: usize,
        now: Instant,
        why: String,
        acts: &mut Vec<Action>,
    ) {
        self.stop_live_run(i, After::Target, why, now, acts);
    }

    /// Starts stopping program `i`'s live run; `then` decides what follows its end.
    pub(super) fn stop_live_run(
        &mut self,
        i: usize,
        then: After,
        why: String,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let kill_at = self.stop_deadline(i, now);
        let (pid, pgid) = match self.programs[i].phase {
            Phase::Starting { pid, pgid, .. } | Phase::Running { pid, pgid } => (pid, pgid),
            // A forking daemon not adopted yet: no main process, only what its launcher left
            // (the tracking finds what left the group).
            Phase::Forked { pgid, .. } => {
                let signal = self.send_stop_signal(i, pgid, acts);
                let phase = Phase::Stopping(Stopping {
                    pgid,
                    leader: None,
                    kill_at: Some(kill_at),
                    give_up_at: None,
                    then,
                });
                self.set_phase(i, phase, now, notices::stop_sent(&why, signal, pgid), acts);
                return;
            }
            _ => return,
        };
        let spec = &self.programs[i].spec;
        if spec.pre_stop.is_some() {
            let until = (now + spec.pre_stop_timeout).min(kill_at);
            let id = self.programs[i].id;
            acts.push(Action::RunPreStop { id, main: pid });
            let phase = Phase::PreStopping(PreStopping {
                pid,
                pgid,
                hook: None,
                until,
                kill_at,
                then,
            });
            let why = notices::running_pre_stop(&why, spec.pre_stop_timeout);
            self.set_phase(i, phase, now, why, acts);
            return;
        }
        let signal = self.send_stop_signal(i, pgid, acts);
        let phase = Phase::Stopping(Stopping {
            pgid,
            leader: Some(pid),
            kill_at: Some(kill_at),
            give_up_at: None,
            then,
        });
        self.set_phase(i, phase, now, notices::stop_sent(&why, signal, pgid), acts);
    }

    /// When SIGKILL goes to program `i`'s group if it stops now: its stop timeout (the whole
    /// budget for a `--` command stopping with the container), cut short by the budget.
    fn stop_deadline(&self, i: usize, now: Instant) -> Instant {
        match self.forwarded_to(i) {
            Some((_, budget)) => budget,
            None => self.kill_deadline(i, now),
        }
    }

    /// The signal that asked for the container's stop and the budget's end, when program `i`
    /// is the `--` command (tini's behaviour).
    fn forwarded_to(&self, i: usize) -> Option<(Signal, Instant)> {
        self.shutdown
            .as_ref()
            .and_then(|s| s.forwarded.map(|sig| (sig, s.deadline)))
            .filter(|_| self.programs[i].spec.passthrough)
    }

    /// Sends program `i`'s stop signal to its run; returns the signal.
    fn send_stop_signal(&mut self, i: usize, pgid: i32, acts: &mut Vec<Action>) -> Signal {
        match self.forwarded_to(i) {
            Some((sig, _)) => {
                self.programs[i].signals_sent |= 1 << (sig as i32);
                acts.push(Action::Signal {
                    pgid,
                    signal: sig,
                    cont: false,
                    run_of: Some(self.programs[i].id),
                });
                sig
            }
            None => {
                let signal = self.programs[i].spec.stop_signal;
                self.signal_run(i, pgid, signal, acts);
                signal
            }
        }
    }

    /// The `pre_stop` hook is over (it ended, could not start, or ran out of time): the stop
    /// signal goes out.
    pub(super) fn pre_stop_over(
        &mut self,
        i: usize,
        why: &str,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let Phase::PreStopping(s) = self.programs[i].phase else {
            return;
        };
        let signal = self.send_stop_signal(i, s.pgid, acts);
        self.programs[i].phase = Phase::Stopping(Stopping {
            pgid: s.pgid,
            leader: Some(s.pid),
            kill_at: Some(s.kill_at.max(now)),
            give_up_at: None,
            then: s.then,
        });
        let msg = notices::pre_stop_over(self.programs[i].name(), why, signal, s.pgid);
        self.notice(Some(i), Level::Info, None, msg, acts);
    }

    /// The hook was spawned.
    pub(super) fn pre_stop_spawned(&mut self, i: usize, pid: i32) {
        if let Phase::PreStopping(s) = &mut self.programs[i].phase {
            s.hook = Some(pid);
        }
    }

    /// The hook's time ran out: it is killed, the stop goes on.
    pub(super) fn pre_stop_timed_out(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let Phase::PreStopping(s) = self.programs[i].phase else {
            return;
        };
        kill_hook(s.hook, acts);
        self.pre_stop_over(i, "pre_stop hook did not end in time; killed it", now, acts);
    }

    /// The main process ended while its `pre_stop` hook ran: the hook is killed (there is
    /// nothing left to deregister from), and the rest of the group is stopped.
    pub(super) fn main_ended_in_pre_stop(&mut self, i: usize, acts: &mut Vec<Action>) {
        let Phase::PreStopping(s) = self.programs[i].phase else {
            return;
        };
        kill_hook(s.hook, acts);
        self.send_stop_signal(i, s.pgid, acts);
        self.programs[i].phase = Phase::Stopping(Stopping {
            pgid: s.pgid,
            leader: Some(s.pid),
            kill_at: Some(s.kill_at),
            give_up_at: None,
            then: s.then,
        });
    }
}

/// SIGKILL to a `pre_stop` hook that is still running (its own process group).
pub(super) fn kill_hook(hook: Option<i32>, acts: &mut Vec<Action>) {
    if let Some(pgid) = hook {
        acts.push(Action::Signal {
            pgid,
            signal: Signal::SIGKILL,
            cont: false,
            run_of: None,
        });
    }
}

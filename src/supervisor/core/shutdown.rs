//! Stopping the container: the graceful stop in reverse dependency order inside the stop
//! budget, a forced kill, and the one `Exit` once every program is down.

use std::time::Instant;

use nix::sys::signal::Signal;

use super::stopping::kill_hook;
use super::{Action, Core, KILL_GRACE, Level, Shutdown};
use crate::supervisor::core::notices;
use crate::supervisor::core::program::{After, DownReason, Phase, Stopping, Target};

impl Core {
    pub(super) fn main_ended(&mut self, i: usize, code: i32, now: Instant, acts: &mut Vec<Action>) {
        let reason = notices::main_ended(self.programs[i].name(), code);
        self.begin_shutdown(code, &reason, now, acts);
    }

    pub(super) fn begin_shutdown(
        &mut self,
        code: i32,
        reason: &str,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        if self.shutdown.is_some() {
            return;
        }
        self.notice(
            None,
            Level::Info,
            None,
            notices::shutting_down(reason),
            acts,
        );
        self.shutdown = Some(Shutdown {
            code,
            deadline: now + self.init.stop_timeout,
            killed: false,
            exit_sent: false,
            requested: false,
            forwarded: None,
            drain_until: None,
        });
        self.restart_sets.clear();
        self.propagated.clear();
        self.pending_reload = None;
        self.take_everything_down();
    }

    /// A requested stop with `[init] drain`: programs keep running for the drain while the
    /// container reports not ready (`health`, `/readyz`), so a load balancer stops sending
    /// first; then they stop as usual. The drain is part of the stop budget.
    pub(super) fn drain_first(&mut self, now: Instant, acts: &mut Vec<Action>) {
        let drain = self.init.drain;
        let Some(s) = &mut self.shutdown else { return };
        if drain.is_zero() || s.drain_until.is_some() {
            return;
        }
        let until = (now + drain).min(s.deadline);
        s.drain_until = Some(until);
        // Undo what begin_shutdown did: the stop waits for the drain.
        for p in &mut self.programs {
            if p.target == Target::Down(DownReason::Shutdown) && p.phase.is_live() {
                p.target = Target::Up;
            }
        }
        self.notice(None, Level::Info, None, notices::draining(drain), acts);
    }

    /// The drain is over (or cut short): every program is meant down, dependents first.
    pub(super) fn end_drain(&mut self, acts: &mut Vec<Action>) {
        let Some(s) = &mut self.shutdown else { return };
        if s.drain_until.take().is_none() {
            return;
        }
        self.notice(None, Level::Info, None, notices::DRAINED.into(), acts);
        self.take_everything_down();
    }

    /// Whether the container is draining before its stop.
    pub fn draining(&self) -> bool {
        self.shutdown
            .as_ref()
            .is_some_and(|s| s.drain_until.is_some())
    }

    fn take_everything_down(&mut self) {
        for p in &mut self.programs {
            if p.target == Target::Up || p.target == Target::Down(DownReason::Restart) {
                p.target = Target::Down(DownReason::Shutdown);
            }
        }
    }

    pub(super) fn force_kill(&mut self, now: Instant, acts: &mut Vec<Action>) {
        if self.shutdown.is_none() {
            self.begin_shutdown(0, notices::FORCE_KILL_REASON, now, acts);
        }
        self.end_drain(acts);
        self.notice(None, Level::Warn, None, notices::FORCE_KILL.into(), acts);
        self.kill_everything(now, acts);
        if let Some(s) = &mut self.shutdown {
            s.deadline = now;
            s.exit_sent = true;
            acts.push(Action::Exit {
                code: s.code,
                deadline: now,
            });
        }
    }

    pub(super) fn kill_everything(&mut self, now: Instant, acts: &mut Vec<Action>) {
        for i in 0..self.programs.len() {
            match self.programs[i].phase {
                Phase::Starting { pid, pgid, .. } | Phase::Running { pid, pgid } => {
                    self.signal_run(i, pgid, Signal::SIGKILL, acts);
                    let phase = Phase::Stopping(Stopping {
                        pgid,
                        leader: Some(pid),
                        kill_at: None,
                        give_up_at: Some(now + KILL_GRACE),
                        then: After::Target,
                    });
                    self.set_phase(i, phase, now, notices::KILLED_OUT_OF_TIME.into(), acts);
                }
                Phase::Stopping(s) if s.kill_at.is_some() => {
                    self.signal_run(i, s.pgid, Signal::SIGKILL, acts);
                    self.programs[i].phase = Phase::Stopping(Stopping {
                        kill_at: None,
                        give_up_at: Some(now + KILL_GRACE),
                        ..s
                    });
                }
                Phase::PreStopping(s) => {
                    kill_hook(s.hook, acts);
                    self.signal_run(i, s.pgid, Signal::SIGKILL, acts);
                    let phase = Phase::Stopping(Stopping {
                        pgid: s.pgid,
                        leader: Some(s.pid),
                        kill_at: None,
                        give_up_at: Some(now + KILL_GRACE),
                        then: After::Target,
                    });
                    self.set_phase(i, phase, now, notices::KILLED_OUT_OF_TIME.into(), acts);
                }
                Phase::Finishing { pid, then, .. } => {
                    if let Some(pid) = pid {
                        acts.push(Action::Signal {
                            pgid: pid,
                            signal: Signal::SIGKILL,
                            cont: false,
                            run_of: None,
                        });
                    }
                    self.complete(i, then, now, acts);
                }
                _ => {}
            }
        }
        if let Some(s) = &mut self.shutdown {
            s.killed = true;
        }
    }

    /// Once shutting down and every program is down: `Exit`, once.
    pub(super) fn check_exit(&mut self, acts: &mut Vec<Action>) {
        let all_down = self.programs.iter().all(|p| !p.phase.is_live());
        if let Some(s) = &mut self.shutdown
            && all_down
            && !s.exit_sent
        {
            s.exit_sent = true;
            // After a requested stop, the container's status is the main program's (as tini
            // gives its child's): killed by the TERM it was sent, 143; trapped it and exited 3,
            // 3. It is 0 only when no main program ran.
            let main_status = self
                .programs
                .iter()
                .filter(|p| p.spec.main)
                .find_map(|p| p.last_exit.filter(|_| p.run_started.is_some()));
            let code = match main_status {
                Some(exit) if s.requested => exit.shell_code(),
                _ => s.code,
            };
            acts.push(Action::Exit {
                code,
                deadline: s.deadline,
            });
        }
    }
}

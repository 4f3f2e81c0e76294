//! Stopping the container: the graceful stop in reverse dependency order inside the stop
//! budget, a forced kill, and the one `Exit` once every program is down.

use std::time::Instant;

use nix::sys::signal::Signal;

use super::{Action, Core, KILL_GRACE, Level, Shutdown};
use crate::supervisor::notices;
use crate::supervisor::program::{After, DownReason, Phase, Stopping, Target};

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
        });
        for p in &mut self.programs {
            if p.target == Target::Up || p.target == Target::Down(DownReason::Restart) {
                p.target = Target::Down(DownReason::Shutdown);
            }
        }
        self.restart_sets.clear();
        self.propagated.clear();
        self.pending_reload = None;
    }

    pub(super) fn force_kill(&mut self, now: Instant, acts: &mut Vec<Action>) {
        if self.shutdown.is_none() {
            self.begin_shutdown(0, notices::FORCE_KILL_REASON, now, acts);
        }
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
                Phase::Finishing { pid, then, .. } => {
                    if let Some(pid) = pid {
                        acts.push(Action::Signal {
                            pgid: pid,
                            signal: Signal::SIGKILL,
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
            acts.push(Action::Exit {
                code: s.code,
                deadline: s.deadline,
            });
        }
    }
}

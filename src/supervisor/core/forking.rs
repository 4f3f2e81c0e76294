//! Forking daemons (`type = "forking"`): the launcher must exit 0 within `ready_timeout`; then
//! the pid its pid file names (a process of this run: the shell checks) becomes the run's main
//! process, and the run goes on as any other (its readiness check, if it has one, then
//! `running`). A launcher that fails, or a pid file that does not come or names a stranger,
//! fails the run.

use std::time::Instant;

use super::{Action, Core, Level};
use crate::supervisor::core::notices;
use crate::supervisor::core::program::{After, Phase, Stopping};

impl Core {
    /// Whether a main process that just exited was a forking daemon's launcher that succeeded:
    /// then its pid file is awaited.
    pub(super) fn launcher_done(
        &mut self,
        i: usize,
        pid: i32,
        ok: bool,
        now: Instant,
        acts: &mut Vec<Action>,
    ) -> bool {
        let p = &self.programs[i];
        let Phase::Starting {
            pid: main,
            pgid,
            ready_by,
        } = p.phase
        else {
            return false;
        };
        if p.spec.pidfile.is_none() || main != pid || !ok || !p.wants_up() {
            return false;
        }
        let ready_by = ready_by.unwrap_or(now + p.spec.ready_timeout);
        let (id, run) = (p.id, p.run);
        let msg = notices::launcher_forked(p.name(), pid, p.spec.pidfile.as_deref());
        self.programs[i].phase = Phase::Forked { pgid, ready_by };
        self.notice(Some(i), Level::Info, None, msg, acts);
        acts.push(Action::AwaitPidFile { id, run });
        true
    }

    /// The pid file named the daemon: it is the main process now.
    pub(super) fn adopt(
        &mut self,
        i: usize,
        run: u64,
        pid: i32,
        pgid: i32,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let p = &self.programs[i];
        let Phase::Forked { ready_by, .. } = p.phase else {
            return;
        };
        if p.run != run {
            return;
        }
        let id = p.id;
        acts.push(Action::Adopted { id, pid });
        if p.spec.ready.is_some() {
            acts.push(Action::Probe { id, run });
            let phase = Phase::Starting {
                pid,
                pgid,
                ready_by: Some(ready_by),
            };
            let msg = notices::adopted(p.name(), pid);
            self.programs[i].phase = phase;
            self.notice(Some(i), Level::Info, None, msg, acts);
            return;
        }
        let took = p
            .run_started
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default();
        self.programs[i].ready_took = Some(took);
        let why = notices::adopted_running(pid, took);
        self.set_phase(i, Phase::Running { pid, pgid }, now, why, acts);
        self.became_ready(i, now, acts);
    }

    /// No usable pid file by the deadline, or one naming a stranger (`refused`: then that
    /// refusal is how the run ended, not its readiness): the run failed; whatever it started
    /// is stopped.
    pub(super) fn adoption_failed(
        &mut self,
        i: usize,
        (run, refused): (u64, bool),
        why: &str,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let p = &self.programs[i];
        let Phase::Forked { pgid, .. } = p.phase else {
            return;
        };
        if p.run != run {
            return;
        }
        let signal = p.spec.stop_signal;
        let msg = format!("{}: {why}", p.name());
        if refused {
            self.programs[i].adoption_refused = Some(why.to_string());
        }
        self.notice(Some(i), Level::Error, None, msg, acts);
        self.signal_run(i, pgid, signal, acts);
        let phase = Phase::Stopping(Stopping {
            pgid,
            leader: None,
            kill_at: Some(self.kill_deadline(i, now)),
            give_up_at: None,
            then: After::Policy {
                forced_failure: true,
            },
        });
        self.set_phase(i, phase, now, why.to_string(), acts);
    }
}

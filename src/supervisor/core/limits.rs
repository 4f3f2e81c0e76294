//! `[program.NAME.limits]`: a run's figures (read by the shell at the program's interval) and
//! the verdict on them. A run past a limit is stopped gracefully (`pre_stop`, its stop signal,
//! its timeout) as a failed run: its end goes through the restart policy like a crash (it counts
//! toward the budget, under the cause `limit`; exhausting it exits the container), with a crash
//! report that names the limit and the figure.

use std::time::Instant;

use super::{Action, Core};
use crate::config::limits::Limits;
use crate::supervisor::core::notices;
use crate::supervisor::core::program::{After, Measured, Phase};

impl Core {
    /// Run `run` of program `i` was measured.
    pub(super) fn measured(
        &mut self,
        i: usize,
        run: u64,
        figures: Measured,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let p = &mut self.programs[i];
        if p.run != run || !matches!(p.phase, Phase::Starting { .. } | Phase::Running { .. }) {
            return;
        }
        let Some(limits) = p.spec.limits.clone() else {
            return;
        };
        p.measured = Some((figures, now));
        // Once past a limit the run is on its way down; a program stopped on purpose (a
        // shutdown, by hand) is not restarted for it.
        if p.over_limit.is_some() || !p.wants_up() {
            return;
        }
        let Some(over) = over_limit(&limits, &figures) else {
            return;
        };
        p.over_limit = Some(over.clone());
        p.watchdog_due = None;
        let then = After::Policy {
            forced_failure: true,
        };
        self.stop_live_run(i, then, notices::limit_restart(&over), now, acts);
    }
}

/// The first limit `figures` are past, as the state line says it: `memory 1.21 GiB over
/// 1 GiB`, `fds 20113 over 20000`.
pub(super) fn over_limit(limits: &Limits, figures: &Measured) -> Option<String> {
    if let (Some(limit), Some(used)) = (limits.memory, figures.memory_bytes)
        && used > limit
    {
        return Some(format!(
            "memory {} over {}",
            notices::fmt_bytes(used),
            notices::fmt_bytes(limit)
        ));
    }
    if let (Some(limit), Some(used)) = (limits.fds, figures.fds)
        && used > limit
    {
        return Some(format!("fds {used} over {limit}"));
    }
    None
}

//! `[program.NAME.limits]` in the owner loop: each guarded run is measured at its interval
//! (its cgroup's `memory.current` where it has one with the memory controller, else the
//! resident memory of its processes from `/proc`; descriptors always from `/proc`, which is the
//! only place that counts them) and the figures go to the core, which decides. Only a live
//! guarded run sets a deadline: with no limits configured the loop has no more wake-ups than
//! before. The hard limits (`memory_max`, `pids_max`) are written into a run's cgroup as it
//! starts, where it has one with the controller.

use std::collections::HashMap;

use super::*;
use crate::config::limits::Limits;
use crate::supervisor::core::program::{Measured, Program};
use crate::sys::usage;

/// The limits of a program whose run is live and guarded.
fn guarded(p: &Program) -> Option<&Limits> {
    let limits = p.spec.limits.as_ref().filter(|l| l.guarded())?;
    matches!(
        p.phase,
        crate::supervisor::core::program::Phase::Starting { .. }
            | crate::supervisor::core::program::Phase::Running { .. }
    )
    .then_some(limits)
}

impl Runner {
    /// When the next guarded run is to be measured; `None` when no guarded run is live (then
    /// the loop does not wake for guards at all). A run first seen is measured one interval
    /// after.
    pub(super) fn guard_deadline(&mut self) -> Option<Instant> {
        let programs = self.core.programs();
        if self.guards_due.is_empty() && !programs.iter().any(|p| guarded(p).is_some()) {
            return None;
        }
        let now = Instant::now();
        let mut live = HashMap::with_capacity(self.guards_due.len());
        for p in programs {
            if let Some(limits) = guarded(p) {
                let due = match self.guards_due.get(&p.id) {
                    Some(&(run, at)) if run == p.run => at,
                    _ => now + limits.interval,
                };
                live.insert(p.id, (p.run, due));
            }
        }
        self.guards_due = live;
        self.guards_due.values().map(|&(_, at)| at).min()
    }

    /// Measures every guarded run that is due and hands the figures to the core; says whether
    /// that was routine (nothing announced, as for a passing check: the release of cold memory
    /// is not put off by it).
    pub(super) fn on_guard_timer(&mut self) -> bool {
        let seq = self.seq;
        let now = Instant::now();
        let due: Vec<(ProgramId, u64)> = self
            .guards_due
            .iter()
            .filter(|(_, (_, at))| *at <= now)
            .map(|(&id, &(run, _))| (id, run))
            .collect();
        for (id, run) in due {
            let Some(p) = self.core.program(id).filter(|p| p.run == run) else {
                continue;
            };
            let Some(limits) = guarded(p) else {
                continue;
            };
            let next = now + limits.interval;
            let figures = self.measure(p, limits);
            self.guards_due.insert(id, (run, next));
            self.feed(Input::Measured { id, run, figures });
        }
        self.seq == seq
    }

    /// What run `p`'s processes use now (only the figures it has limits for).
    fn measure(&self, p: &Program, limits: &Limits) -> Measured {
        let mut m = Measured::default();
        let Some(r) = tracking::run_of(p) else {
            return m;
        };
        let group = self.tracking.group_dir(p.name());
        if limits.memory.is_some()
            && let Some(bytes) = group.and_then(|d| usage::cgroup_number(d, "memory.current"))
        {
            m.memory_bytes = Some(bytes);
            m.from_cgroup = true;
        }
        let pids = self.tracking.members(r, &|pid| self.core.owns_pid(pid));
        m.processes = Some(pids.len() as u64);
        if limits.memory.is_some() && !m.from_cgroup {
            m.memory_bytes = Some(pids.iter().filter_map(|&pid| usage::rss_bytes(pid)).sum());
        }
        if limits.fds.is_some() {
            m.fds = Some(pids.iter().filter_map(|&pid| usage::fd_count(pid)).sum());
        }
        m
    }

    /// Writes program `name`'s hard limits into its run's cgroup, where it has one; says once
    /// a run where that cannot be done (no group, or no controller).
    pub(super) fn apply_hard_limits(&self, name: &str, limits: &Limits) {
        let wanted = [
            ("memory.max", limits.memory_max),
            ("pids.max", limits.pids_max),
        ];
        for (file, value) in wanted {
            let Some(value) = value else {
                continue;
            };
            let written = match self.tracking.group_dir(name) {
                Some(dir) => usage::set_cgroup_max(dir, file, value).map_err(|e| e.to_string()),
                None => Err(format!(
                    "it has no cgroup ({} tracking)",
                    self.tracking.mode()
                )),
            };
            if let Err(e) = written {
                warn!(
                    "{name}: cannot set {file} = {value}: {e}; only the limits ctrlinit reads \
                     (memory, fds) guard it"
                );
            }
        }
    }
}

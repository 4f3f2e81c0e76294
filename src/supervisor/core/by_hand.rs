//! Changes asked for by hand (`ctrlinit start|stop|restart|signal`): no backoff, not counted
//! against the budget. Which programs a change takes along is decided here once, for the core
//! and for the control plane's answer (what the command waits for).

use std::time::Instant;

use nix::sys::signal::Signal;

use super::{Action, Core};
use crate::model::ProgramId;
use crate::supervisor::core::notices;
use crate::supervisor::core::program::{DownReason, Phase, Target};

impl Core {
    /// What a stop by hand of `ids` stops: each of them and everything that depends on them,
    /// transitively (stopped first), each once.
    pub fn stopped_with(&self, ids: &[ProgramId]) -> Vec<ProgramId> {
        let mut set = Vec::new();
        for &id in ids.iter().filter(|id| self.positions.contains_key(id)) {
            for j in self.dependents_closure(id) {
                if !set.contains(&j) {
                    set.push(j);
                }
            }
        }
        set
    }

    /// What a restart by hand of `ids` restarts: each of them and their dependents,
    /// transitively, except dependents parked on purpose (stopped by hand, `autostart = false`),
    /// whose stop an operator's restart must not undo.
    pub fn restarted_with(&self, ids: &[ProgramId]) -> Vec<ProgramId> {
        let mut set = Vec::new();
        for &id in ids.iter().filter(|id| self.positions.contains_key(id)) {
            for j in self.dependents_closure(id) {
                let parked = matches!(
                    self.programs[self.pos(j)].target,
                    Target::Down(DownReason::Manual | DownReason::Autostart)
                );
                if (j == id || !parked) && !set.contains(&j) {
                    set.push(j);
                }
            }
        }
        set
    }

    /// What a start by hand of `ids` brings up besides them: their dependencies, transitively,
    /// that are not meant to be up, each once.
    pub fn started_with(&self, ids: &[ProgramId]) -> Vec<ProgramId> {
        let mut along = Vec::new();
        for &id in ids.iter().filter(|id| self.positions.contains_key(id)) {
            for j in self.deps_closure(id) {
                let wanted = self.programs[self.pos(j)].wants_up();
                if !ids.contains(&j) && !wanted && !along.contains(&j) {
                    along.push(j);
                }
            }
        }
        along
    }

    /// The dependents a stop by hand of some of `ids` took along and that are still down by
    /// that stop: a start of `ids` brings them back, as `systemctl start` after a `stop` that
    /// took dependents would be expected to. Each once, not among `ids`.
    pub fn brought_back_with(&self, ids: &[ProgramId]) -> Vec<ProgramId> {
        let mut back = Vec::new();
        for id in ids {
            for &j in self.taken_along.get(id).into_iter().flatten() {
                let still_down = self.positions.contains_key(&j)
                    && self.programs[self.pos(j)].target == Target::Down(DownReason::Manual);
                if still_down && !ids.contains(&j) && !back.contains(&j) {
                    back.push(j);
                }
            }
        }
        back
    }

    pub(super) fn start_by_hand(
        &mut self,
        ids: &[ProgramId],
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        if self.shutdown.is_some() {
            return;
        }
        let mut known: Vec<ProgramId> = ids
            .iter()
            .copied()
            .filter(|id| self.positions.contains_key(id))
            .collect();
        known.extend(self.brought_back_with(&known));
        // What is started now is no longer down by anyone's stop.
        for id in &known {
            self.taken_along.remove(id);
        }
        for along in self.taken_along.values_mut() {
            along.retain(|j| !known.contains(j));
        }
        self.taken_along.retain(|_, along| !along.is_empty());
        for id in known {
            let i = self.pos(id);
            for j in self.graph.deps_closure(i) {
                let p = &mut self.programs[j];
                // A dependency that completed stays completed; only the named program reruns.
                if j != i && p.phase == Phase::Completed {
                    continue;
                }
                let already_up =
                    p.target == Target::Up && (p.phase.is_live() || p.phase == Phase::Waiting);
                if already_up {
                    continue;
                }
                p.target = Target::Up;
                p.history.reset();
                if !p.phase.is_live() {
                    let why = notices::STARTED_BY_HAND.into();
                    self.set_phase(j, Phase::Waiting, now, why, acts);
                }
            }
        }
        self.restart_sets
            .retain(|set| !set.iter().any(|m| ids.contains(m)));
        // Programs taken in hand leave their propagated restart; the rest of it goes on.
        for (_, set) in &mut self.propagated {
            set.retain(|m| !ids.contains(m));
        }
        self.propagated.retain(|(_, set)| !set.is_empty());
    }

    pub(super) fn stop_by_hand(&mut self, ids: &[ProgramId]) {
        if self.shutdown.is_some() {
            return;
        }
        for &id in ids.iter().filter(|id| self.positions.contains_key(id)) {
            // Dependents meant to be up (not parked, not a completed oneshot) are taken along;
            // a start of `id` brings them back.
            let along: Vec<ProgramId> = self
                .dependents_closure(id)
                .into_iter()
                .filter(|j| !ids.contains(j))
                .filter(|&j| {
                    let p = &self.programs[self.pos(j)];
                    p.target == Target::Up && p.phase != Phase::Completed
                })
                .collect();
            if !along.is_empty() {
                let taken = self.taken_along.entry(id).or_default();
                for j in along {
                    if !taken.contains(&j) {
                        taken.push(j);
                    }
                }
            }
        }
        for j in self.stopped_with(ids) {
            let j = self.pos(j);
            self.programs[j].target = Target::Down(DownReason::Manual);
        }
        self.restart_sets
            .retain(|set| !set.iter().any(|m| ids.contains(m)));
        // Programs taken in hand leave their propagated restart; the rest of it goes on.
        for (_, set) in &mut self.propagated {
            set.retain(|m| !ids.contains(m));
        }
        self.propagated.retain(|(_, set)| !set.is_empty());
    }

    pub(super) fn restart_by_hand(&mut self, ids: &[ProgramId]) {
        if self.shutdown.is_some() {
            return;
        }
        let mut set = self.restarted_with(ids);
        // What the restarted programs need comes up too.
        for &id in ids.iter().filter(|id| self.positions.contains_key(id)) {
            for j in self.deps_closure(id) {
                if self.programs[self.pos(j)].target != Target::Up && !set.contains(&j) {
                    set.push(j);
                }
            }
        }
        for &j in &set {
            let p = &mut self.programs[self.positions[&j]];
            p.target = Target::Down(DownReason::Restart);
            if p.phase.is_live() {
                p.forced_restarts += 1;
                p.causes.manual += 1;
            }
        }
        self.restart_sets.push(set);
    }

    pub(super) fn signal_by_hand(&mut self, i: usize, signal: Signal, acts: &mut Vec<Action>) {
        if let Some(pgid) = self.programs[i].phase.pgid() {
            // To the group, as asked (its processes that left it are left alone).
            self.programs[i].signals_sent |= 1 << (signal as i32);
            acts.push(Action::Signal {
                pgid,
                signal,
                cont: true,
                run_of: None,
            });
        }
    }
}

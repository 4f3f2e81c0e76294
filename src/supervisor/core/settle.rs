//! Settling: after each input, targets are applied until nothing changes. What must stop stops
//! (dependents first), restart sets that are fully down come back, a pending reload switches,
//! what may start starts, and programs left waiting are announced.

use std::time::Instant;

use super::{Action, Core, Level};
use crate::config::{Condition, Kind};
use crate::model::State;
use crate::supervisor::core::notices;
use crate::supervisor::core::program::{DownReason, Phase, Program, Target};

/// Whether `dep` meets `condition` now.
fn condition_holds(dep: &Program, condition: Condition) -> bool {
    match condition {
        Condition::Started => matches!(
            dep.phase,
            Phase::Starting { .. }
                | Phase::Forked { .. }
                | Phase::Running { .. }
                | Phase::Completed
        ),
        Condition::Ready => matches!(dep.phase, Phase::Running { .. } | Phase::Completed),
        Condition::Completed => dep.phase == Phase::Completed,
    }
}

impl Core {
    /// Applies targets until nothing changes: stops what must stop (dependents first), brings
    /// back restart sets that are fully down, spawns what may start, and exits when shut down.
    pub(super) fn settle(&mut self, now: Instant, acts: &mut Vec<Action>) {
        loop {
            let mut changed = false;
            for i in 0..self.programs.len() {
                changed |= self.settle_down(i, now, acts);
            }
            changed |= self.release_restart_sets(now, acts);
            changed |= self.advance_propagated(now, acts);
            changed |= self.apply_reload_when_ready(now, acts);
            if !changed {
                break;
            }
        }
        if self.shutdown.is_none() {
            for i in 0..self.programs.len() {
                self.settle_up(i, now, acts);
            }
        }
        self.check_exit(acts);
    }

    /// For a program meant to be down: returns whether its phase changed.
    fn settle_down(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) -> bool {
        let Target::Down(reason) = self.programs[i].target else {
            return false;
        };
        let keep_outcome = reason == DownReason::Shutdown || reason == DownReason::Exhausted;
        match self.programs[i].phase {
            Phase::Waiting | Phase::Backoff { .. } => {
                self.set_phase(i, Phase::Stopped, now, reason.as_str().into(), acts);
                true
            }
            Phase::Exited | Phase::Completed | Phase::Exhausted if !keep_outcome => {
                self.set_phase(i, Phase::Stopped, now, reason.as_str().into(), acts);
                true
            }
            Phase::Starting { .. } | Phase::Forked { .. } | Phase::Running { .. } => {
                // What requires it, and what is ordered after it (`after`), stop first when
                // they stop too.
                let blocked = self
                    .graph
                    .dependents(i)
                    .iter()
                    .chain(self.graph.before(i))
                    .any(|&d| self.programs[d].phase.is_live() && !self.programs[d].wants_up());
                if blocked {
                    return false;
                }
                let why = match reason {
                    DownReason::Shutdown => notices::CONTAINER_STOPPING.to_string(),
                    other => other.as_str().to_string(),
                };
                self.begin_stop(i, now, why, acts);
                true
            }
            _ => false,
        }
    }

    /// Propagated restarts: each member still running is stopped once no member that depends
    /// on it is alive (dependents first); a set whose members are all down is done, and its
    /// members (held in `waiting` meanwhile) may start again. Their budgets are untouched: a
    /// forced restart is not counted against them.
    fn advance_propagated(&mut self, now: Instant, acts: &mut Vec<Action>) -> bool {
        let mut changed = false;
        for k in 0..self.propagated.len() {
            let (cause, set) = self.propagated[k].clone();
            for &id in &set {
                let i = self.pos(id);
                let running = matches!(
                    self.programs[i].phase,
                    Phase::Starting { .. } | Phase::Forked { .. } | Phase::Running { .. }
                );
                let blocked = self.graph.dependents(i).iter().any(|&d| {
                    set.contains(&self.programs[d].id) && self.programs[d].phase.is_live()
                });
                if running && !blocked && self.programs[i].wants_up() {
                    self.begin_stop(i, now, notices::restarting_because(&cause), acts);
                    changed = true;
                }
            }
        }
        let before = self.propagated.len();
        let programs = &self.programs;
        let positions = &self.positions;
        self.propagated
            .retain(|(_, set)| set.iter().any(|id| programs[positions[id]].phase.is_live()));
        changed | (self.propagated.len() != before)
    }

    /// Whether program `i` waits for the rest of a propagated restart to be down.
    fn held_by_propagation(&self, i: usize) -> bool {
        let id = self.programs[i].id;
        self.propagated.iter().any(|(_, set)| set.contains(&id))
    }

    fn release_restart_sets(&mut self, now: Instant, acts: &mut Vec<Action>) -> bool {
        let ready: Vec<usize> = self
            .restart_sets
            .iter()
            .enumerate()
            .filter(|(_, set)| {
                set.iter()
                    .all(|id| !self.programs[self.pos(*id)].phase.is_live())
            })
            .map(|(k, _)| k)
            .collect();
        if ready.is_empty() {
            return false;
        }
        for k in ready.into_iter().rev() {
            let set = self.restart_sets.remove(k);
            for id in set {
                let j = self.pos(id);
                let p = &mut self.programs[j];
                if p.target == Target::Down(DownReason::Restart) {
                    p.target = Target::Up;
                    p.history.reset();
                    let why = notices::RESTARTED_BY_HAND.into();
                    self.set_phase(j, Phase::Waiting, now, why, acts);
                }
            }
        }
        true
    }

    /// For a waiting program meant to be up: spawn it when its dependencies hold.
    fn settle_up(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let p = &self.programs[i];
        if !p.wants_up() || p.phase != Phase::Waiting || self.held_by_propagation(i) {
            return;
        }
        match self.unmet_dependency(i) {
            None => {
                let p = &mut self.programs[i];
                p.waiting_for = None;
                p.run += 1;
                acts.push(Action::Spawn { id: p.id });
                self.set_phase(i, Phase::Spawning, now, String::new(), acts);
            }
            Some((dep, why)) => {
                let p = &mut self.programs[i];
                if p.waiting_for.as_deref() != Some(dep.as_str()) {
                    p.waiting_for = Some(dep);
                    p.waiting_why = Some(why.clone());
                    // Once it has been said to wait, say what it waits for next; the first
                    // time, the announced change to `waiting` says it.
                    if p.announced == State::Waiting {
                        let msg = notices::waiting_for(p.name(), &why);
                        self.notice(Some(i), Level::Info, None, msg, acts);
                    }
                }
            }
        }
    }

    /// The first dependency of program `i` that does not hold, or the first program it is
    /// ordered after that is still coming up: its name and a description.
    fn unmet_dependency(&self, i: usize) -> Option<(String, String)> {
        if let Some(unmet) = self.unmet_external(i) {
            return Some(unmet);
        }
        self.unmet_requirement(i).or_else(|| {
            let &t = self
                .graph
                .after(i)
                .iter()
                .find(|&&t| self.coming_up(t, 0))?;
            let dep = &self.programs[t];
            let why = notices::unmet_dependency(dep.name(), "started", dep.state(), None);
            Some((dep.name().to_string(), why))
        })
    }

    /// Whether program `t` is on its way to starting: meant to be up, not spawned yet, and
    /// every requirement it waits for on its way up too. What `after` waits for: a program
    /// that is down (stopped, exited, exhausted, in backoff) or held by one that is, is not
    /// waited for.
    fn coming_up(&self, t: usize, depth: usize) -> bool {
        let p = &self.programs[t];
        if !p.wants_up() || !matches!(p.phase, Phase::Waiting | Phase::Spawning) {
            return false;
        }
        if depth > self.programs.len() {
            return false; // a cycle; validation refuses one
        }
        self.graph.deps(t).iter().all(|e| {
            let dep = &self.programs[e.on];
            condition_holds(dep, e.condition)
                || matches!(dep.phase, Phase::Starting { .. } | Phase::Forked { .. })
                || self.coming_up(e.on, depth + 1)
        })
    }

    /// The first requirement (`depends_on`) of program `i` that does not hold.
    fn unmet_requirement(&self, i: usize) -> Option<(String, String)> {
        self.graph.deps(i).iter().find_map(|e| {
            let dep = &self.programs[e.on];
            if condition_holds(dep, e.condition) {
                return None;
            }
            let want = match (e.condition, dep.spec.kind) {
                (Condition::Started, _) => "started",
                (Condition::Ready, Kind::Service) => "ready",
                (_, _) => "completed",
            };
            let reason = match dep.target {
                Target::Down(r) if dep.state() == State::Stopped => Some(r.as_str()),
                _ => None,
            };
            let why = notices::unmet_dependency(dep.name(), want, dep.state(), reason);
            Some((dep.name().to_string(), why))
        })
    }

    /// Announces the programs left waiting by this decision (a program that waited only on its
    /// way to `starting` is never said to wait).
    pub(super) fn announce_waiting(&mut self, acts: &mut Vec<Action>) {
        for i in 0..self.programs.len() {
            let p = &self.programs[i];
            if p.state() != State::Waiting || p.announced == State::Waiting {
                continue;
            }
            // Said as things stand once the whole decision is made (a dependency checked
            // earlier in it may have been spawned since).
            if let Some((dep, why)) = self.unmet_dependency(i) {
                self.programs[i].waiting_for = Some(dep);
                self.programs[i].waiting_why = Some(why);
            }
            let why = self.programs[i]
                .waiting_why
                .as_deref()
                .map_or_else(String::new, notices::waits_for);
            self.announce(i, State::Waiting, why, Level::Info, acts);
        }
    }
}

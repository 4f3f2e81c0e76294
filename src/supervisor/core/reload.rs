//! Reload: programs removed or changed by a new configuration are stopped (dependents first);
//! once they are down, the core switches to it, keeping every other program, its id, state and
//! run as they are.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::{Action, Core, Level, PendingReload};
use crate::config::graph::Graph;
use crate::config::{Config, ProgramSpec};
use crate::supervisor::core::notices;
use crate::supervisor::core::program::{DownReason, Phase, Program, Target};

/// Whether two specs run the same thing (where they were defined does not matter).
fn same_spec(a: &ProgramSpec, b: &ProgramSpec) -> bool {
    let mut a = a.clone();
    a.defined_at.clone_from(&b.defined_at);
    a == *b
}

/// Whether `p` is on its way out of the configuration (removed, or changed and replaced).
fn leaving(p: &Program) -> bool {
    matches!(
        p.target,
        Target::Down(DownReason::Removed | DownReason::Changed)
    )
}

impl Core {
    /// What a reload to `config` would add, remove and change, as one line.
    pub fn reload_summary(&self, config: &Config) -> String {
        let (added, removed, changed) = self.diff(config);
        // Opened or bound once at start: say so rather than seem to apply them.
        let (old, new) = (&self.init, &config.init);
        let fixed: Vec<&str> = [
            ("log_dir", old.log_dir != new.log_dir),
            ("crash_dir", old.crash_dir != new.crash_dir),
            ("socket", old.socket != new.socket),
            ("socket_group", old.socket_group != new.socket_group),
            ("http", old.http != new.http),
            (
                "notify_socket",
                old.notify_socket_path() != new.notify_socket_path(),
            ),
        ]
        .into_iter()
        .filter_map(|(key, differs)| differs.then_some(key))
        .collect();
        let unchanged = config.programs.len() - added.len() - changed.len();
        notices::reload_summary(&added, &removed, &changed, unchanged, &fixed)
    }

    /// Names added, removed and changed by `config`.
    fn diff(&self, config: &Config) -> (Vec<String>, Vec<String>, Vec<String>) {
        let mut removed = Vec::new();
        let mut changed = Vec::new();
        for p in &self.programs {
            match config.program(p.name()) {
                None => removed.push(p.name().to_string()),
                Some(spec) if !same_spec(spec, &p.spec) => changed.push(p.name().to_string()),
                Some(_) => {}
            }
        }
        let added = config
            .programs
            .iter()
            .filter(|p| self.id_of(&p.name).is_none())
            .map(|p| p.name.clone())
            .collect();
        (added, removed, changed)
    }

    pub(super) fn begin_reload(&mut self, config: Config, acts: &mut Vec<Action>) {
        if self.shutdown.is_some() {
            return;
        }
        let msg = notices::reloading(&self.reload_summary(&config));
        let (_, removed, changed) = self.diff(&config);
        for p in &mut self.programs {
            if removed.iter().any(|n| n == p.name()) {
                p.target = Target::Down(DownReason::Removed);
            } else if changed.iter().any(|n| n == p.name()) {
                p.target = Target::Down(DownReason::Changed);
            }
        }
        self.notice(None, Level::Info, None, msg, acts);
        self.pending_reload = Some(PendingReload { config });
    }

    /// Switches to the new configuration once removed and changed programs are down.
    pub(super) fn apply_reload_when_ready(&mut self, now: Instant, acts: &mut Vec<Action>) -> bool {
        if self.pending_reload.is_none()
            || self
                .programs
                .iter()
                .any(|p| leaving(p) && p.phase.is_live())
        {
            return false;
        }
        let Some(PendingReload { config }) = self.pending_reload.take() else {
            return false;
        };
        let mut kept: HashMap<String, Program> = HashMap::new();
        for p in std::mem::take(&mut self.programs) {
            if leaving(&p) {
                self.registry.retire(p.name(), p.run);
            } else {
                kept.insert(p.name().to_string(), p);
            }
        }
        let mut fresh = Vec::new();
        for spec in &config.programs {
            let p = match kept.remove(&spec.name) {
                Some(mut p) => {
                    p.spec = Arc::clone(spec);
                    p
                }
                None => {
                    let (id, run) = self.registry.id_for(&spec.name);
                    fresh.push(id);
                    Program::new(id, Arc::clone(spec), run, now)
                }
            };
            self.programs.push(p);
        }
        self.index_positions();
        self.graph = Graph::new(&config.programs);
        self.init = config.init.clone();
        self.reload_externals(&config.externals, now);
        // Restarts by hand under way survive the switch, without the programs that left.
        let positions = &self.positions;
        for set in &mut self.restart_sets {
            set.retain(|id| positions.contains_key(id) && !fresh.contains(id));
        }
        self.restart_sets.retain(|set| !set.is_empty());
        for (_, set) in &mut self.propagated {
            set.retain(|id| positions.contains_key(id) && !fresh.contains(id));
        }
        self.propagated.retain(|(_, set)| !set.is_empty());
        acts.push(Action::Reloaded);
        for id in fresh {
            let i = self.pos(id);
            if self.programs[i].spec.autostart {
                self.programs[i].target = Target::Up;
                let why = notices::NEW_BY_RELOAD.into();
                self.set_phase(i, Phase::Waiting, now, why, acts);
            }
        }
        true
    }
}

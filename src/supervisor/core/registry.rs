//! Program ids: one per program name, for as long as ctrlinit runs.

use std::collections::HashMap;

use crate::model::ProgramId;

/// Hands out ids by name and remembers, for names that left the configuration, their last run
/// number, so a name that comes back keeps its id and never reuses a run number (a late
/// readiness result for an old run is then never taken for a new one).
#[derive(Debug, Default)]
pub(super) struct Registry {
    ids: HashMap<String, (ProgramId, u64)>,
}

impl Registry {
    /// The id of `name` (a new one the first time) and the last run number it had.
    pub(super) fn id_for(&mut self, name: &str) -> (ProgramId, u64) {
        let next = ProgramId::from_index(self.ids.len() as u32);
        *self.ids.entry(name.to_string()).or_insert((next, 0))
    }

    /// The id `name` has had, if it ever had one (in the configuration now or not).
    pub(super) fn known(&self, name: &str) -> Option<ProgramId> {
        self.ids.get(name).map(|&(id, _)| id)
    }

    /// `name` leaves the configuration after run `run`.
    pub(super) fn retire(&mut self, name: &str, run: u64) {
        if let Some(entry) = self.ids.get_mut(name) {
            entry.1 = run;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_per_name_and_never_reused() {
        let mut r = Registry::default();
        let (a, _) = r.id_for("a");
        let (b, _) = r.id_for("b");
        assert_ne!(a, b);
        r.retire("a", 7);
        assert_eq!(
            r.id_for("a"),
            (a, 7),
            "a name that comes back keeps its id and runs"
        );
        let (c, _) = r.id_for("c");
        assert!(c != a && c != b);
    }
}

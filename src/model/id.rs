//! Program identities that do not move: a program's place in a list changes when a reload adds
//! or removes others; its [`ProgramId`] does not.

use std::fmt;

/// A program's identity for as long as ctrlinit runs: allocated once per program name (the first
/// time the name appears in a configuration) and never given to another name, so a reload that
/// adds, removes or changes other programs leaves it, and everything keyed by it (readiness
/// checks in flight, restart sets), alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProgramId(u32);

impl ProgramId {
    /// The id numbered `n` (ids are handed out in order by the supervisor's registry).
    pub fn from_index(n: u32) -> Self {
        ProgramId(n)
    }

    /// The number it was allocated with: a key for tables indexed by id, not a position in the
    /// program list.
    pub fn index(self) -> u32 {
        self.0
    }
}

impl fmt::Display for ProgramId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

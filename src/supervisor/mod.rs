//! Supervision: the pure lifecycle and restart policy ([`core`], [`policy`], [`program`]) and the
//! owner loop that carries out its decisions ([`runner`]).

mod control;
pub mod core;
pub mod policy;
pub mod program;
pub mod readiness;
pub mod runner;
pub mod state;

pub use self::core::{Action, Core, Input, Level, Notice};
pub use program::{DownReason, Phase, Program, Target};
pub use state::State;

#[cfg(test)]
mod core_tests;

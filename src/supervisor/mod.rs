//! Supervision: the pure lifecycle and restart policy ([`core`], [`policy`], [`program`],
//! [`transitions`], with its words in [`notices`]) and the owner loop that carries out its
//! decisions ([`runner`]), with the rooms it delegates to: [`launch`] (starting processes),
//! [`probes`] (every readiness check), [`control`] (requests and their answers).

pub mod control;
pub mod core;
pub mod events;
mod idle;
mod launch;
pub mod notices;
pub mod policy;
mod probes;
pub mod program;
pub mod runner;
pub mod transitions;

pub use self::core::{Action, Core, Input, Level, Notice};
pub use program::{DownReason, Phase, Program, Target};

#[cfg(test)]
mod core_tests;

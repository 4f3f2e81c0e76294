//! Supervision: the pure lifecycle and restart policy ([`core`], [`policy`], [`program`],
//! [`transitions`], with its words in [`notices`]) and the owner loop that carries out its
//! decisions ([`runner`]), with the rooms it delegates to: [`launch`] (starting processes),
//! [`probes`] (every readiness check), [`control`] (requests and their answers).

mod adopted;
mod check_events;
mod check_io;
pub mod control;
pub mod core;
pub mod events;
pub mod health;
mod health_checks;
mod http_get;
mod idle;
mod launch;
pub mod notices;
mod notify_intake;
pub mod notify_message;
pub mod policy;
mod probes;
pub mod program;
pub mod runner;
pub mod telemetry;
mod tracking;
pub mod transitions;
mod upward;
mod wiring;

pub use self::core::{Action, Core, Input, Level, Notice};
pub use program::{DownReason, Phase, Program, Target};

#[cfg(test)]
mod core_tests;

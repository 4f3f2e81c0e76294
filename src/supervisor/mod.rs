//! Supervision: the pure lifecycle and restart policy ([`core`], [`policy`], [`program`],
//! [`transitions`], with its words in [`notices`]) and the owner loop that carries out its
//! decisions ([`runner`]), with the rooms it delegates to: [`launch`] (starting processes),
//! [`checks`] (every readiness, liveness and external check), [`notify`] (sd_notify in and out), [`watch`] (the container's network),
//! [`control`] (requests and their answers).

mod adopted;
pub mod checks;
pub mod control;
pub mod core;
pub mod events;
pub mod external;
mod idle;
mod launch;
pub(crate) mod ledger;
mod listed;
pub mod notices;
pub mod notify;
pub mod policy;
pub mod program;
pub mod runner;
pub mod telemetry;
mod tracking;
pub mod transitions;
pub mod watch;
mod wiring;

pub use self::core::{Action, Core, Input, Level, Notice};
pub use external::{External, ExternalState};
pub use program::{DownReason, Phase, Program, Target};

#[cfg(test)]
mod core_tests;

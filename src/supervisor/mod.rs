//! Supervision: the pure lifecycle and restart policy ([`core`], which holds its vocabulary
//! too: programs, policy, transitions, notices, the external and health words) and the owner loop that carries out its
//! decisions ([`runner`]), with the rooms it delegates to: [`launch`] (starting processes),
//! [`checks`] (every readiness, liveness and external check), [`notify`] (sd_notify in and out), [`watch`] (the container's network),
//! [`control`] (requests and their answers).

mod adopted;
pub mod checks;
pub mod control;
pub mod core;
pub mod events;
mod idle;
mod launch;
pub(crate) mod ledger;
mod listed;
pub mod notify;
pub mod runner;
pub mod telemetry;
mod tracking;
pub mod watch;
mod wiring;

pub use self::core::external::{External, ExternalState};
pub use self::core::program::{DownReason, Phase, Program, Target};
pub use self::core::{Action, Core, Input, Level, Notice};

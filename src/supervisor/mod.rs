//! Supervision: the pure lifecycle and restart policy ([`core`], which holds its vocabulary
//! too: programs, policy, transitions, notices, the external and health words) and the owner loop that carries out its
//! decisions ([`runner`]), with the rooms it delegates to: [`processes`] (a run's processes:
//! starting, tracking and listing them),
//! [`checks`] (every readiness, liveness and external check), [`notify`] (sd_notify in and out), [`watch`] (the container's network),
//! [`control`] (requests and their answers).

pub mod checks;
pub mod control;
pub mod core;
pub mod events;
mod idle;
pub(crate) mod ledger;
pub mod notify;
pub(crate) mod processes;
pub mod runner;
pub mod telemetry;
pub mod watch;

pub use self::core::external_record::{External, ExternalState};
pub use self::core::program::{DownReason, Phase, Program, Target};
pub use self::core::{Action, Core, Input, Level, Notice};

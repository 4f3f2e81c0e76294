//! Process creation and program environments. Spawning happens only here.

mod child;
mod env;
mod pipes;
mod spawn;

pub use child::Grouping;
pub use child::exec_failure_status;
pub use env::program_env;
pub use pipes::output_pipes;
pub use spawn::{Launch, Output, SpawnError, Spawned, spawn};

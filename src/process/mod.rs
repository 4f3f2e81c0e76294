//! Process creation and program environments. Spawning happens only here.

mod child;
mod env;
mod pipes;
mod spawn;

pub use child::Grouping;
pub use child::exec_failure_status;
pub use env::{ENV_FILE_CAP, program_env, read_env_file};
pub use pipes::output_pipes;
pub use spawn::{Launch, Output, SpawnError, Spawned, spawn};

//! Process creation, program environments and the exit type. Spawning happens only here.

mod child;
mod env;
mod exit;
mod pipes;
mod spawn;

pub use env::{program_env, read_env_file};
pub use exit::Exit;
pub use pipes::output_pipes;
pub use spawn::{Launch, Output, SpawnError, Spawned, exec_failure_status, spawn};

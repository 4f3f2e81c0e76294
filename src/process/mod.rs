//! Process creation and program environments. Spawning happens only here.

mod child;
mod env;
mod into_cgroup;
mod pipes;
mod slots;
mod spawn;

pub use child::Grouping;
pub use child::exec_failure_status;
pub use env::program_env;
pub use into_cgroup::can_clone_into;
pub use pipes::output_pipes;
pub use slots::reserve_spawn_slots;
pub use spawn::{Launch, Output, SpawnError, Spawned, spawn};

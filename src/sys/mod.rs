//! The PID-1 system layer: reaper role, signals through a signalfd, reaping, stray processes.
//! Every `unsafe` here carries a `// SAFETY:` note.

pub mod cgroups;
pub mod files;
pub mod init;
pub mod memory;
pub mod reap;
pub mod signals;
pub mod users;

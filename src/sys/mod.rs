//! The PID-1 system layer: reaper role, signals through a signalfd, reaping, stray processes.
//! Every `unsafe` here carries a `// SAFETY:` note.

pub mod ancestry;
pub mod boot;
pub mod cgroup2;
pub mod cgroups;
pub mod files;
pub mod init;
pub mod memory;
pub mod netlink;
pub mod nofile;
pub mod notify_socket;
pub mod proc_listing;
pub mod procs;
pub mod reap;
pub mod scm;
pub mod self_usage;
pub mod signals;
pub mod socket_file;
pub mod stamps;
pub mod syslog_socket;
pub mod timer;
pub mod tty;
pub mod usage;
pub mod users;

//! ctrlinit: an init and process supervisor for multi-process containers.
//!
//! The binary (`src/main.rs`) is a thin shell over this library. Dependencies run one way, from
//! the command line down to the operating system, with no arrow back up:
//!
//! ```text
//! cli -> api -> supervisor -> {logs, crash, process} -> config -> {model, sys}
//! ```
//!
//! - [`model`]: the shared vocabulary (states, exits, signal names, program ids, the protocol);
//! - [`sys`]: the PID-1 system layer (reaper role, signalfd, reaping, users, memory);
//! - [`config`]: loading, schema, interpolation, units, the dependency graph of a config;
//! - [`process`]: the one place that creates processes;
//! - [`logs`]: program output and ctrlinit's own log: pumps, framing, sinks;
//! - [`crash`]: core patterns, crash reports, retention;
//! - [`supervisor`]: the pure lifecycle ([`supervisor::Core`]) and the owner loop;
//! - [`api`]: the control socket's transport and handlers, and its client;
//! - [`cli`]: rendering for the client commands;
//! - [`import`]: `ctrlinit import`, a supervisord configuration as ctrlinit's (it reads
//!   `config`, `model` and `sys`; only `main.rs` uses it).

#![warn(unreachable_pub, unsafe_op_in_unsafe_fn)]

pub mod api;
pub mod cli;
pub mod config;
pub mod crash;
pub mod import;
pub mod logs;
pub mod model;
pub mod process;
pub mod supervisor;
pub mod sys;

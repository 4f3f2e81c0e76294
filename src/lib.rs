//! ctrlinit: an init and process supervisor for multi-process containers.
//!
//! The binary (`src/main.rs`) is a thin shell over this library: configuration loading
//! ([`config`]), the dependency graph ([`graph`]), the pure lifecycle and the owner loop
//! ([`supervisor`]), process creation ([`process`]) and the PID-1 system layer ([`sys`]).

pub mod api;
pub mod cli;
pub mod config;
pub mod cores;
pub mod graph;
pub mod logs;
pub mod process;
pub mod supervisor;
pub mod sys;

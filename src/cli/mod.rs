//! The command line: arguments and the commands that do not talk to a running init.

pub mod args;
pub mod check;
pub mod ctl;
pub mod durations;
pub mod external_rows;
pub mod graph;
pub mod history;
mod history_read;
mod history_render;
pub mod history_summary;
pub mod network_line;
pub mod top;

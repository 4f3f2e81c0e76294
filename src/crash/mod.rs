//! Core dumps and crash reports.
//!
//! When a program dies of a signal ctrlinit did not send (or dumps core), the supervisor claims
//! the core at reap time ([`pattern`]), and the log thread, once the run's pipes are drained,
//! writes `<crash_dir>/<program>/<UTC time>-<pid>-<SIGNAME>.json` with its last lines and moves
//! the core next to it ([`report`]). [`retention`] keeps a crash loop from filling the host disk.

pub mod pattern;
pub mod report;
pub mod retention;

pub use pattern::{CorePattern, claim_core};
pub use report::{CrashInfo, DRAIN_WAIT, REPORT_DELAY, REPORT_LINES, Written, write_report};

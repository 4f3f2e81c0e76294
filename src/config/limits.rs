//! The `[program.NAME.limits]` table: guards a program is restarted by before the kernel's OOM
//! killer takes the container (`memory`, `fds`, looked at every `interval`), and hard kernel
//! limits on its cgroup where it has one with the controller (`memory_max`, `pids_max`). The
//! table is read by `limits_table`.

use std::time::Duration;

/// How often the figures are read when `interval` is not set.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// The shortest `interval`: reading `/proc` for a program's processes costs little, but not
/// nothing, and a leak is not a matter of milliseconds.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// The largest memory figure accepted (1 PiB): more is no limit on any machine, and a typo.
pub const MAX_BYTES: u64 = 1 << 50;

/// The largest descriptor count accepted (the kernel's `fs.nr_open` cannot exceed it).
pub const MAX_FDS: u64 = 1 << 30;

/// The largest `pids_max` (the kernel's `PID_MAX_LIMIT` on 64-bit).
pub const MAX_PIDS: u64 = 4_194_304;

/// A program's limits, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Resident memory of all the run's processes (or its cgroup's `memory.current`) past
    /// which it is restarted.
    pub memory: Option<u64>,
    /// Open descriptors across the run's processes past which it is restarted.
    pub fds: Option<u64>,
    /// How often the figures are read.
    pub interval: Duration,
    /// `memory.max` written into the program's cgroup (a hard kernel limit), where it has one
    /// with the memory controller.
    pub memory_max: Option<u64>,
    /// `pids.max` written into the program's cgroup, where it has one with the pids controller.
    pub pids_max: Option<u64>,
}

impl Limits {
    /// Whether anything must be read at the interval (`memory` or `fds`; the kernel limits
    /// need no looking).
    pub fn guarded(&self) -> bool {
        self.memory.is_some() || self.fds.is_some()
    }
}

//! When the memory the last burst of work used is handed back (see [`crate::sys::memory`]).

use std::time::Duration;

/// While work goes on without a pause long enough for a release, how often the heap is
/// trimmed all the same (`malloc_trim`, on the release thread; nothing else is dropped). Each
/// thread allocates from its own malloc arena, and bursts of restarts leave free chunks
/// scattered through them that only a trim returns: without it PID 1's RSS crept up through a
/// long storm while the memory in use stayed flat (issue 26). A trim costs well under a
/// millisecond of that thread's time, once a minute and only while busy: idle stays silent.
pub(crate) const TRIM_AMID_WORK: Duration = Duration::from_secs(60);

/// Whether, and after how much quiet, to hand back what idling does not use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColdMemory {
    /// Nothing ran since the last release but routine checks, whose few pages (a check cycle
    /// faults back about a MiB of code, 64 KiB windows at a time) are handed back as soon as
    /// the loop parks after each (`sys::memory::at_park`).
    Released,
    /// Start-up or a reload read the configuration: that code will not run again soon, so hand
    /// it back after a short quiet.
    AfterStartup,
    /// A restart, a request: likely to come again soon, and handing its pages back costs the
    /// next one minor faults (about 0.5 ms on a restart), so only after a long quiet.
    AfterWork,
}

impl ColdMemory {
    /// The quiet after which to release, if anything is to be released.
    pub(crate) fn quiet_before_release(self) -> Option<Duration> {
        match self {
            ColdMemory::Released => None,
            ColdMemory::AfterStartup => Some(Duration::from_millis(500)),
            ColdMemory::AfterWork => Some(Duration::from_secs(5)),
        }
    }
}

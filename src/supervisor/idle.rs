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
    /// Nothing ran since the last release.
    Released,
    /// Start-up or a reload read the configuration: that code will not run again soon, so hand
    /// it back after a short quiet.
    AfterStartup,
    /// A restart, a request: likely to come again soon, and handing its pages back costs the
    /// next one minor faults (about 0.5 ms on a restart), so only after a long quiet.
    AfterWork,
    /// Only routine liveness checks ran since the last release. A check touches little code,
    /// but the kernel maps code in 64 KiB windows, so a check cycle brings back about a MiB:
    /// handed back soon after each burst of checks, so an idle container with checks idles at
    /// the size of one without.
    AfterChecks,
}

impl ColdMemory {
    /// After a routine liveness check: what follows, and whether the check restarts the quiet
    /// (only a burst of checks does; a check never postpones the release real work waits for).
    pub(crate) fn after_check(self) -> (ColdMemory, bool) {
        match self {
            ColdMemory::Released | ColdMemory::AfterChecks => (ColdMemory::AfterChecks, true),
            other => (other, false),
        }
    }

    /// The quiet after which to release, if anything is to be released.
    pub(crate) fn quiet_before_release(self) -> Option<Duration> {
        match self {
            ColdMemory::Released => None,
            ColdMemory::AfterStartup | ColdMemory::AfterChecks => Some(Duration::from_millis(500)),
            ColdMemory::AfterWork => Some(Duration::from_secs(5)),
        }
    }
}

//! When the memory the last burst of work used is handed back (see [`crate::sys::memory`]).

use std::time::{Duration, Instant};

/// The least time between two releases while only routine checks run. Each release reads
/// `/proc/self/smaps` and the next check faults its code back (about a millisecond of CPU in
/// all): after every check of a hundred programs checked each second that would be a tenth of
/// a core. Checks this far apart or more (an external every 10 s) each have theirs at once.
pub(crate) const CHECK_RELEASE_GAP: Duration = Duration::from_secs(1);

/// Checks that end this soon after the one a release was asked for belong to its burst (two
/// externals on one interval end within a millisecond of each other) and are released the
/// same way, at the park: the release thread serves requests that come while it works with
/// the same release. Counted from the burst's first check, so a dense stream of checks does
/// not extend it.
pub(crate) const CHECK_BURST: Duration = Duration::from_millis(50);

/// While work goes on without a pause long enough for a release, how often the heap is
/// trimmed all the same (`malloc_trim`, on the release thread; nothing else is dropped). Each
/// thread allocates from its own malloc arena, and bursts of restarts leave free chunks
/// scattered through them that only a trim returns: without it PID 1's RSS crept up through a
/// long storm while the memory in use stayed flat. A trim costs well under a
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
    /// Routine checks came closer together than [`CHECK_RELEASE_GAP`] after the last
    /// release: one release at the gap's end covers them all.
    AfterChecks,
}

impl ColdMemory {
    /// When to release, if anything is to be released: a quiet after the last work, or the
    /// end of the gap after the last release.
    pub(crate) fn release_at(self, last_work: Instant, last_release: Instant) -> Option<Instant> {
        match self {
            ColdMemory::Released => None,
            ColdMemory::AfterStartup => Some(last_work + Duration::from_millis(500)),
            ColdMemory::AfterWork => Some(last_work + Duration::from_secs(5)),
            ColdMemory::AfterChecks => Some(last_release + CHECK_RELEASE_GAP),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_releases_after_its_own_quiet_or_gap() {
        let (work, release) = (Instant::now(), Instant::now() + Duration::from_secs(7));
        assert_eq!(ColdMemory::Released.release_at(work, release), None);
        assert_eq!(
            ColdMemory::AfterStartup.release_at(work, release),
            Some(work + Duration::from_millis(500))
        );
        assert_eq!(
            ColdMemory::AfterWork.release_at(work, release),
            Some(work + Duration::from_secs(5))
        );
        // Frequent checks: from the last release, not from the last work.
        assert_eq!(
            ColdMemory::AfterChecks.release_at(work, release),
            Some(release + CHECK_RELEASE_GAP)
        );
    }
}

//! Warnings for events a peer or a full descriptor table can repeat as fast as a loop turns (an
//! accept that fails with `EMFILE`, say): the first is said at once, the next at most once per
//! window, with how many were left unsaid. Pure: the caller gives the instant, so it is tested
//! with explicit instants and never fills the log.

use std::time::{Duration, Instant};

/// How often a repeated warning is said at most.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);

/// One kind of repeated warning.
#[derive(Debug, Default)]
pub(crate) struct Limited {
    said_at: Option<Instant>,
    unsaid: u64,
}

impl Limited {
    /// Whether to say this event now: `Some(n)` with the `n` left unsaid since the last one
    /// said, or `None` (counted, to be mentioned next time).
    pub(crate) fn allow(&mut self, now: Instant) -> Option<u64> {
        if self
            .said_at
            .is_some_and(|at| now.saturating_duration_since(at) < WINDOW)
        {
            self.unsaid += 1;
            return None;
        }
        self.said_at = Some(now);
        Some(std::mem::take(&mut self.unsaid))
    }
}

/// What to add to a warning that had `unsaid` repeats left unsaid.
pub(crate) fn unsaid_note(unsaid: u64) -> String {
    if unsaid == 0 {
        String::new()
    } else {
        format!(
            " ({unsaid} more since the last such warning, said at most every {}s)",
            WINDOW.as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_said_once_a_window_with_its_count() {
        let t0 = Instant::now();
        let mut l = Limited::default();
        assert_eq!(l.allow(t0), Some(0));
        // Every 50 ms for just under a window: nothing said.
        for k in 1..200 {
            assert_eq!(l.allow(t0 + Duration::from_millis(50 * k)), None);
        }
        assert_eq!(l.allow(t0 + WINDOW), Some(199));
        assert_eq!(l.allow(t0 + WINDOW * 3), Some(0));
        assert!(unsaid_note(199).contains("199 more"));
        assert_eq!(unsaid_note(0), "");
    }
}

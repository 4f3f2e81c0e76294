//! What a peer's watch stream may cost the init: its lines are counted against a rate an honest
//! peer never reaches, and only the ones that matter go on to the owner loop.
//!
//! An honest peer writes a line at each change of its program (a few per run) and one
//! keepalive per `interval`. Whatever answers at a peer's address may instead write valid lines
//! as fast as the socket takes them: each line is then parsed here and dropped unless it
//! changes what the check knows (boot, run, state or readiness), or is the keepalive of an
//! `interval`; past [`MAX_LINES_PER_SEC`] sustained the stream is a failed check.

use std::time::{Duration, Instant};

/// The most lines a second a peer may send, sustained (a burst of [`BURST`] is allowed).
pub(crate) const MAX_LINES_PER_SEC: u64 = 50;

/// Lines a peer may send at once above the rate: a program that flaps through its states.
const BURST: u64 = 2 * MAX_LINES_PER_SEC;

/// One line's cost in the bucket; the bucket refills [`MAX_LINES_PER_SEC`] lines a second.
const LINE: u64 = 1000;

/// A stream's rate and the last result forwarded.
pub(crate) struct Gate<T> {
    /// Credit left, in thousandths of a line.
    credit: u64,
    refilled: Instant,
    /// The last result forwarded, and when.
    said: Option<(T, Instant)>,
    /// The least time between two identical results forwarded: half the check's interval, so
    /// a peer's keepalive (one per interval, give or take the network) is always one.
    keepalive: Duration,
}

impl<T: PartialEq> Gate<T> {
    /// A gate for a stream opened at `now`, for a check every `interval`.
    pub(crate) fn new(interval: Duration, now: Instant) -> Self {
        Gate {
            credit: BURST * LINE,
            refilled: now,
            said: None,
            keepalive: interval / 2,
        }
    }

    /// Counts one line read at `now`; false when the stream is past the rate.
    pub(crate) fn count(&mut self, now: Instant) -> bool {
        let ms = u64::try_from(now.duration_since(self.refilled).as_millis()).unwrap_or(u64::MAX);
        if ms > 0 {
            let refill = ms.saturating_mul(MAX_LINES_PER_SEC);
            self.credit = self.credit.saturating_add(refill).min(BURST * LINE);
            self.refilled = now;
        }
        match self.credit.checked_sub(LINE) {
            Some(left) => {
                self.credit = left;
                true
            }
            None => false,
        }
    }

    /// Whether `result` (the latest of what was read at `now`) goes on to the owner loop: a
    /// change, or the same again after at least half an interval (a keepalive).
    pub(crate) fn worth(&mut self, result: T, now: Instant) -> Option<&T> {
        let due = match &self.said {
            None => true,
            Some((said, at)) => *said != result || now.duration_since(*at) >= self.keepalive,
        };
        if !due {
            return None;
        }
        self.said = Some((result, now));
        self.said.as_ref().map(|(r, _)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_refused_and_an_honest_pace_never_is() {
        let t0 = Instant::now();
        let mut flood = Gate::<u8>::new(Duration::from_secs(1), t0);
        // All at once: the burst passes, the next line does not.
        assert!((0..BURST).all(|_| flood.count(t0)));
        assert!(!flood.count(t0));
        // Two lines every 50 ms (40 a second) for a minute: always within the rate.
        let mut honest = Gate::<u8>::new(Duration::from_secs(1), t0);
        for k in 0..1200u64 {
            let at = t0 + Duration::from_millis(50 * k);
            assert!(honest.count(at) && honest.count(at), "line {k}");
        }
        // 60 a second, sustained: refused within a few seconds.
        let mut fast = Gate::<u8>::new(Duration::from_secs(1), t0);
        let refused = (0..600u64).find(|k| !fast.count(t0 + Duration::from_micros(16_667 * k)));
        assert!(refused.is_some_and(|k| k < 600), "{refused:?}");
    }

    #[test]
    fn identical_lines_are_a_keepalive_and_changes_go_at_once() {
        let t0 = Instant::now();
        let mut g = Gate::new(Duration::from_secs(2), t0);
        assert_eq!(g.worth("run=1", t0), Some(&"run=1"));
        // The same again at once: dropped; after half the interval: a keepalive.
        assert_eq!(g.worth("run=1", t0 + Duration::from_millis(10)), None);
        assert_eq!(g.worth("run=1", t0 + Duration::from_millis(999)), None);
        let ka = t0 + Duration::from_secs(1);
        assert_eq!(g.worth("run=1", ka), Some(&"run=1"));
        // A change goes at once, however soon.
        let soon = ka + Duration::from_millis(1);
        assert_eq!(g.worth("run=2", soon), Some(&"run=2"));
        assert_eq!(g.worth("run=1", soon), Some(&"run=1"));
    }
}

//! The per-second budget, per source (a program, or the `syslog` stream of senders that are
//! none): a token bucket each, so a program that floods spends its own budget only and every
//! other source keeps its full one. What is over is dropped, counted, and said in the source's
//! own log at most once a [`NOTICE_EVERY`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Messages a second one source may log.
pub(crate) const RATE: f64 = 10_000.0;

/// How many one source may log at once before [`RATE`] applies (start-up bursts).
pub(crate) const BURST: f64 = 20_000.0;

/// How often a source that drops is told so, at most.
pub(crate) const NOTICE_EVERY: Duration = Duration::from_secs(1);

/// Sources tracked at most (programs are few; the table is emptied past it).
const SOURCES_MAX: usize = 4096;

/// One source's bucket and what it dropped since it was last said.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
    /// Dropped, not said yet.
    unsaid: u64,
    /// When the last drop notice went out.
    said: Option<Instant>,
}

/// Every source's budget.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    buckets: HashMap<String, Bucket>,
}

impl Budget {
    /// Whether `source` may log one more message at `now`; a refused one is counted.
    pub(crate) fn take(&mut self, source: &str, now: Instant) -> bool {
        if self.buckets.len() >= SOURCES_MAX && !self.buckets.contains_key(source) {
            self.buckets.clear();
        }
        let b = self.buckets.entry(source.to_string()).or_insert(Bucket {
            tokens: BURST,
            at: now,
            unsaid: 0,
            said: None,
        });
        let refill = now.saturating_duration_since(b.at).as_secs_f64() * RATE;
        b.tokens = (b.tokens + refill).min(BURST);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            return true;
        }
        b.unsaid += 1;
        false
    }

    /// The sources with drops to say now (at most once a [`NOTICE_EVERY`] each), with how many.
    pub(crate) fn notices(&mut self, now: Instant) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (source, b) in &mut self.buckets {
            let due = b.said.is_none_or(|t| now.duration_since(t) >= NOTICE_EVERY);
            if b.unsaid > 0 && due {
                out.push((source.clone(), b.unsaid));
                b.unsaid = 0;
                b.said = Some(now);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flooding_source_spends_its_own_budget_only() {
        let mut b = Budget::default();
        let t = Instant::now();
        let taken = (0..30_000).filter(|_| b.take("flood", t)).count();
        assert_eq!(taken, BURST as usize);
        assert!(b.take("quiet", t), "another source keeps its budget");
        assert_eq!(b.notices(t), vec![("flood".to_string(), 10_000)]);
        assert!(!b.take("flood", t));
        assert_eq!(b.notices(t), vec![], "said at most once a second");
        let later = t + Duration::from_secs(1);
        assert!(b.take("flood", later), "the budget refills");
        assert_eq!(b.notices(later), vec![("flood".to_string(), 1)]);
    }
}

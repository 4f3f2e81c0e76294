//! Liveness of a running program, as pure code: results of its `[program.NAME.health]` check
//! (and its sd_notify watchdog) become a status with thresholds.
//!
//! - A run starts `starting` when it becomes ready. Failures within `start_period` do not count;
//!   the first pass makes it `healthy` (as Docker's start period does).
//! - Each failure counted moves it to `unhealthy N/F` (N consecutive failures of the F allowed);
//!   the F-th makes it `unhealthy`: that is when `on_failure` acts. A pass before then clears the
//!   count.
//! - Once `unhealthy`, `successes` consecutive passes make it `healthy` again (with
//!   `on_failure = "mark"`; with `"restart"` the next run starts over).

use std::fmt;
use std::time::{Duration, Instant};

use crate::config::HealthSettings;

/// Where a program's liveness stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthStatus {
    /// Ready, and no check has passed yet (or still within `start_period`).
    Starting,
    /// The last check passed (or enough passes followed a failure).
    Healthy,
    /// Some consecutive failures, fewer than the threshold.
    Failing {
        /// Consecutive failures so far.
        failures: u32,
        /// The threshold (`failures`).
        of: u32,
    },
    /// The threshold was reached: `on_failure` acts.
    Unhealthy,
}

impl fmt::Display for HealthStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HealthStatus::Starting => f.write_str("starting"),
            HealthStatus::Healthy => f.write_str("healthy"),
            HealthStatus::Failing { failures, of } => write!(f, "unhealthy {failures}/{of}"),
            HealthStatus::Unhealthy => f.write_str("unhealthy"),
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    /// Whether it passed.
    pub passed: bool,
    /// What it said: `HTTP 503 Service Unavailable`, an exec check's output, `timed out after
    /// 3s` (truncated by the check).
    pub output: String,
    /// How long it took.
    pub took: Duration,
}

/// The last result, with when it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastCheck {
    /// The result.
    pub result: CheckResult,
    /// When it arrived.
    pub at: Instant,
}

/// A program's liveness record (one per program; reset by every run that becomes ready).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Where it stands.
    pub status: HealthStatus,
    /// Consecutive failures counted.
    failures: u32,
    /// Consecutive passes.
    passes: u32,
    /// Failures before this instant do not count.
    counts_from: Instant,
    /// The last result.
    pub last: Option<LastCheck>,
    /// Checks that failed, ever (start period included).
    pub failures_total: u64,
    /// Checks made, ever.
    pub checks_total: u64,
}

impl Health {
    /// A record for a run that became ready at `ready_at`.
    pub fn new(settings: &HealthSettings, ready_at: Instant) -> Self {
        Health {
            status: HealthStatus::Starting,
            failures: 0,
            passes: 0,
            counts_from: ready_at + settings.start_period,
            last: None,
            failures_total: 0,
            checks_total: 0,
        }
    }

    /// A new run became ready: start over, keeping the totals.
    pub fn restart(&mut self, settings: &HealthSettings, ready_at: Instant) {
        let totals = (self.failures_total, self.checks_total);
        *self = Health::new(settings, ready_at);
        (self.failures_total, self.checks_total) = totals;
    }

    /// Records `result` at `now`; returns the status change it made, if any.
    pub fn record(
        &mut self,
        settings: &HealthSettings,
        result: CheckResult,
        now: Instant,
    ) -> Option<(HealthStatus, HealthStatus)> {
        let from = self.status;
        self.checks_total += 1;
        let passed = result.passed;
        self.last = Some(LastCheck { result, at: now });
        if passed {
            self.failures = 0;
            self.passes = self.passes.saturating_add(1);
            self.status = match from {
                HealthStatus::Unhealthy if self.passes < settings.successes => from,
                _ => HealthStatus::Healthy,
            };
        } else {
            self.failures_total += 1;
            self.passes = 0;
            if from == HealthStatus::Starting && now < self.counts_from {
                return None;
            }
            self.failures = self.failures.saturating_add(1);
            self.status = if self.failures >= settings.failures {
                HealthStatus::Unhealthy
            } else {
                HealthStatus::Failing {
                    failures: self.failures,
                    of: settings.failures,
                }
            };
        }
        (from != self.status).then_some((from, self.status))
    }

    /// A failure that acts at once whatever the threshold (a missed sd_notify watchdog, as
    /// systemd's `WatchdogSec` does); returns the change.
    pub fn fail_now(
        &mut self,
        result: CheckResult,
        now: Instant,
    ) -> Option<(HealthStatus, HealthStatus)> {
        let from = self.status;
        self.checks_total += 1;
        self.failures_total += 1;
        self.passes = 0;
        self.failures = self.failures.saturating_add(1);
        self.last = Some(LastCheck { result, at: now });
        self.status = HealthStatus::Unhealthy;
        (from != self.status).then_some((from, self.status))
    }

    /// Whether it is past its failure threshold.
    pub fn is_unhealthy(&self) -> bool {
        self.status == HealthStatus::Unhealthy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(failures: u32, successes: u32, start_period: u64) -> HealthSettings {
        HealthSettings {
            failures,
            successes,
            start_period: Duration::from_secs(start_period),
            ..HealthSettings::default()
        }
    }

    fn pass() -> CheckResult {
        CheckResult {
            passed: true,
            output: "HTTP 200 OK".into(),
            took: Duration::from_millis(2),
        }
    }

    fn fail() -> CheckResult {
        CheckResult {
            passed: false,
            output: "HTTP 500".into(),
            took: Duration::from_millis(2),
        }
    }

    #[test]
    fn the_threshold_counts_consecutive_failures_and_a_pass_clears_them() {
        let s = settings(3, 1, 0);
        let t0 = Instant::now();
        let mut h = Health::new(&s, t0);
        assert_eq!(
            h.record(&s, pass(), t0),
            Some((HealthStatus::Starting, HealthStatus::Healthy))
        );
        h.record(&s, fail(), t0);
        assert_eq!(h.status, HealthStatus::Failing { failures: 1, of: 3 });
        assert_eq!(h.status.to_string(), "unhealthy 1/3");
        h.record(&s, fail(), t0);
        h.record(&s, pass(), t0);
        assert_eq!(h.status, HealthStatus::Healthy, "a pass clears the count");
        h.record(&s, fail(), t0);
        h.record(&s, fail(), t0);
        let change = h.record(&s, fail(), t0);
        assert_eq!(
            change,
            Some((
                HealthStatus::Failing { failures: 2, of: 3 },
                HealthStatus::Unhealthy
            ))
        );
        assert!(h.is_unhealthy());
        assert_eq!(h.failures_total, 5);
        assert_eq!(h.checks_total, 7);
        assert_eq!(h.last.as_ref().unwrap().result.output, "HTTP 500");
    }

    #[test]
    fn failures_in_the_start_period_do_not_count_but_a_pass_ends_it() {
        let s = settings(1, 1, 30);
        let t0 = Instant::now();
        let mut h = Health::new(&s, t0);
        assert_eq!(h.record(&s, fail(), t0 + Duration::from_secs(10)), None);
        assert_eq!(h.status, HealthStatus::Starting);
        assert_eq!(h.failures_total, 1, "still counted in the totals");
        // Past the start period, the first failure counts (threshold 1).
        let change = h.record(&s, fail(), t0 + Duration::from_secs(31));
        assert_eq!(
            change,
            Some((HealthStatus::Starting, HealthStatus::Unhealthy))
        );

        let mut h = Health::new(&s, t0);
        h.record(&s, pass(), t0 + Duration::from_secs(1));
        let change = h.record(&s, fail(), t0 + Duration::from_secs(2));
        assert_eq!(
            change,
            Some((HealthStatus::Healthy, HealthStatus::Unhealthy)),
            "once healthy, the start period is over"
        );
    }

    #[test]
    fn recovering_from_unhealthy_takes_the_successes() {
        let s = settings(1, 3, 0);
        let t0 = Instant::now();
        let mut h = Health::new(&s, t0);
        h.record(&s, fail(), t0);
        assert!(h.is_unhealthy());
        assert_eq!(h.record(&s, pass(), t0), None);
        assert_eq!(h.record(&s, pass(), t0), None);
        assert_eq!(
            h.record(&s, pass(), t0),
            Some((HealthStatus::Unhealthy, HealthStatus::Healthy))
        );
        // An interrupted streak starts over.
        h.record(&s, fail(), t0);
        h.record(&s, pass(), t0);
        h.record(&s, fail(), t0);
        h.record(&s, pass(), t0);
        h.record(&s, pass(), t0);
        assert!(h.is_unhealthy());
    }

    #[test]
    fn a_watchdog_miss_acts_at_once_and_a_new_run_starts_over() {
        let s = settings(3, 1, 0);
        let t0 = Instant::now();
        let mut h = Health::new(&s, t0);
        h.record(&s, pass(), t0);
        let change = h.fail_now(fail(), t0);
        assert_eq!(
            change,
            Some((HealthStatus::Healthy, HealthStatus::Unhealthy))
        );
        h.restart(&s, t0);
        assert_eq!(h.status, HealthStatus::Starting);
        assert_eq!(h.checks_total, 2, "totals survive a restart");
        assert_eq!(h.failures_total, 1);
    }
}

//! Restart policy: what happens after a run ends, the sliding-window budget and the backoff delay.
//!
//! Pure code: instants are passed in, nothing is read from a clock.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::config::{Kind, ProgramSpec, RestartPolicy};
use crate::model::Exit;

/// What the policy decides after a run ended by itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// A oneshot succeeded.
    Completed,
    /// Ended and not restarted by policy.
    Exited,
    /// Restart after `delay`; the restart has been recorded.
    Restart {
        /// Backoff delay before the restart.
        delay: Duration,
        /// Restarts within the window, this one included.
        in_window: u32,
    },
    /// The budget is spent.
    Exhausted {
        /// Restarts made within the window.
        in_window: u32,
    },
}

/// Restarts made within the window and the next backoff delay.
#[derive(Debug, Clone, PartialEq)]
pub struct RestartHistory {
    /// When each restart within the window was decided.
    times: VecDeque<Instant>,
    /// Delay for the next restart.
    next_delay: Option<Duration>,
    /// Restarts ever made by policy (never reset).
    pub total: u64,
}

impl Default for RestartHistory {
    fn default() -> Self {
        Self::new()
    }
}

impl RestartHistory {
    /// No restarts yet.
    pub fn new() -> Self {
        RestartHistory {
            times: VecDeque::new(),
            next_delay: None,
            total: 0,
        }
    }

    /// Restarts counted within `window` before `now`.
    pub fn in_window(&self, window: Duration, now: Instant) -> u32 {
        self.times
            .iter()
            .filter(|&&t| now.saturating_duration_since(t) < window)
            .count() as u32
    }

    /// Forgets the budget and the backoff (a start by hand).
    pub fn reset(&mut self) {
        self.times.clear();
        self.next_delay = None;
    }

    fn prune(&mut self, window: Duration, now: Instant) {
        while let Some(&t) = self.times.front() {
            if now.saturating_duration_since(t) >= window {
                self.times.pop_front();
            } else {
                break;
            }
        }
    }
}

/// Decides what follows a run that ended by itself.
///
/// `exit` is `None` when the run's end is not an exit of its own (a readiness timeout), which
/// always counts as a failure, as does `forced_failure`. `ran_for` is how long the run lasted.
pub fn decide(
    spec: &ProgramSpec,
    history: &mut RestartHistory,
    exit: Option<Exit>,
    forced_failure: bool,
    ran_for: Duration,
    now: Instant,
) -> Verdict {
    let success = !forced_failure && exit.is_some_and(|e| e.is_success(&spec.success_codes));
    if spec.kind == Kind::Oneshot && success {
        return Verdict::Completed;
    }
    let restart = match spec.restart {
        RestartPolicy::Always => true,
        RestartPolicy::OnFailure => !success,
        RestartPolicy::Never => false,
    };
    if !restart {
        return Verdict::Exited;
    }
    history.prune(spec.restart_window, now);
    let made = history.times.len() as u32;
    if made >= spec.max_restarts {
        return Verdict::Exhausted { in_window: made };
    }
    history.times.push_back(now);
    history.total += 1;
    let backoff = spec.backoff;
    if ran_for >= backoff.max {
        history.next_delay = None;
    }
    let delay = history.next_delay.unwrap_or(backoff.initial);
    let grown = delay.mul_f64(backoff.factor).min(backoff.max);
    history.next_delay = Some(grown.max(backoff.initial));
    Verdict::Restart {
        delay,
        in_window: made + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Backoff;

    fn spec(kind: Kind) -> ProgramSpec {
        let mut s = ProgramSpec::new("p", vec!["x".into()], kind);
        s.backoff = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(1000),
            factor: 2.0,
        };
        s.max_restarts = 3;
        s.restart_window = Duration::from_secs(60);
        s
    }

    const FAIL: Option<Exit> = Some(Exit::Code(1));
    const OK: Option<Exit> = Some(Exit::Code(0));
    const SHORT: Duration = Duration::from_millis(10);

    fn delay(v: Verdict) -> Duration {
        match v {
            Verdict::Restart { delay, .. } => delay,
            other => panic!("expected a restart, got {other:?}"),
        }
    }

    #[test]
    fn backoff_grows_to_the_cap_then_a_long_run_resets_it() {
        let mut s = spec(Kind::Service);
        s.max_restarts = 100;
        let mut h = RestartHistory::new();
        let t0 = Instant::now();
        let delays: Vec<u128> = (0..6)
            .map(|i| {
                delay(decide(
                    &s,
                    &mut h,
                    FAIL,
                    false,
                    SHORT,
                    t0 + Duration::from_secs(i),
                ))
                .as_millis()
            })
            .collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1000, 1000]);
        // A run that lasted backoff.max resets the delay.
        let d = decide(
            &s,
            &mut h,
            FAIL,
            false,
            Duration::from_millis(1000),
            t0 + Duration::from_secs(7),
        );
        assert_eq!(delay(d), Duration::from_millis(100));
        assert_eq!(h.total, 7);
    }

    #[test]
    fn max_restarts_three_allows_four_runs_in_the_window() {
        let s = spec(Kind::Service);
        let mut h = RestartHistory::new();
        let t0 = Instant::now();
        for i in 0..3 {
            let v = decide(&s, &mut h, FAIL, false, SHORT, t0 + Duration::from_secs(i));
            assert!(matches!(v, Verdict::Restart { in_window, .. } if in_window == i as u32 + 1));
        }
        let v = decide(&s, &mut h, FAIL, false, SHORT, t0 + Duration::from_secs(3));
        assert_eq!(v, Verdict::Exhausted { in_window: 3 });
    }

    #[test]
    fn restarts_leave_the_window_as_it_slides() {
        let s = spec(Kind::Service);
        let mut h = RestartHistory::new();
        let t0 = Instant::now();
        for i in 0..3 {
            decide(
                &s,
                &mut h,
                FAIL,
                false,
                SHORT,
                t0 + Duration::from_secs(i * 10),
            );
        }
        assert_eq!(
            h.in_window(s.restart_window, t0 + Duration::from_secs(30)),
            3
        );
        // At t0+61s the first restart (t0) has left the 60 s window: one more is allowed.
        let v = decide(&s, &mut h, FAIL, false, SHORT, t0 + Duration::from_secs(61));
        assert!(matches!(v, Verdict::Restart { in_window: 3, .. }));
        assert_eq!(
            h.in_window(s.restart_window, t0 + Duration::from_secs(61)),
            3
        );
    }

    #[test]
    fn zero_budget_exhausts_at_the_first_exit() {
        let mut s = spec(Kind::Service);
        s.max_restarts = 0;
        let mut h = RestartHistory::new();
        assert_eq!(
            decide(&s, &mut h, FAIL, false, SHORT, Instant::now()),
            Verdict::Exhausted { in_window: 0 }
        );
    }

    #[test]
    fn policies_and_success_codes() {
        let t = Instant::now();
        let mut s = spec(Kind::Service);
        let mut h = RestartHistory::new();
        // always: even a success restarts a service
        assert!(matches!(
            decide(&s, &mut h, OK, false, SHORT, t),
            Verdict::Restart { .. }
        ));
        s.restart = RestartPolicy::OnFailure;
        assert_eq!(decide(&s, &mut h, OK, false, SHORT, t), Verdict::Exited);
        s.success_codes = vec![0, 3];
        assert_eq!(
            decide(&s, &mut h, Some(Exit::Code(3)), false, SHORT, t),
            Verdict::Exited
        );
        let segv = Some(Exit::Signal {
            sig: 11,
            core_dumped: false,
        });
        assert!(matches!(
            decide(&s, &mut h, segv, false, SHORT, t),
            Verdict::Restart { .. }
        ));
        s.restart = RestartPolicy::Never;
        assert_eq!(decide(&s, &mut h, FAIL, false, SHORT, t), Verdict::Exited);
    }

    #[test]
    fn oneshots_complete_on_success_and_retry_on_failure() {
        let s = spec(Kind::Oneshot);
        let mut h = RestartHistory::new();
        let t = Instant::now();
        assert_eq!(decide(&s, &mut h, OK, false, SHORT, t), Verdict::Completed);
        assert!(matches!(
            decide(&s, &mut h, FAIL, false, SHORT, t),
            Verdict::Restart { .. }
        ));
        // A forced failure (readiness timeout) is never a success.
        assert!(matches!(
            decide(&s, &mut h, OK, true, SHORT, t),
            Verdict::Restart { .. }
        ));
    }
}

//! The checks that run inside ctrlinit (no process per check): one attempt each, bounded by a
//! timeout, told as a [`CheckResult`]. Readiness (`readiness`) and liveness (`liveness`) both
//! use them.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::http_get::{self, fmt_secs, os_words};
use crate::config::HttpTarget;
use crate::supervisor::core::health::CheckResult;
use crate::supervisor::core::notices::fmt_duration;
use crate::sys::stamps::{Baseline, stamp};

/// A TCP connect within `timeout`.
pub(crate) async fn tcp(addr: SocketAddr, timeout: Duration) -> CheckResult {
    let began = Instant::now();
    let outcome = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await;
    let (passed, output) = match outcome {
        Ok(Ok(_)) => (true, format!("connected to {addr}")),
        Ok(Err(e)) => (false, format!("cannot connect to {addr}: {}", os_words(&e))),
        Err(_) => (false, format!("timed out after {}", fmt_secs(timeout))),
    };
    CheckResult {
        passed,
        output,
        took: began.elapsed(),
    }
}

/// An HTTP GET within `timeout`, passing on 2xx and 3xx.
pub(crate) async fn http(target: &HttpTarget, timeout: Duration) -> CheckResult {
    let began = Instant::now();
    let (passed, output) = match http_get::get(target, timeout).await {
        Ok(answer) => (answer.passed(), answer.line),
        Err(e) => (false, e),
    };
    CheckResult {
        passed,
        output,
        took: began.elapsed(),
    }
}

/// Whether `path` was written by this run (see [`Baseline`]).
pub(crate) fn fresh_file(path: &Path, baseline: Option<&Baseline>) -> bool {
    match (stamp(path), baseline) {
        (Some(now), Some(b)) => b.is_fresh(&now),
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// A heartbeat file this run touched no longer ago than `max_age`.
pub(crate) fn heartbeat(
    path: &Path,
    max_age: Duration,
    baseline: Option<&Baseline>,
) -> CheckResult {
    let began = Instant::now();
    let shown = path.display();
    let (passed, output) = match stamp(path) {
        None => (false, format!("no heartbeat file {shown}")),
        Some(now) if baseline.is_some_and(|b| !b.is_fresh(&now)) => {
            (false, format!("{shown} has not been touched by this run"))
        }
        Some(now) => {
            let age = SystemTime::now()
                .duration_since(now.mtime)
                .unwrap_or_default();
            if age <= max_age {
                (true, format!("touched {} ago", fmt_duration(age)))
            } else {
                (
                    false,
                    format!(
                        "{shown} last touched {} ago (max_age {})",
                        fmt_duration(age),
                        fmt_duration(max_age)
                    ),
                )
            }
        }
    };
    CheckResult {
        passed,
        output,
        took: began.elapsed(),
    }
}

/// An output line no longer ago than `limit`, counting from `since_ms` (when the run became
/// ready) when it has written nothing since.
pub(crate) fn silence(activity: &Arc<AtomicU64>, since_ms: u64, limit: Duration) -> CheckResult {
    let last = activity.load(Ordering::Relaxed).max(since_ms);
    let quiet = Duration::from_millis(epoch_ms().saturating_sub(last));
    let passed = quiet <= limit;
    let output = if passed {
        format!("last output {} ago", fmt_duration(quiet))
    } else {
        format!(
            "no output for {} (silence {})",
            fmt_duration(quiet),
            fmt_duration(limit)
        )
    };
    CheckResult {
        passed,
        output,
        took: Duration::ZERO,
    }
}

/// Milliseconds since the Unix epoch (the clock the log thread stamps output with).
pub(crate) fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

//! `ctrlinit history`'s figures from the ledger's records: boots and how each ended, per
//! program its starts, restarts, causes, last exit, mean time between failures and ready
//! latency (p50/p95).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::SystemTime;

use serde::Serialize;

use crate::model::ledger::{Fact, Record};

/// What `history` is asked for.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this program's records.
    pub program: Option<String>,
    /// Only records at or after this time (RFC 3339, compared as the ledger writes it).
    pub since: Option<String>,
    /// Only the last N boots.
    pub boots: Option<usize>,
}

/// One boot, as `history` shows it.
#[derive(Debug, Serialize)]
pub struct BootSummary {
    /// Its id.
    pub boot: String,
    /// Its first record's time.
    pub started: String,
    /// `clean`, `unclean`, or `open` (the newest boot without an end: running, or ended
    /// uncleanly).
    pub ended: &'static str,
    /// Its end's or its last record's time.
    pub last: String,
    /// Exit status, when it ended cleanly.
    pub exit_status: Option<i32>,
    /// Why it stopped, when it ended cleanly.
    pub reason: Option<String>,
    /// How long its way down took, in milliseconds, when it ended cleanly.
    pub shutdown_ms: Option<u64>,
    /// Hostname and version, from its boot record.
    pub hostname: Option<String>,
    /// ctrlinit's version.
    pub version: Option<String>,
}

/// One program, as `history` shows it.
#[derive(Debug, Default, Serialize)]
pub struct ProgramSummary {
    /// Its name.
    pub program: String,
    /// Runs started.
    pub starts: u64,
    /// Restarts by policy.
    pub restarts: u64,
    /// Runs ended, by cause.
    pub exits: BTreeMap<&'static str, u64>,
    /// The last exit: `exit status 1 (crash)`, with its time.
    pub last_exit: Option<String>,
    /// When it last ended.
    pub last_exit_at: Option<String>,
    /// Mean time between failures (ends by crash, OOM, health, readiness, failed start), in
    /// milliseconds; needs two failures.
    pub mtbf_ms: Option<u64>,
    /// Ready latency, median and 95th percentile, in milliseconds.
    pub ready_p50_ms: Option<u64>,
    /// See `ready_p50_ms`.
    pub ready_p95_ms: Option<u64>,
    /// Times its budget was spent.
    pub exhausted: u64,
    /// Crash reports written.
    pub crash_reports: Vec<String>,
    /// Its last [`LAST_FAILURES`] failures (ends by a cause that is a failure), oldest first.
    pub last_failures: Vec<Failure>,
    /// The first and last failure's time, and how many (for the MTBF).
    #[serde(skip)]
    failures: Option<(SystemTime, SystemTime, u32)>,
    /// The newest ready latencies, at most [`MAX_READY`].
    #[serde(skip)]
    ready: VecDeque<u64>,
}

/// How many ready latencies of a program the percentiles are taken over (the newest).
const MAX_READY: usize = 100_000;

/// How many of a program's last failures `history` keeps.
pub const LAST_FAILURES: usize = 3;

/// One failed run's end, as `history` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// When it ended.
    pub at: String,
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<String>,
    /// Why it ended (`crash`, `oom`, `health` …).
    pub cause: &'static str,
}

/// `history`'s whole answer.
#[derive(Debug, Serialize)]
pub struct History {
    /// Boots, oldest first.
    pub boots: Vec<BootSummary>,
    /// Programs, by name.
    pub programs: Vec<ProgramSummary>,
    /// Lines skipped (torn, foreign).
    pub skipped_lines: u64,
    /// Rotated files skipped, each with why.
    pub skipped_files: Vec<String>,
    /// Records read.
    pub records: usize,
    /// The ledger file read.
    pub ledger: String,
    /// Why that file: named, the running init's, or the default path (and why).
    pub ledger_from: String,
}

/// The boots of a ledger in the order they first appear (the first of two passes: which boots
/// `--boots N` keeps, and which is the newest).
#[derive(Debug, Default)]
pub(super) struct BootOrder {
    order: Vec<String>,
    seen: HashSet<String>,
}

impl BootOrder {
    /// Notes `r`'s boot.
    pub(super) fn add(&mut self, r: &Record) {
        if self.order.last() != Some(&r.boot) && self.seen.insert(r.boot.clone()) {
            self.order.push(r.boot.clone());
        }
    }
}

/// The summaries, built one record at a time (oldest first) under a filter: nothing of a record
/// is kept but its figures.
pub(super) struct Summarizer {
    filter: Filter,
    kept: HashSet<String>,
    kept_order: Vec<String>,
    newest: Option<String>,
    boots: HashMap<String, BootSummary>,
    programs: BTreeMap<String, ProgramSummary>,
    records: usize,
}

impl Summarizer {
    /// A summarizer of the boots in `order` that `filter` keeps.
    pub(super) fn new(filter: &Filter, order: BootOrder) -> Self {
        let keep_from = filter
            .boots
            .map_or(0, |n| order.order.len().saturating_sub(n));
        let kept_order = order.order[keep_from..].to_vec();
        Summarizer {
            filter: filter.clone(),
            kept: kept_order.iter().cloned().collect(),
            newest: order.order.last().cloned(),
            kept_order,
            boots: HashMap::new(),
            programs: BTreeMap::new(),
            records: 0,
        }
    }

    /// Counts `r` when the filter selects it.
    pub(super) fn add(&mut self, r: &Record) {
        if !self.kept.contains(&r.boot)
            || self
                .filter
                .since
                .as_deref()
                .is_some_and(|s| r.t.as_str() < s)
        {
            return;
        }
        self.records += 1;
        self.add_to_boot(r);
        let Some(name) = r.program() else { return };
        if self.filter.program.as_deref().is_some_and(|o| o != name) {
            return;
        }
        if !self.programs.contains_key(name) {
            self.programs.insert(
                name.to_string(),
                ProgramSummary {
                    program: name.to_string(),
                    ..ProgramSummary::default()
                },
            );
        }
        if let Some(s) = self.programs.get_mut(name) {
            add(s, r);
        }
    }

    fn add_to_boot(&mut self, r: &Record) {
        let open = self.newest.as_deref() == Some(r.boot.as_str());
        let b = self
            .boots
            .entry(r.boot.clone())
            .or_insert_with(|| BootSummary {
                boot: r.boot.clone(),
                started: r.t.clone(),
                ended: if open { "open" } else { "unclean" },
                last: r.t.clone(),
                exit_status: None,
                reason: None,
                shutdown_ms: None,
                hostname: None,
                version: None,
            });
        if b.ended != "clean" {
            b.last = r.t.clone();
        }
        match &r.fact {
            Fact::Boot {
                hostname, version, ..
            } => {
                b.hostname = Some(hostname.clone());
                b.version = Some(version.clone());
            }
            Fact::End {
                reason,
                exit_status,
                shutdown_ms,
            } => {
                b.ended = "clean";
                b.last = r.t.clone();
                b.exit_status = Some(*exit_status);
                b.reason = Some(reason.clone());
                b.shutdown_ms = Some(*shutdown_ms);
            }
            _ => {}
        }
    }

    /// The answer, with what the reader skipped.
    pub(super) fn finish(mut self, skipped_lines: u64, skipped_files: Vec<String>) -> History {
        let boots = self
            .kept_order
            .iter()
            .filter_map(|id| self.boots.remove(id))
            .collect();
        let programs = self
            .programs
            .into_values()
            .map(|mut s| {
                s.mtbf_ms = mtbf(s.failures);
                let mut ready: Vec<u64> = s.ready.iter().copied().collect();
                ready.sort_unstable();
                s.ready_p50_ms = percentile(&ready, 50);
                s.ready_p95_ms = percentile(&ready, 95);
                s
            })
            .collect();
        History {
            boots,
            programs,
            skipped_lines,
            skipped_files,
            records: self.records,
            ledger: String::new(),
            ledger_from: String::new(),
        }
    }
}

fn add(s: &mut ProgramSummary, r: &Record) {
    match &r.fact {
        Fact::Start { .. } => s.starts += 1,
        Fact::Ready { latency_ms, .. } => {
            if s.ready.len() == MAX_READY {
                s.ready.pop_front();
            }
            s.ready.push_back(*latency_ms);
        }
        Fact::Restart { .. } => s.restarts += 1,
        Fact::Exhausted { .. } => s.exhausted += 1,
        Fact::Crash { report, .. } => s.crash_reports.push(report.clone()),
        Fact::Exit {
            code,
            signal,
            cause,
            ..
        } => {
            *s.exits.entry(cause.as_str()).or_default() += 1;
            let how = match (code, signal) {
                (Some(c), _) => format!("exit status {c}"),
                (None, Some(sig)) => format!("killed by {sig}"),
                (None, None) => "ended".to_string(),
            };
            s.last_exit = Some(format!("{how} ({})", cause.as_str()));
            s.last_exit_at = Some(r.t.clone());
            if cause.is_failure() {
                if s.last_failures.len() == LAST_FAILURES {
                    s.last_failures.remove(0);
                }
                s.last_failures.push(Failure {
                    at: r.t.clone(),
                    code: *code,
                    signal: signal.clone(),
                    cause: cause.as_str(),
                });
                if let Ok(t) = humantime::parse_rfc3339_weak(&r.t) {
                    s.failures = Some(match s.failures {
                        Some((first, _, n)) => (first, t, n.saturating_add(1)),
                        None => (t, t, 1),
                    });
                }
            }
        }
        Fact::Boot { .. } | Fact::End { .. } => {}
    }
}

/// Mean time between consecutive failures (first, last, count).
fn mtbf(failures: Option<(SystemTime, SystemTime, u32)>) -> Option<u64> {
    let (first, last, n) = failures?;
    if n < 2 {
        return None;
    }
    let span = last.duration_since(first).unwrap_or_default();
    Some((span / (n - 1)).as_millis() as u64)
}

/// The `p`th percentile of `sorted` (nearest rank).
fn percentile(sorted: &[u64], p: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    Some(sorted[rank - 1])
}

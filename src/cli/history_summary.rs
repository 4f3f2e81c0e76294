//! `ctrlinit history`'s figures from the ledger's records: boots and how each ended, per
//! program its starts, restarts, causes, last exit, mean time between failures and ready
//! latency (p50/p95).

use std::collections::{BTreeMap, HashMap, HashSet};
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
    #[serde(skip)]
    failures: Vec<SystemTime>,
    #[serde(skip)]
    ready: Vec<u64>,
}

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

/// The summaries of `records` (oldest first) under `filter`.
pub(super) fn summarize(
    records: &[Record],
    filter: &Filter,
    skipped_lines: u64,
    skipped_files: Vec<String>,
) -> History {
    // Boots in the order they first appear; sets, so a long ledger costs one pass.
    let mut order: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for r in records {
        if order.last() != Some(&r.boot.as_str()) && seen.insert(&r.boot) {
            order.push(&r.boot);
        }
    }
    let keep_from = filter.boots.map_or(0, |n| order.len().saturating_sub(n));
    let kept: Vec<&str> = order[keep_from..].to_vec();
    let kept_set: HashSet<&str> = kept.iter().copied().collect();
    let selected: Vec<&Record> = records
        .iter()
        .filter(|r| kept_set.contains(r.boot.as_str()))
        .filter(|r| filter.since.as_deref().is_none_or(|s| r.t.as_str() >= s))
        .collect();
    let boots = boots_of(&selected, &kept, order.last().copied());
    let programs = programs_of(&selected, filter.program.as_deref());
    History {
        boots,
        programs,
        skipped_lines,
        skipped_files,
        records: selected.len(),
        ledger: String::new(),
        ledger_from: String::new(),
    }
}

fn boots_of(records: &[&Record], kept: &[&str], newest: Option<&str>) -> Vec<BootSummary> {
    let mut by_boot: HashMap<&str, Vec<&Record>> = HashMap::new();
    for r in records {
        by_boot.entry(&r.boot).or_default().push(r);
    }
    let mut out: Vec<BootSummary> = Vec::new();
    for id in kept {
        let mine: &[&Record] = by_boot.get(id).map_or(&[], Vec::as_slice);
        let (Some(first), Some(last)) = (mine.first(), mine.last()) else {
            continue;
        };
        let mut b = BootSummary {
            boot: id.to_string(),
            started: first.t.clone(),
            ended: if Some(*id) == newest {
                "open"
            } else {
                "unclean"
            },
            last: last.t.clone(),
            exit_status: None,
            reason: None,
            shutdown_ms: None,
            hostname: None,
            version: None,
        };
        for r in mine {
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
                    b.exit_status = Some(*exit_status);
                    b.reason = Some(reason.clone());
                    b.shutdown_ms = Some(*shutdown_ms);
                }
                _ => {}
            }
        }
        out.push(b);
    }
    out
}

fn programs_of(records: &[&Record], only: Option<&str>) -> Vec<ProgramSummary> {
    let mut by: BTreeMap<String, ProgramSummary> = BTreeMap::new();
    for r in records {
        let Some(name) = r.program() else { continue };
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let s = by
            .entry(name.to_string())
            .or_insert_with(|| ProgramSummary {
                program: name.to_string(),
                ..ProgramSummary::default()
            });
        add(s, r);
    }
    by.into_values()
        .map(|mut s| {
            s.mtbf_ms = mtbf(&s.failures);
            s.ready.sort_unstable();
            s.ready_p50_ms = percentile(&s.ready, 50);
            s.ready_p95_ms = percentile(&s.ready, 95);
            s
        })
        .collect()
}

fn add(s: &mut ProgramSummary, r: &Record) {
    match &r.fact {
        Fact::Start { .. } => s.starts += 1,
        Fact::Ready { latency_ms, .. } => s.ready.push(*latency_ms),
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
                    s.failures.push(t);
                }
            }
        }
        Fact::Boot { .. } | Fact::End { .. } => {}
    }
}

/// Mean time between consecutive failures.
fn mtbf(failures: &[SystemTime]) -> Option<u64> {
    let (first, last) = (failures.first()?, failures.last()?);
    if failures.len() < 2 {
        return None;
    }
    let span = last.duration_since(*first).unwrap_or_default();
    Some((span / (failures.len() as u32 - 1)).as_millis() as u64)
}

/// The `p`th percentile of `sorted` (nearest rank).
fn percentile(sorted: &[u64], p: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    Some(sorted[rank - 1])
}

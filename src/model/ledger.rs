//! The run ledger's records: one JSON object a line in `ledger.jsonl` (in the log directory),
//! one line per lifecycle fact, written by the init and read back by the next boot (how the last
//! one ended) and by `ctrlinit history`.
//!
//! A line is `{"t":"2026-12-03T13:00:00.123Z","boot":"…","kind":"exit",…}`: the time, the boot
//! it belongs to, and the fact's kind with its fields. Readers skip what they cannot parse (a
//! torn last line after a host crash, a line written by something else) and count it.

use serde::{Deserialize, Serialize};

/// The ledger's file name in the log directory (rotated as `ledger.jsonl.1` …).
pub const LEDGER_FILE: &str = "ledger.jsonl";

/// The longest line written or read; a longer one is not a ledger record.
pub const MAX_LINE: usize = 4096;

/// The most of a text field (a shutdown's reason) kept in a record.
pub const MAX_TEXT: usize = 512;

/// One line of the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// When it happened, RFC 3339 in UTC with milliseconds.
    pub t: String,
    /// The boot (one run of ctrlinit) it belongs to.
    pub boot: String,
    /// What happened.
    #[serde(flatten)]
    pub fact: Fact,
}

/// What a record says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fact {
    /// ctrlinit started.
    Boot {
        /// ctrlinit's version.
        version: String,
        /// A hash of the configuration as loaded (FNV-1a, 16 hex digits): equal hashes, same
        /// settings.
        config_hash: String,
        /// The container's hostname.
        hostname: String,
        /// Whether it runs as PID 1 (else as a subreaper).
        pid1: bool,
        /// How the boot before it ended: `clean`, `unclean` or `first`.
        previous: String,
    },
    /// A run of a program was spawned.
    Start {
        /// The program.
        program: String,
        /// Its run number.
        run: u64,
        /// Its main process.
        pid: i32,
    },
    /// A run became ready.
    Ready {
        /// The program.
        program: String,
        /// Its run number.
        run: u64,
        /// From its spawn to ready, in milliseconds.
        latency_ms: u64,
    },
    /// A run ended.
    Exit {
        /// The program.
        program: String,
        /// Its run number.
        run: u64,
        /// Its exit code, when it exited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal that killed it, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        /// Why it ended.
        cause: Cause,
        /// How long it ran, in milliseconds.
        uptime_ms: u64,
    },
    /// The restart policy restarts a program.
    Restart {
        /// The program.
        program: String,
        /// In how long, in milliseconds.
        delay_ms: u64,
        /// Restarts within the window, this one included.
        in_window: u32,
        /// Restarts allowed within the window.
        max_restarts: u32,
    },
    /// A program's restart budget is spent.
    Exhausted {
        /// The program.
        program: String,
        /// Restarts allowed within the window.
        max_restarts: u32,
    },
    /// A crash report was written.
    Crash {
        /// The program.
        program: String,
        /// The report's file name.
        report: String,
    },
    /// The boot ends: ctrlinit exits.
    End {
        /// Why the container stopped.
        reason: String,
        /// ctrlinit's exit status.
        exit_status: i32,
        /// How long the way down took (from the stop's start to the exit), in milliseconds.
        shutdown_ms: u64,
    },
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// It ended by itself, successfully.
    Exit,
    /// It ended by itself, unsuccessfully: a failing exit code, or a signal ctrlinit did not
    /// send.
    Crash,
    /// It could not be started (exec failed).
    StartFailed,
    /// It was not ready in time (`ready_timeout`, `ready = { uptime }`).
    Readiness,
    /// Its liveness check or watchdog failed.
    Health,
    /// The OOM killer took it.
    Oom,
    /// ctrlinit stopped it past one of its `[program.NAME.limits]` (memory, descriptors).
    Limit,
    /// A dependency with `restart = true` ended.
    Propagated,
    /// An external dependency with `restart = true` failed.
    External,
    /// Stopped or restarted by hand.
    ByHand,
    /// The container stopped.
    Stop,
    /// A reload removed or changed it.
    Reload,
    /// A cause this reader does not know (a newer writer).
    #[serde(other)]
    Other,
}

impl Cause {
    /// The word in the ledger (`by_hand`).
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Exit => "exit",
            Cause::Crash => "crash",
            Cause::StartFailed => "start_failed",
            Cause::Readiness => "readiness",
            Cause::Health => "health",
            Cause::Oom => "oom",
            Cause::Limit => "limit",
            Cause::Propagated => "propagated",
            Cause::External => "external",
            Cause::ByHand => "by_hand",
            Cause::Stop => "stop",
            Cause::Reload => "reload",
            Cause::Other => "other",
        }
    }

    /// Whether the run failed by itself (what a time between failures counts).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Cause::Crash
                | Cause::StartFailed
                | Cause::Readiness
                | Cause::Health
                | Cause::Oom
                | Cause::Limit
        )
    }
}

impl Record {
    /// The record as one line, newline included; `None` when it would pass [`MAX_LINE`].
    pub fn to_line(&self) -> Option<String> {
        let mut line = serde_json::to_string(self).ok()?;
        line.push('\n');
        (line.len() <= MAX_LINE).then_some(line)
    }

    /// The program the record is about, if any.
    pub fn program(&self) -> Option<&str> {
        match &self.fact {
            Fact::Start { program, .. }
            | Fact::Ready { program, .. }
            | Fact::Exit { program, .. }
            | Fact::Restart { program, .. }
            | Fact::Exhausted { program, .. }
            | Fact::Crash { program, .. } => Some(program),
            Fact::Boot { .. } | Fact::End { .. } => None,
        }
    }
}

/// A line read back: a record, or `None` for anything else (torn, foreign, too long).
pub fn parse_line(line: &[u8]) -> Option<Record> {
    if line.len() > MAX_LINE || line.first() != Some(&b'{') {
        return None;
    }
    serde_json::from_slice(line).ok()
}

/// `text` cut to [`MAX_TEXT`] bytes at a character boundary.
pub fn bounded_text(text: &str) -> String {
    if text.len() <= MAX_TEXT {
        return text.to_string();
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// How the boot before this one ended, from the last record of the ledger's tail (`tail`: the
/// end of the file; when `whole` is false its first line may be a part and is skipped). Lines
/// that are not records (a torn last line) are passed over.
pub fn last_record(tail: &[u8], whole: bool) -> Option<Record> {
    let mut lines = tail.split(|&b| b == b'\n');
    if !whole {
        lines.next();
    }
    let lines: Vec<&[u8]> = lines.collect();
    lines.into_iter().rev().find_map(parse_line)
}

/// What `last` (the previous boot's last record) says of its end: `(ended, exit status,
/// reason, at)`, `ended` being `clean`, `unclean` or `first`.
pub fn ending_of(
    last: Option<&Record>,
) -> (&'static str, Option<i32>, Option<String>, Option<String>) {
    match last {
        None => ("first", None, None, None),
        Some(Record {
            t,
            fact:
                Fact::End {
                    reason,
                    exit_status,
                    ..
                },
            ..
        }) => (
            "clean",
            Some(*exit_status),
            Some(reason.clone()),
            Some(t.clone()),
        ),
        Some(r) => ("unclean", None, None, Some(r.t.clone())),
    }
}

/// FNV-1a, 64 bits: a stable hash (the same on every build and version), for the config hash.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(fact: Fact) -> Record {
        Record {
            t: "2026-12-03T13:00:00.000Z".into(),
            boot: "b1".into(),
            fact,
        }
    }

    #[test]
    fn a_record_is_one_flat_line_and_reads_back() {
        let r = record(Fact::Exit {
            program: "api".into(),
            run: 3,
            code: None,
            signal: Some("SIGSEGV".into()),
            cause: Cause::Crash,
            uptime_ms: 1200,
        });
        let line = r.to_line().unwrap();
        assert_eq!(
            line,
            "{\"t\":\"2026-12-03T13:00:00.000Z\",\"boot\":\"b1\",\"kind\":\"exit\",\"program\":\"api\",\"run\":3,\"signal\":\"SIGSEGV\",\"cause\":\"crash\",\"uptime_ms\":1200}\n"
        );
        assert_eq!(parse_line(line.trim_end().as_bytes()), Some(r));
    }

    #[test]
    fn the_last_record_passes_over_torn_and_foreign_lines() {
        let end = record(Fact::End {
            reason: "SIGTERM".into(),
            exit_status: 0,
            shutdown_ms: 5,
        })
        .to_line()
        .unwrap();
        let tail = format!("xx\"}}\n{end}not json\n{{\"t\":\"2026-12-03T13:0");
        let last = last_record(tail.as_bytes(), false).unwrap();
        assert_eq!(ending_of(Some(&last)).0, "clean");
        assert_eq!(ending_of(Some(&last)).1, Some(0));
        // A part of a line at the start of a partial tail is never taken for a record.
        let start = record(Fact::Start {
            program: "a".into(),
            run: 1,
            pid: 9,
        })
        .to_line()
        .unwrap();
        let cut = &start[1..];
        assert_eq!(last_record(cut.as_bytes(), false), None);
        assert_eq!(ending_of(None).0, "first");
        let unclean = last_record(start.as_bytes(), true).unwrap();
        assert_eq!(ending_of(Some(&unclean)).0, "unclean");
    }

    #[test]
    fn an_unknown_cause_reads_as_other_and_long_text_is_cut() {
        let line = br#"{"t":"x","boot":"b","kind":"exit","program":"a","run":1,"cause":"meteor","uptime_ms":1}"#;
        let r = parse_line(line).unwrap();
        assert!(matches!(
            r.fact,
            Fact::Exit {
                cause: Cause::Other,
                ..
            }
        ));
        assert_eq!(parse_line(br#"{"kind":"nope"}"#), None);
        let long = "é".repeat(MAX_TEXT);
        assert!(bounded_text(&long).len() <= MAX_TEXT + 3);
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    }
}

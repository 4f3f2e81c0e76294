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

/// How the boot before this one ended, as the ledger's tail tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// `clean` (its end is among its records), `unclean` (its records hold no end), `first`
    /// (an empty ledger) or `unknown` (the tail cannot be read: garbage, zeros, a torn line).
    pub ended: &'static str,
    /// Its exit status, when it ended cleanly.
    pub exit_status: Option<i32>,
    /// Why it stopped, when it ended cleanly.
    pub reason: Option<String>,
    /// Its end's time (clean) or its last record's (unclean).
    pub at: Option<String>,
    /// The boot it was, when a record says.
    pub boot: Option<String>,
}

impl Ending {
    fn bare(ended: &'static str) -> Self {
        Ending {
            ended,
            exit_status: None,
            reason: None,
            at: None,
            boot: None,
        }
    }
}

/// How the boot before this one ended, from the ledger's tail (`tail`: the end of the file;
/// when `whole` is false its first line may be a part and is skipped). The last line must be a
/// record, else the tail cannot be read and the answer is `unknown`: a torn or zero-filled end
/// may hide any number of lost records, so no older record is trusted for a verdict. The boot
/// of the last record ended cleanly when its `end` is among its records in the tail, wherever
/// (a record written after it, as an old writer did, does not hide it).
pub fn ending_of_tail(tail: &[u8], whole: bool) -> Ending {
    let mut lines = tail.split(|&b| b == b'\n');
    if !whole {
        lines.next();
    }
    let lines: Vec<&[u8]> = lines.filter(|l| !l.is_empty()).collect();
    let Some(last) = lines.last() else {
        return Ending::bare(if whole { "first" } else { "unknown" });
    };
    let Some(last) = parse_line(last) else {
        return Ending::bare("unknown");
    };
    let end = lines
        .iter()
        .rev()
        .filter_map(|l| parse_line(l))
        .find_map(|r| match r.fact {
            Fact::End {
                reason,
                exit_status,
                ..
            } if r.boot == last.boot => Some((r.t, reason, exit_status)),
            _ => None,
        });
    match end {
        Some((t, reason, status)) => Ending {
            ended: "clean",
            exit_status: Some(status),
            reason: Some(reason),
            at: Some(t),
            boot: Some(last.boot),
        },
        None => Ending {
            ended: "unclean",
            at: Some(last.t),
            boot: Some(last.boot),
            ..Ending::bare("unclean")
        },
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

    fn line(boot: &str, fact: Fact) -> String {
        Record {
            boot: boot.into(),
            ..record(fact)
        }
        .to_line()
        .unwrap()
    }

    fn end() -> Fact {
        Fact::End {
            reason: "SIGTERM".into(),
            exit_status: 0,
            shutdown_ms: 5,
        }
    }

    fn crash() -> Fact {
        Fact::Crash {
            program: "a".into(),
            report: "r".into(),
        }
    }

    #[test]
    fn a_boot_ended_cleanly_when_its_end_is_among_its_records_in_any_order() {
        let e = ending_of_tail(format!("xx\"}}\n{}", line("b1", end())).as_bytes(), false);
        assert_eq!((e.ended, e.exit_status), ("clean", Some(0)));
        // A crash report's record after the end (an old writer) does not hide the end.
        let tail = format!("{}{}", line("b1", end()), line("b1", crash()));
        assert_eq!(ending_of_tail(tail.as_bytes(), true).ended, "clean");
        // Another boot's end does not count for the last boot.
        let tail = format!("{}{}", line("b0", end()), line("b1", crash()));
        assert_eq!(ending_of_tail(tail.as_bytes(), true).ended, "unclean");
        assert_eq!(ending_of_tail(b"", true).ended, "first");
    }

    #[test]
    fn a_tail_that_cannot_be_read_is_unknown_never_an_older_record() {
        let end = line("b1", end());
        for tail in [
            format!("{end}not json\n"),
            format!("{end}{{\"t\":\"2026-12-03T13:0"),
            format!("{end}{}", "\0".repeat(4096)),
            "garbage\n\u{0}\u{1}{\"torn\":".to_string(),
        ] {
            assert_eq!(
                ending_of_tail(tail.as_bytes(), true).ended,
                "unknown",
                "{tail:?}"
            );
        }
        // A part of a line at the start of a partial tail is never taken for a record.
        let start = line(
            "b1",
            Fact::Start {
                program: "a".into(),
                run: 1,
                pid: 9,
            },
        );
        assert_eq!(
            ending_of_tail(&start.as_bytes()[1..], false).ended,
            "unknown"
        );
        assert_eq!(ending_of_tail(start.as_bytes(), true).ended, "unclean");
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

//! The run ledger on the init's side: at start, how the boot before this one ended (from a
//! bounded read of the tail of `ledger.jsonl`, never of an older rotated copy), then the file
//! opened for appending, one `write` a record, on the log thread (see `hub`).
//!
//! A ledger that cannot be trusted (a symbolic link, a FIFO, another user's file) is neither
//! read nor written: ctrlinit says so once and runs without a ledger. Nothing about the file can
//! stop the start.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tracing::{info, warn};

use super::file::FileSink;
use crate::config::{InitSettings, LogSettings};
use crate::model::ledger::{self, Fact, LEDGER_FILE, Record};
use crate::model::protocol::PreviousBoot;

/// How much of the file's end is read for its last record.
const TAIL: u64 = 64 << 10;

/// Older files kept by rotation (as for log files).
const KEEP: u32 = 5;

/// What start-up found: how the previous boot ended (`None`: no ledger for this boot), and
/// whether the ledger was wanted (`[init] ledger`).
static PREVIOUS: OnceLock<(Option<PreviousBoot>, bool)> = OnceLock::new();

/// How the boot before this one ended; `None` when the ledger is off (or not read yet).
pub fn previous_boot() -> Option<&'static PreviousBoot> {
    PREVIOUS.get().and_then(|(p, _)| p.as_ref())
}

/// What oneshots are told in `CTRLINIT_PREVIOUS_BOOT`: the ledger's verdict, `unknown` when the
/// ledger was wanted but refused (a FIFO, a foreign file: nothing says how the boot before
/// ended), `None` when it is off by the configuration.
pub fn previous_for_oneshots() -> Option<&'static str> {
    match PREVIOUS.get()? {
        (Some(p), _) => Some(p.ended.as_str()),
        (None, true) => Some("unknown"),
        (None, false) => None,
    }
}

/// A record of `fact` for this boot, now.
pub fn record(fact: Fact) -> Record {
    Record {
        t: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        boot: crate::sys::boot::boot_id().to_string(),
        fact,
    }
}

/// Reads how the previous boot ended and opens the ledger in `log_dir` for appending; `None`
/// (and a warning) when it is off or cannot be used.
pub(super) fn prepare(log_dir: Option<&Path>, init: &InitSettings, mode: u32) -> Option<FileSink> {
    let opened = match (init.ledger, log_dir) {
        (true, Some(dir)) => open(&dir.join(LEDGER_FILE), init, mode),
        _ => None,
    };
    let _ = PREVIOUS.set((opened.as_ref().map(|(_, p)| p.clone()), init.ledger));
    opened.map(|(sink, _)| sink)
}

fn open(path: &Path, init: &InitSettings, mode: u32) -> Option<(FileSink, PreviousBoot)> {
    let refuse = |e: &dyn std::fmt::Display| {
        warn!(
            "run ledger {}: {e}; no ledger for this boot (fix: remove it, or set [init] ledger = false)",
            path.display()
        )
    };
    let ending = match ending(path) {
        Ok(e) => e,
        Err(e) => {
            refuse(&e);
            return None;
        }
    };
    let settings = LogSettings {
        max_size: init.ledger_max_size,
        keep: KEEP,
        timestamps: false,
        ..LogSettings::default()
    };
    let mut sink = match FileSink::open(path, &settings, mode) {
        Ok(s) => s,
        Err(e) => {
            refuse(&e);
            return None;
        }
    };
    if ends_torn(path) {
        // A line cut short (a host crash mid-write) ends here, so the next record starts on a
        // line of its own.
        sink.write_block(super::frame::Block {
            data: b"",
            terminated: false,
        });
    }
    let previous = previous_of(&ending, path);
    say_previous(&previous, &ending);
    Some((sink, previous))
}

/// How the previous boot ended, from the current file's tail only: an older rotated copy holds
/// older boots, so an empty or missing current file beside one is `unknown`, not their verdict.
fn ending(path: &Path) -> std::io::Result<ledger::Ending> {
    let mut rotated = PathBuf::from(path).into_os_string();
    rotated.push(".1");
    let rotated_exists = std::fs::symlink_metadata(&rotated).is_ok();
    let (tail, whole) = crate::sys::boot::read_own_tail(path, TAIL)?.unwrap_or_default();
    let mut e = ledger::ending_of_tail(&tail, whole || tail.is_empty());
    if e.ended == "first" && rotated_exists {
        e.ended = "unknown";
    }
    Ok(e)
}

/// Whether the file's last byte is not a newline (its last line is torn).
fn ends_torn(path: &Path) -> bool {
    matches!(
        crate::sys::boot::read_own_tail(path, 1),
        Ok(Some((b, _))) if b.last().is_some_and(|&c| c != b'\n')
    )
}

fn previous_of(e: &ledger::Ending, path: &Path) -> PreviousBoot {
    PreviousBoot {
        ended: e.ended.to_string(),
        exit_status: e.exit_status,
        reason: e.reason.clone(),
        at: e.at.clone(),
        boot_id: crate::sys::boot::boot_id().to_string(),
        ledger: Some(path.display().to_string()),
    }
}

fn say_previous(p: &PreviousBoot, e: &ledger::Ending) {
    let at = p.at.as_deref().unwrap_or("?");
    match p.ended.as_str() {
        "unclean" => warn!(
            "the previous boot ({}) ended uncleanly: its last record is from {at} and it wrote no end (SIGKILL, an OOM kill of ctrlinit, a host crash); oneshots get CTRLINIT_PREVIOUS_BOOT=unclean",
            e.boot.as_deref().unwrap_or("?")
        ),
        "clean" => info!(
            "the previous boot ended cleanly at {at} with status {} ({})",
            p.exit_status.unwrap_or(0),
            crate::model::printable::escape_controls(p.reason.as_deref().unwrap_or(""))
        ),
        "unknown" => warn!(
            "how the previous boot ended is unknown: the end of the run ledger is not a record (garbage, zeros, a torn line) or its newest file is empty; oneshots get CTRLINIT_PREVIOUS_BOOT=unknown"
        ),
        _ => info!("no previous boot in the run ledger: this is the first"),
    }
}

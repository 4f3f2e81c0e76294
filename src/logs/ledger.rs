//! The run ledger on the init's side: at start, how the boot before this one ended (the last
//! record of `ledger.jsonl`, from a bounded read of its tail), then the file opened for
//! appending, one `write` a record, on the log thread (see `hub`).
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

static PREVIOUS: OnceLock<Option<PreviousBoot>> = OnceLock::new();

/// How the boot before this one ended; `None` when the ledger is off (or not read yet).
pub fn previous_boot() -> Option<&'static PreviousBoot> {
    PREVIOUS.get().and_then(Option::as_ref)
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
    let _ = PREVIOUS.set(opened.as_ref().map(|(_, p)| p.clone()));
    opened.map(|(sink, _)| sink)
}

fn open(path: &Path, init: &InitSettings, mode: u32) -> Option<(FileSink, PreviousBoot)> {
    let refuse = |e: &dyn std::fmt::Display| {
        warn!(
            "run ledger {}: {e}; no ledger for this boot (fix: remove it, or set [init] ledger = false)",
            path.display()
        )
    };
    let last = match last_record(path) {
        Ok(last) => last,
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
    let previous = previous_of(last.as_ref());
    say_previous(&previous, last.as_ref());
    Some((sink, previous))
}

/// The last record of the ledger (of the newest rotated file when the current one has none).
fn last_record(path: &Path) -> std::io::Result<Option<Record>> {
    let mut rotated = PathBuf::from(path).into_os_string();
    rotated.push(".1");
    for p in [path, Path::new(&rotated)] {
        if let Some((tail, whole)) = crate::sys::boot::read_own_tail(p, TAIL)?
            && let Some(r) = ledger::last_record(&tail, whole)
        {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// Whether the file's last byte is not a newline (its last line is torn).
fn ends_torn(path: &Path) -> bool {
    matches!(
        crate::sys::boot::read_own_tail(path, 1),
        Ok(Some((b, _))) if b.last().is_some_and(|&c| c != b'\n')
    )
}

fn previous_of(last: Option<&Record>) -> PreviousBoot {
    let (ended, exit_status, reason, at) = ledger::ending_of(last);
    PreviousBoot {
        ended: ended.to_string(),
        exit_status,
        reason,
        at,
        boot_id: crate::sys::boot::boot_id().to_string(),
    }
}

fn say_previous(p: &PreviousBoot, last: Option<&Record>) {
    let at = p.at.as_deref().unwrap_or("?");
    match (p.ended.as_str(), last) {
        ("unclean", Some(r)) => warn!(
            "the previous boot ({}) ended uncleanly: its last record is from {at} and it wrote no end (SIGKILL, an OOM kill of ctrlinit, a host crash); oneshots get CTRLINIT_PREVIOUS_BOOT=unclean",
            r.boot
        ),
        ("clean", _) => info!(
            "the previous boot ended cleanly at {at} with status {} ({})",
            p.exit_status.unwrap_or(0),
            p.reason.as_deref().unwrap_or("")
        ),
        _ => info!("no previous boot in the run ledger: this is the first"),
    }
}

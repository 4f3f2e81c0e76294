//! `ctrlinit history`: what the run ledger says, without a running init (read in
//! `history_read`, summed up in `history_summary`, shown by `history_render`). Also the line
//! `status` shows above its table for the boot.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::history_read::read_ledger;
pub use super::history_summary::Filter;
use super::history_summary::summarize;
use crate::model::protocol::PreviousBoot;

/// Exit statuses (as `ctl`'s: 0 done, 1 failed).
const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;

/// `ctrlinit history`.
pub fn history(path: &Path, filter: &Filter, json: bool) -> u8 {
    let read = match read_ledger(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ctrlinit history: {e}");
            return EXIT_FAILED;
        }
    };
    let h = summarize(
        &read.records,
        filter,
        read.skipped_lines,
        read.skipped_files,
    );
    if json {
        match serde_json::to_string_pretty(&h) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("ctrlinit history: {e}");
                return EXIT_FAILED;
            }
        }
    } else {
        print!("{}", render(&h));
        for f in &h.skipped_files {
            eprintln!("ctrlinit history: skipped {f}");
        }
    }
    EXIT_OK
}

/// `--since`: a time (RFC 3339) or a duration before now (`2h`), as the ledger writes times.
pub fn since_arg(s: &str) -> Result<String, String> {
    if let Ok(t) = humantime::parse_rfc3339_weak(s) {
        return Ok(humantime::format_rfc3339_millis(t).to_string());
    }
    let d = crate::model::durations::parse_duration(s)
        .map_err(|e| format!("{e}; or give a time (2026-12-03T13:00:00Z)"))?;
    let t = SystemTime::now()
        .checked_sub(d)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Ok(humantime::format_rfc3339_millis(t).to_string())
}

/// A duration in milliseconds as a person reads it, `-` for none.
fn ms(v: Option<u64>) -> String {
    v.map_or("-".into(), |m| {
        super::history_render::human(Duration::from_millis(m))
    })
}

/// The text `history` prints.
fn render(h: &super::history_summary::History) -> String {
    super::history_render::render(h, ms)
}

/// The line `status` shows above its table: this boot, and how the one before it ended.
pub fn boot_line(b: &PreviousBoot) -> String {
    let before = match b.ended.as_str() {
        "clean" => format!(
            "ended cleanly at {} with status {} ({})",
            b.at.as_deref().unwrap_or("?"),
            b.exit_status.unwrap_or(0),
            b.reason.as_deref().unwrap_or("")
        ),
        "unclean" => format!(
            "ended UNCLEANLY (no end recorded; last record {})",
            b.at.as_deref().unwrap_or("?")
        ),
        _ => "none (first boot in the ledger)".to_string(),
    };
    format!("boot {}; previous boot: {before}", b.boot_id)
}

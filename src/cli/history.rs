//! `ctrlinit history`: what the run ledger says, without a running init (read in
//! `history_read`, summed up in `history_summary`, shown by `history_render`). Also the line
//! `status` shows above its table for the boot.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::history_read::read_ledger;
pub use super::history_summary::Filter;
use super::history_summary::{BootOrder, Summarizer};
use crate::api::client::Client;
use crate::model::protocol::{PreviousBoot, Request, Response};

/// Exit statuses (as `ctl`'s: 0 done, 1 failed).
const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;

/// Which ledger `history` reads: the file named, else the one the init at `socket` writes
/// (when one answers with its ledger on), else `fallback`; with a sentence saying which.
pub fn choose_ledger(named: Option<&Path>, socket: &Path, fallback: PathBuf) -> (PathBuf, String) {
    if let Some(p) = named {
        return (p.to_path_buf(), "named by --ledger".into());
    }
    let shown = crate::model::printable::escape_controls(&socket.to_string_lossy()).into_owned();
    match ledger_of_init(socket) {
        Ok(Some(p)) => (PathBuf::from(p), format!("the init at {shown} writes it")),
        Ok(None) => (
            fallback,
            format!("the init at {shown} runs without a ledger; the default path"),
        ),
        Err(e) => (
            fallback,
            format!("no init answered at {shown} ({e}); the default path"),
        ),
    }
}

/// The ledger path the init at `socket` reports in its status answer (`None`: it has none).
fn ledger_of_init(socket: &Path) -> Result<Option<String>, String> {
    let request = Request::Status {
        names: Vec::new(),
        usage: false,
    };
    let answer = Client::connect(socket)
        .and_then(|mut c| c.call(&request, ASK_INIT))
        .map_err(|e| e.to_string())?;
    match answer {
        Response::Status { previous_boot, .. } => Ok(previous_boot.and_then(|b| b.ledger)),
        other => Err(format!("an unexpected answer: {other:?}")),
    }
}

/// How long `history` waits for the init's answer before it reads the default path.
const ASK_INIT: Duration = Duration::from_secs(3);

/// `ctrlinit history` of the ledger at `path`; `from` says why that file (shown first).
pub fn history(path: &Path, from: &str, filter: &Filter, json: bool) -> u8 {
    let fail = |e: String| {
        eprintln!("ctrlinit history: {e} ({from})");
        EXIT_FAILED
    };
    // Two streamed passes: the boots first (which `--boots N` keeps), then the figures.
    let mut order = BootOrder::default();
    if let Err(e) = read_ledger(path, |r| order.add(&r)) {
        return fail(e);
    }
    let mut sum = Summarizer::new(filter, order);
    let read = match read_ledger(path, |r| sum.add(&r)) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let mut h = sum.finish(read.skipped_lines, read.skipped_files);
    h.ledger = path.display().to_string();
    h.ledger_from = from.to_string();
    if json {
        match serde_json::to_string_pretty(&h) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("ctrlinit history: {e}");
                return EXIT_FAILED;
            }
        }
    } else {
        let shown = crate::model::printable::escape_controls(&h.ledger).into_owned();
        println!("ledger {shown} ({})", h.ledger_from);
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
        "unknown" => {
            "UNKNOWN (the ledger's end is not a record: garbage, zeros, a torn line)".to_string()
        }
        _ => "none (first boot in the ledger)".to_string(),
    };
    format!("boot {}; previous boot: {before}", b.boot_id)
}

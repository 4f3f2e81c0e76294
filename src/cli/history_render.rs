//! `ctrlinit history`'s text: the boots, then a table of programs.

use std::time::Duration;

use super::history_summary::{Failure, History};
use crate::model::printable::escape_controls as e;

/// `1.2s`, `340ms`, `3m 5s`, `2h 10m`.
pub(super) fn human(d: Duration) -> String {
    let ms = d.as_millis() as u64;
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m {}s", ms / 60_000, (ms / 1000) % 60),
        _ => format!("{}h {}m", ms / 3_600_000, (ms / 60_000) % 60),
    }
}

/// The boots, a blank line, the programs' table, and what was skipped.
pub(super) fn render(h: &History, ms: fn(Option<u64>) -> String) -> String {
    let mut out = boots(h, ms);
    out.push('\n');
    let header = [
        "PROGRAM",
        "STARTS",
        "RESTARTS",
        "EXITS BY CAUSE",
        "LAST EXIT",
        "MTBF",
        "READY P50",
        "READY P95",
    ];
    let rows: Vec<Vec<String>> = h
        .programs
        .iter()
        .map(|p| {
            let causes: Vec<String> = p.exits.iter().map(|(c, n)| format!("{c}={n}")).collect();
            vec![
                e(&p.program).into_owned(),
                p.starts.to_string(),
                p.restarts.to_string(),
                if causes.is_empty() {
                    "-".into()
                } else {
                    causes.join(",")
                },
                e(p.last_exit.as_deref().unwrap_or("-")).into_owned(),
                ms(p.mtbf_ms),
                ms(p.ready_p50_ms),
                ms(p.ready_p95_ms),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let mut line = |cells: Vec<&str>| {
        let l: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(l.join("  ").trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for r in &rows {
        line(r.iter().map(String::as_str).collect());
    }
    out.push_str(&last_failures(h));
    if h.skipped_lines > 0 {
        out.push_str(&format!(
            "\n{} line{} skipped (not ledger records: torn or foreign)\n",
            h.skipped_lines,
            if h.skipped_lines == 1 { "" } else { "s" }
        ));
    }
    out
}

/// Per program with failures, its last ones: time, exit code or signal, cause.
fn last_failures(h: &History) -> String {
    let mut out = String::new();
    for p in h.programs.iter().filter(|p| !p.last_failures.is_empty()) {
        if out.is_empty() {
            out.push_str("\nLAST FAILURES\n");
        }
        let each: Vec<String> = p.last_failures.iter().map(failure).collect();
        out.push_str(&format!("  {}  {}\n", e(&p.program), each.join("; ")));
    }
    out
}

/// `2026-12-03T13:00:00.123Z killed by SIGSEGV (crash)`.
fn failure(f: &Failure) -> String {
    let how = match (&f.code, &f.signal) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by {}", e(sig)),
        (None, None) => "ended".to_string(),
    };
    format!("{} {how} ({})", e(&f.at), f.cause)
}

/// `BOOTS` and a line per boot: its id, start, host and how it ended.
fn boots(h: &History, ms: fn(Option<u64>) -> String) -> String {
    let mut out = String::from("BOOTS\n");
    for b in &h.boots {
        let short: String = e(&b.boot).chars().take(8).collect();
        let end = match b.ended {
            "clean" => format!(
                "clean, status {} after {} ({}); way down {}",
                b.exit_status.unwrap_or(0),
                e(&b.last),
                e(b.reason.as_deref().unwrap_or("")),
                ms(b.shutdown_ms)
            ),
            "unclean" => format!("UNCLEAN: no end recorded, last record {}", e(&b.last)),
            _ => format!(
                "open: running, or ended uncleanly (last record {})",
                e(&b.last)
            ),
        };
        let host = e(b.hostname.as_deref().unwrap_or("?"));
        out.push_str(&format!("  {short}  {}  {host}  {end}\n", e(&b.started)));
    }
    out
}

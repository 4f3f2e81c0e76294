//! Retention: a crash loop must not fill the host disk. At most `max_cores` cores and
//! `max_reports` reports per program, and a total size cap for the whole crash directory (oldest
//! go first).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Keeps the `keep` newest `*.ext` files of `dir` (names start with a UTC timestamp, so name
/// order is age order).
pub(crate) fn retain(dir: &Path, ext: &str, keep: usize) {
    let mut files = files_with_ext(dir, ext);
    files.sort();
    let excess = files.len().saturating_sub(keep);
    for f in &files[..excess] {
        let _ = std::fs::remove_file(f);
    }
}

pub(crate) fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .collect()
        })
        .unwrap_or_default()
}

/// Removes the oldest files under `crash_dir` until the total is under `max_total`.
pub(crate) fn cap_total(crash_dir: &Path, max_total: u64) {
    let mut files: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    if let Ok(programs) = std::fs::read_dir(crash_dir) {
        for program in programs.flatten().filter(|e| e.path().is_dir()) {
            for f in std::fs::read_dir(program.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if let Ok(m) = f.metadata() {
                    files.push((
                        m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                        m.len(),
                        f.path(),
                    ));
                }
            }
        }
    }
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, path) in files {
        if total <= max_total {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

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
    regular_files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect()
}

/// The regular files directly in `dir` (a symbolic link is neither followed nor counted).
fn regular_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Removes the oldest files under `crash_dir` until the total is under `max_total`. Only real
/// directories are descended into: a symbolic link planted in the crash directory never leads
/// retention to delete files elsewhere.
pub(crate) fn cap_total(crash_dir: &Path, max_total: u64) {
    let mut files: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    if let Ok(programs) = std::fs::read_dir(crash_dir) {
        let dirs = programs
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()));
        for program in dirs {
            for f in regular_files(&program.path()) {
                if let Ok(m) = std::fs::symlink_metadata(&f) {
                    files.push((m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len(), f));
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

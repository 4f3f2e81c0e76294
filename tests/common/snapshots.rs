//! Snapshot files for the import tests: a directory's files by name, and the comparison of an
//! import's output with its expected snapshot (or the snapshot rewritten, with
//! `CTRLINIT_UPDATE_SNAPSHOTS=1`).

use std::collections::BTreeMap;
use std::path::Path;

/// The files of a directory by name (none when it does not exist).
pub fn files_of(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            out.insert(name, std::fs::read_to_string(e.path()).unwrap());
        }
    }
    out
}

/// Compares `got` (file name to text) with the snapshot directory `expected` of the case
/// `name`, or rewrites the snapshot when `update`; the differences, one line each (the first
/// differing line of a file).
pub fn compare_or_update(
    name: &str,
    expected: &Path,
    got: &BTreeMap<String, String>,
    update: bool,
) -> Vec<String> {
    let mut failures = Vec::new();
    if update {
        let _ = std::fs::remove_dir_all(expected);
        std::fs::create_dir_all(expected).unwrap();
        for (f, text) in got {
            std::fs::write(expected.join(f), text).unwrap();
        }
        return failures;
    }
    let want = files_of(expected);
    if want.keys().collect::<Vec<_>>() != got.keys().collect::<Vec<_>>() {
        failures.push(format!(
            "{name}: files {:?}, expected {:?} (CTRLINIT_UPDATE_SNAPSHOTS=1 rewrites the snapshots)",
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        ));
    }
    for (f, text) in got {
        if let Some(w) = want.get(f).filter(|w| *w != text) {
            let line = w
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(w.lines().count().min(text.lines().count()));
            failures.push(format!(
                "{name}/{f} differs from its snapshot at line {}:\n  expected: {:?}\n  got:      {:?}",
                line + 1,
                w.lines().nth(line).unwrap_or(""),
                text.lines().nth(line).unwrap_or("")
            ));
        }
    }
    failures
}

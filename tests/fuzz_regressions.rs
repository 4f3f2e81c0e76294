//! Replays every input the fuzzers found (and a few written by hand) through the same checks the
//! fuzz targets run, so a fixed bug stays fixed.
//!
//! `tests/fuzz_inputs/<target>/` holds one file per input, where `<target>` is one of the
//! fuzz targets in `fuzz/fuzz_targets/`: `config_toml`, `config_bytes`, `protocol`, `units`,
//! `framer`. The checks are `fuzz/src/lib.rs`, compiled here too. Each input must be handled
//! (an `Ok` or an `Err`) without a panic and without breaking the target's invariants; every
//! failing input is listed before the test fails.
//!
//! To add one: `cargo +nightly fuzz tmin <target> fuzz/artifacts/<target>/crash-…` and copy the
//! minimized file here under a name that says what it is.

#[path = "../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod harness;

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Once;

const TARGETS: &[&str] = &[
    "config_toml",
    "config_bytes",
    "protocol",
    "units",
    "framer",
    "run_config",
];

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_inputs")
        .join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

thread_local! {
    /// Set while an input is replayed: its panic is collected, not printed with a backtrace.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Keeps the default panic output for everything but the replayed inputs.
fn quiet_replay_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                default(info);
            }
        }));
    });
}

/// Runs `check` on every input of `target`; returns the failures as `file: panic message`.
fn replay(target: &str, mut check: impl FnMut(&[u8])) -> (usize, Vec<String>) {
    quiet_replay_panics();
    let files = inputs(target);
    let mut failures = Vec::new();
    for file in &files {
        let data = std::fs::read(file).expect("read a fuzz input");
        QUIET.with(|q| q.set(true));
        let result = catch_unwind(AssertUnwindSafe(|| check(&data)));
        QUIET.with(|q| q.set(false));
        if let Err(panic) = result {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            failures.push(format!(
                "{target}/{}: {msg}",
                file.file_name().unwrap_or_default().to_string_lossy()
            ));
        }
    }
    (files.len(), failures)
}

fn run(target: &str) {
    let (n, failures) = match target {
        "config_toml" | "config_bytes" => {
            let mut dir = harness::ConfigDir::new();
            if target == "config_toml" {
                replay(target, |d| harness::check_config_toml(&mut dir, d))
            } else {
                replay(target, |d| harness::check_config_bytes(&mut dir, d))
            }
        }
        "protocol" => replay(target, harness::check_protocol),
        "units" => replay(target, harness::check_units),
        "framer" => replay(target, harness::check_framer),
        "run_config" => {
            let mut dir = harness::ConfigDir::new();
            replay(target, |d| harness::check_run(&mut dir, d))
        }
        other => panic!("unknown fuzz target {other}"),
    };
    println!("{target}: {n} inputs replayed, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {n} {target} fuzz inputs fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_input_directory_is_a_known_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_inputs");
    for entry in std::fs::read_dir(&root).expect("tests/fuzz_inputs exists") {
        let name = entry.expect("a directory entry").file_name();
        let name = name.to_string_lossy();
        assert!(
            TARGETS.contains(&name.as_ref()),
            "tests/fuzz_inputs/{name} is not a fuzz target ({TARGETS:?})"
        );
    }
}

#[test]
fn config_toml_inputs() {
    run("config_toml");
}

#[test]
fn config_bytes_inputs() {
    run("config_bytes");
}

#[test]
fn protocol_inputs() {
    run("protocol");
}

#[test]
fn units_inputs() {
    run("units");
}

#[test]
fn framer_inputs() {
    run("framer");
}

#[test]
fn run_config_inputs() {
    run("run_config");
}

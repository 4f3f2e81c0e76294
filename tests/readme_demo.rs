//! The README's first command: the example role in `conf.d/` under ctrlinit as PID 1, and the
//! control commands the README shows against it (issue 11). A restart of `api` brings `worker`
//! back only once `api` is ready again: its ready file from the run before must not count.

mod common;

use std::path::PathBuf;

use common::*;

/// The repository's own example role.
fn example_conf_d() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conf.d")
}

/// Starts the example role with the README's environment and a private state directory.
fn start_example() -> Init {
    let builder = init();
    let state = builder.dir().join("state");
    let conf = example_conf_d();
    builder
        .env("ROLE", "config")
        .env("API_PORT", "9000")
        .env("STATE_DIR", state.to_str().unwrap())
        .config_dir(&conf)
        .start()
}

#[test]
fn the_example_role_starts_in_order() {
    let init = start_example();
    let (code, out) = init.ctl(&["status", "--wait", "worker=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    init.wait_for_line("| worker: connected");
    let lines = init.lines();
    let at = |needle: &str| {
        index_of_line(&lines, needle)
            .unwrap_or_else(|| panic!("no {needle:?} in:\n{}", lines.join("\n")))
    };
    assert!(at("provision: rendered") < at("api: starting with role=config listen=127.0.0.1:9000"));
    assert!(
        at("api: starting -> running: ready after") < at("worker: connected to api=127.0.0.1:9000")
    );
    let (code, out) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn restart_api_brings_worker_back_after_api_is_ready_again() {
    let init = start_example();
    let (code, out) = init.ctl(&["status", "--wait", "worker=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    init.wait_for_line("| worker: connected");
    let before = init.lines().len();
    let (code, out) = init.ctl(&["restart", "api"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("restarted api and worker"), "{out}");
    init.wait_for_nth_line("| worker: connected", 2, DEADLINE);
    let lines = init.lines()[before..].to_vec();
    let at = |needle: &str| {
        index_of_line(&lines, needle)
            .unwrap_or_else(|| panic!("no {needle:?} after the restart in:\n{}", lines.join("\n")))
    };
    let api_started = at("| api: starting with");
    let api_ready = at("api: starting -> running: ready after");
    let worker_started = at("worker: waiting -> starting");
    let worker_connected = at("| worker: connected");
    assert!(
        api_started < api_ready && api_ready < worker_started && worker_started < worker_connected,
        "worker came back before api was ready again:\n{}",
        lines.join("\n")
    );
    assert!(
        !lines[api_ready].contains("ready after 0ms"),
        "api counted as ready from its last run's file: {}",
        lines[api_ready]
    );
}

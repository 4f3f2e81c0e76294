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

/// When ctrlinit logged `api` ready: the time of the n-th such line of `ctrlinit.log`.
fn nth_ready_time(init: &Init, n: usize) -> std::time::SystemTime {
    let log = init.dir().join("log/ctrlinit.log");
    let line = wait_until(
        &format!("api ready #{n} in {}", log.display()),
        DEADLINE,
        || {
            file_lines(&log)
                .into_iter()
                .filter(|l| l.contains("api: starting -> running: ready after"))
                .nth(n - 1)
        },
    );
    let stamp = line.split_whitespace().next().unwrap();
    humantime::parse_rfc3339(stamp).unwrap_or_else(|e| panic!("{stamp:?}: {e}"))
}

#[test]
fn restart_api_brings_worker_back_after_api_is_ready_again() {
    let init = start_example();
    let (code, out) = init.ctl(&["status", "--wait", "worker=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    init.wait_for_line("| worker: connected");
    let (code, out) = init.ctl(&["restart", "api"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("restarted api and worker"), "{out}");
    init.wait_for_nth_line("| worker: connected", 2, DEADLINE);
    // ctrlinit's own lines reach the console through a queue of their own, and may come after
    // the program's: wait for the last one read below.
    init.wait_for_nth_line("worker: waiting -> starting", 2, DEADLINE);
    // ctrlinit's own lines come in the order it decided (program output comes through other
    // pipes and may be printed later): worker starts again only after api is ready again.
    let own: Vec<String> = init
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("ctrlinit"))
        .collect();
    let nth = |needle: &str, n: usize| {
        own.iter()
            .enumerate()
            .filter(|(_, l)| l.contains(needle))
            .nth(n - 1)
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("no #{n} {needle:?} in:\n{}", own.join("\n")))
    };
    assert!(
        nth("api: stopping -> stopped", 1) < nth("api: starting -> running", 2)
            && nth("api: starting -> running", 2) < nth("worker: waiting -> starting", 2),
        "{}",
        own.join("\n")
    );
    // And api was ready for real: its new run had created the ready file when ctrlinit said so
    // (a file left from the run before made it "ready" before the new run touched it).
    let ready_at = nth_ready_time(&init, 2);
    let file = init.dir().join("state/api.ready");
    let touched = wait_until("api's new run to touch its ready file", DEADLINE, || {
        std::fs::metadata(&file).ok()?.modified().ok()
    });
    let ms =
        |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    assert!(
        ms(ready_at) >= ms(touched),
        "api was said ready at {ready_at:?}, before its new run touched {} at {touched:?}",
        file.display()
    );
}

//! `[program.NAME.limits]` against the real binary as PID 1 with real programs: a python process
//! that grows a bytearray past its `memory` limit is restarted gracefully until its budget ends
//! in the container's exit with `exit_code`, each stop with a crash report naming the figure;
//! one that opens descriptors past its `fds` limit is restarted after its `pre_stop` hook, and
//! `status --json` shows the limits and the last figures. (This machine's memory controller is
//! on cgroup v1, so the figures here come from `/proc`; the cgroup files are unit-tested.)

mod common;

use std::time::Duration;

use common::*;

/// Grows by 4 MiB every 50 ms up to 400 MiB (so a broken guard fails the test by its
/// deadline, not the machine), then sleeps.
const LEAK: &str = "import time\nb = bytearray()\nwhile len(b) < (400 << 20):\n    b += b'x' * (4 << 20)\n    time.sleep(0.05)\ntime.sleep(3600)\n";

/// Opens 150 descriptors once `<dir>/open` exists, then sleeps.
const FDS: &str = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]):\n    time.sleep(0.05)\nkeep = [open('/dev/null') for _ in range(150)]\ntime.sleep(3600)\n";

/// The crash reports written for `program`, parsed.
fn reports(init: &Init, program: &str) -> Vec<serde_json::Value> {
    let dir = init.dir().join("crash").join(program);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect()
}

#[test]
fn a_leak_past_its_memory_limit_is_restarted_until_the_budget_exits_the_container() {
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[init]
exit_code = 9

[program.leak]
command = ["/usr/bin/python3", "-c", {LEAK:?}]
max_restarts = 1
backoff = {{ initial = "100ms" }}

[program.leak.limits]
memory = "64MiB"
interval = "1s"
"#
            ),
        )
        .start();
    let code = init.wait_exit(Duration::from_secs(60));
    let out = init.output();
    assert_eq!(code, 9, "the budget's end exits with exit_code: {out}");
    assert!(
        out.contains("over its limit: memory ") && out.contains(" over 64 MiB"),
        "the state line names the limit and the figure: {out}"
    );
    assert!(
        out.contains("leak: stopping -> backoff: over its limit after"),
        "the backoff line says why: {out}"
    );
    let reports = reports(&init, "leak");
    assert_eq!(reports.len(), 2, "a report per stop: {reports:?}\n{out}");
    for r in &reports {
        let limit = r["limit"].as_str().unwrap_or_default();
        assert!(
            limit.starts_with("memory ") && limit.ends_with(" over 64 MiB"),
            "{r}"
        );
        assert!(
            r["cause"].as_str().unwrap().contains("stopped by ctrlinit"),
            "{r}"
        );
    }
    // The run ledger names the cause too: each of the two runs ended past its limit.
    let ledger =
        std::fs::read_to_string(init.dir().join("log").join("ledger.jsonl")).unwrap_or_default();
    let limit_exits = ledger
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["kind"] == "exit" && r["program"] == "leak" && r["cause"] == "limit")
        .count();
    assert_eq!(
        limit_exits, 2,
        "exits with cause limit in the ledger:\n{ledger}"
    );
}

#[test]
fn descriptors_past_their_limit_restart_it_after_its_pre_stop_and_status_shows_the_figures() {
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.fds]
command = ["/usr/bin/python3", "-c", {FDS:?}, "{{dir}}/open"]
pre_stop = ["/bin/sh", "-c", "echo pre_stop of the guarded run"]
max_restarts = 10
backoff = {{ initial = "100ms" }}

[program.fds.limits]
fds = 100
memory = "1GiB"
interval = "1s"
"#
            ),
        )
        .start();
    init.wait_states(&["fds=running"]);
    let p = wait_until("a first figure", DEADLINE, || {
        let p = init.program_json("fds");
        p["limits"]["last"].is_object().then_some(p)
    });
    let limits = &p["limits"];
    assert_eq!(limits["fds"], 100, "{p}");
    assert_eq!(limits["memory_bytes"], 1u64 << 30, "{p}");
    assert_eq!(limits["interval_ms"], 1000, "{p}");
    let last = &limits["last"];
    assert_eq!(last["source"], "proc", "{p}");
    assert!(last["fds"].as_u64().unwrap() < 100, "{p}");
    assert!(last["memory_bytes"].as_u64().unwrap() > 1 << 20, "{p}");
    assert_eq!(last["processes"], 1, "{p}");
    assert_eq!(p["restarts_by_cause"]["limit"], 0, "{p}");
    let run = p["run"].as_u64().unwrap();

    std::fs::write(init.dir().join("open"), "").unwrap();
    init.wait_for_line("fds: running -> stopping: over its limit: fds 15");
    init.wait_for_line("pre_stop of the guarded run");
    let p = wait_until("the restart", DEADLINE, || {
        let p = init.program_json("fds");
        (p["run"].as_u64() > Some(run) && p["restarts_by_cause"]["limit"].as_u64() >= Some(1))
            .then_some(p)
    });
    std::fs::remove_file(init.dir().join("open")).unwrap();
    assert!(
        p["restarts"].as_u64() >= Some(1),
        "counted as a restart by policy: {p}"
    );
    assert_eq!(p["restarts_by_cause"]["exit"], 0, "{p}");
    let report = wait_until("a report", DEADLINE, || reports(&init, "fds").pop());
    assert!(
        report["limit"]
            .as_str()
            .is_some_and(|l| l.starts_with("fds 15") && l.ends_with(" over 100")),
        "{report}"
    );
}

#[test]
fn a_program_without_limits_shows_none() {
    let init = init()
        .file(
            "a.toml",
            "[program.plain]\ncommand = [\"/bin/sleep\", \"3600\"]\n",
        )
        .start();
    init.wait_states(&["plain=running"]);
    let p = init.program_json("plain");
    assert!(p.get("limits").is_none(), "{p}");
    assert_eq!(p["restarts_by_cause"]["limit"], 0, "{p}");
}

const BAD: &str = r#"[program.a]
command = ["sleep", "1"]
[program.a.limits]
memory = 0
fds = 100000000000000000000
interval = "500ms"

[program.b]
command = ["sleep", "1"]
[program.b.limits]
memory = "100000000000000000000"
memory_max = "2 parsecs"
pids_max = 0
memroy = "1GiB"

[program.c]
command = ["sleep", "1"]
[program.c.limits]
memory = 100000000000000000000
fds = 0
interval = "0s"
"#;

#[test]
fn every_limit_error_is_reported_at_once_with_its_file_line_key_and_fix() {
    let (_dir, conf) = config_dir(&[("10-limits.toml", BAD)]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{}", ran.all());
    let err = ran.stderr.clone();
    let line = |nth: usize, needle: &str| {
        BAD.lines()
            .enumerate()
            .filter(|(_, l)| l.contains(needle))
            .nth(nth)
            .unwrap_or_else(|| panic!("{needle:?} not in the config"))
            .0
            + 1
    };
    for (nth, needle, key, says) in [
        (
            0,
            "memory = 0",
            "program.a.limits.memory",
            "a limit of 0 would restart the program at once",
        ),
        (
            0,
            "fds = 1000",
            "program.a.limits.fds",
            "is over the largest the kernel allows",
        ),
        (
            0,
            "interval = \"500ms\"",
            "program.a.limits.interval",
            "no more often than once a second",
        ),
        (
            0,
            "memory = \"1000",
            "program.b.limits.memory",
            "a limit over 1 PiB is no limit",
        ),
        (
            0,
            "parsecs",
            "program.b.limits.memory_max",
            "unknown size unit",
        ),
        (
            0,
            "pids_max = 0",
            "program.b.limits.pids_max",
            "a limit of 0 would let the program start no process",
        ),
        (
            0,
            "memroy",
            "program.b.limits.memroy",
            "unknown key `memroy`",
        ),
        (
            0,
            "memory = 1000",
            "program.c.limits.memory",
            "a limit over 1 PiB is no limit",
        ),
        (
            0,
            "fds = 0",
            "program.c.limits.fds",
            "a limit of 0 would restart",
        ),
        (
            0,
            "interval = \"0s\"",
            "program.c.limits.interval",
            "no more often than once a second",
        ),
    ] {
        let at = format!("10-limits.toml:{}", line(nth, needle));
        assert!(
            err.lines()
                .any(|l| l.contains(&at) && l.contains(key) && l.contains(says)),
            "{needle:?}: expected an error at {at} on {key} saying {says:?}; got:\n{err}"
        );
    }
    for fix in [
        "fix: use a size such as \"512MiB\" or \"2GiB\", or remove the key for no limit",
        "fix: use a count from 1 to 1073741824, such as 20000, or remove the key for no limit",
        "fix: use an interval of \"1s\" or more",
        "fix: did you mean `memory`?",
    ] {
        assert!(err.contains(fix), "{fix:?} missing:\n{err}");
    }
}

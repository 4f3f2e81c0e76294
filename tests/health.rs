//! Liveness checks against the real binary as PID 1: each kind passing, failing, timing out and
//! recovering; a hung (SIGSTOPped) daemon detected and restarted through its budget to the
//! container's exit; restart propagation on a health failure; `status`, `health` and `events`
//! showing liveness; readiness by HTTP; a ready file left by an earlier run not counting.

mod common;

use std::time::{Duration, Instant};

use common::*;

const HTTPD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/httpd.py");

/// A program's `status --json` entry, or `None` while the init does not answer yet.
fn try_program_json(init: &Init, name: &str) -> Option<serde_json::Value> {
    let (code, out) = init.ctl(&["status", "--json"]);
    if code != 0 && code != 3 {
        return None;
    }
    let list: serde_json::Value = serde_json::from_str(&out).ok()?;
    list.as_array()?.iter().find(|p| p["name"] == name).cloned()
}

fn wait_health(init: &Init, name: &str, want: &str) -> serde_json::Value {
    wait_until(&format!("{name} health {want}"), DEADLINE, || {
        let p = try_program_json(init, name)?;
        (p["health"]["status"] == want).then_some(p)
    })
}

#[test]
fn an_http_check_restarts_a_sick_service_and_the_restart_counts_against_its_budget() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.web]
command = ["/usr/bin/python3", "{HTTPD}", "{port}", "{{dir}}"]
ready = {{ http = "http://127.0.0.1:{port}/ready", interval = "50ms" }}
backoff = {{ initial = "100ms" }}

[program.web.health]
check = {{ http = "http://127.0.0.1:{port}/healthz" }}
interval = "100ms"
timeout = "1s"
failures = 2
"#
            ),
        )
        .start();
    init.wait_states(&["web=running"]);
    let p = wait_health(&init, "web", "healthy");
    assert_eq!(p["health"]["last"]["output"], "HTTP 200 OK");
    assert_eq!(
        p["health"]["check"],
        format!("http http://127.0.0.1:{port}/healthz")
    );
    let first_run = p["run"].as_u64().unwrap();
    std::fs::write(init.dir().join("sick"), "").unwrap();
    init.wait_for_line("web: health: healthy -> unhealthy 1/2: http");
    init.wait_for_line(
        "HTTP 500 Sick (2 failures in a row); restarting it (counts toward its restart budget)",
    );
    std::fs::remove_file(init.dir().join("sick")).unwrap();
    let p = wait_until("web back", DEADLINE, || {
        let p = init.program_json("web");
        (p["run"].as_u64() > Some(first_run) && p["health"]["status"] == "healthy").then_some(p)
    });
    assert_eq!(
        p["restarts"], 1,
        "a health restart is a restart by policy: {p}"
    );
    assert_eq!(p["restarts_by_cause"]["health"], 1, "{p}");
    assert!(p["health"]["failures_total"].as_u64().unwrap() >= 2, "{p}");
    let out = init.output();
    assert!(
        out.contains("web: stopping -> backoff: unhealthy after"),
        "the backoff line says why: {out}"
    );
    assert!(
        !out.contains("crash report"),
        "a stop ctrlinit sent is no crash: {out}"
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn a_hung_daemon_is_restarted_through_its_budget_until_the_container_exits() {
    let port = free_port();
    let builder = init().file(
        "a.toml",
        &format!(
            r#"
[program.web]
command = ["/usr/bin/python3", "{HTTPD}", "{port}", "{{dir}}"]
ready = {{ http = "http://127.0.0.1:{port}/ready", interval = "50ms" }}
backoff = {{ initial = "50ms" }}
max_restarts = 1
stop_timeout = "300ms"

[program.web.health]
check = {{ http = "http://127.0.0.1:{port}/healthz" }}
interval = "100ms"
timeout = "300ms"
failures = 2
"#
        ),
    );
    let termination_log = builder.dir().join("termination-log");
    std::fs::write(&termination_log, "").unwrap();
    let mut init = builder
        .env(
            "CTRLINIT_TERMINATION_LOG",
            termination_log.to_str().unwrap(),
        )
        .start();
    init.wait_states(&["web=running"]);
    // Each run: once it is healthy, freeze it as a deadlock would (the pid stays, the port
    // still accepts connections, nothing answers).
    for run in 0..2 {
        let p = wait_until("web healthy", DEADLINE, || {
            let p = init.program_json("web");
            (p["health"]["status"] == "healthy" && p["restarts"] == run).then_some(p)
        });
        let ns_pid = p["pid"].as_i64().unwrap() as i32;
        let pid = host_pid(&init, ns_pid).expect("web's host pid");
        assert!(send_signal(pid, libc::SIGSTOP));
        init.wait_for_nth_line("timed out after 300ms", (run as usize) + 1, DEADLINE);
    }
    assert_eq!(init.wait_exit(DEADLINE), 75, "{}", init.output());
    let out = init.output();
    assert!(
        out.contains("web exhausted: 1 restarts in 60s (last: unhealthy after"),
        "{out}"
    );
    // A stopped process ignores SIGTERM until continued: ctrlinit's stop must still end it.
    assert!(out.contains("exiting with status 75"), "{out}");
    let message = std::fs::read_to_string(&termination_log).unwrap();
    assert!(
        message.contains(&format!(
            "http http://127.0.0.1:{port}/healthz: timed out after 300ms"
        )),
        "the termination message names the check and its last output: {message}"
    );
}

#[test]
fn an_unhealthy_holder_restarts_the_programs_that_live_inside_it() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.holder]
command = ["/usr/bin/python3", "{HTTPD}", "{port}", "{{dir}}"]
ready = {{ http = "http://127.0.0.1:{port}/ready", interval = "50ms" }}
backoff = {{ initial = "50ms" }}
[program.holder.health]
check = {{ http = "http://127.0.0.1:{port}/healthz" }}
interval = "100ms"
failures = 1

[program.inside]
command = ["/bin/sh", "-c", "echo started >> {{dir}}/inside.runs; exec sleep 600"]
depends_on = {{ holder = {{ condition = "ready", restart = true }} }}
"#
            ),
        )
        .start();
    init.wait_states(&["holder=running", "inside=running"]);
    wait_health(&init, "holder", "healthy");
    std::fs::write(init.dir().join("sick"), "").unwrap();
    init.wait_for_line("holder: running -> stopping: unhealthy");
    std::fs::remove_file(init.dir().join("sick")).unwrap();
    wait_until("inside ran twice", DEADLINE, || {
        (file_lines(&init.dir().join("inside.runs")).len() == 2).then_some(())
    });
    init.wait_states(&["holder=running", "inside=running"]);
    let inside = init.program_json("inside");
    assert_eq!(inside["restarts_by_cause"]["dependency"], 1, "{inside}");
    let lines = init.lines();
    let holder_back = index_of_line(&lines, "holder: starting -> running").unwrap();
    let inside_back = lines
        .iter()
        .rposition(|l| {
            l.contains("inside: starting -> running") || l.contains("inside: waiting -> running")
        })
        .unwrap();
    assert!(
        holder_back < inside_back,
        "inside comes back after holder:\n{}",
        lines.join("\n")
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn mark_reports_a_failing_tcp_check_in_status_health_and_events_and_recovers() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.listener]
command = ["/usr/bin/python3", "{HTTPD}", "{port}", "{{dir}}"]
ready = {{ tcp = "127.0.0.1:{port}", interval = "50ms" }}

[program.marker]
command = ["sleep", "600"]

[program.watched]
command = ["sleep", "600"]
[program.watched.health]
check = {{ tcp = "127.0.0.1:{port}" }}
interval = "100ms"
timeout = "500ms"
failures = 2
successes = 2
on_failure = "mark"
"#
            ),
        )
        .start();
    init.wait_states(&["listener=running", "watched=running"]);
    wait_health(&init, "watched", "healthy");
    assert_eq!(init.ctl(&["health"]).0, 0);
    let (mut events, rx) = init.spawn_client(&["events", "--json"]);
    // The stream is live once it carries the marker's restart: restarted again until it does,
    // since a restart made before the client subscribed is not in its stream.
    wait_until("the events stream", DEADLINE, || {
        init.ctl(&["restart", "marker"]);
        let until = Instant::now() + Duration::from_secs(2);
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            if rx.recv_timeout(left).ok()?.contains("\"marker\"") {
                return Some(());
            }
        }
        None
    });
    let (code, out) = init.ctl(&["stop", "listener"]);
    assert_eq!(code, 0, "{out}");
    let p = wait_health(&init, "watched", "unhealthy");
    assert_eq!(p["state"], "running", "mark never stops it: {p}");
    assert_eq!(p["health"]["unhealthy"], true);
    let output = p["health"]["last"]["output"].as_str().unwrap();
    assert!(output.contains("connection refused"), "{output}");
    let (code, out) = init.ctl(&["health"]);
    assert_eq!(code, 1, "health fails while a program is unhealthy: {out}");
    assert!(out.contains("watched is unhealthy"), "{out}");
    let (_, table) = init.ctl(&["status"]);
    assert!(
        table.contains("HEALTH") && table.contains("unhealthy"),
        "{table}"
    );
    init.ctl(&["start", "listener"]);
    wait_health(&init, "watched", "healthy");
    assert_eq!(init.ctl(&["health"]).0, 0);
    // Events carry each liveness change.
    let mut seen = Vec::new();
    while seen.last().map(String::as_str) != Some("healthy")
        || !seen.contains(&"unhealthy".to_string())
    {
        let line = rx.recv_timeout(DEADLINE).expect("health events");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["program"] == "watched"
            && let Some(h) = v["health"].as_str()
        {
            seen.push(h.to_string());
        }
    }
    assert_eq!(seen, ["unhealthy 1/2", "unhealthy", "healthy"], "{seen:?}");
    let _ = events.kill();
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn exec_checks_pass_fail_with_their_output_and_time_out_with_their_group_killed() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.svc]
command = ["sleep", "600"]
[program.svc.health]
check = { exec = ["/bin/sh", "-c", "if [ -e {dir}/slow ]; then sleep 30 & sleep 30; fi; if [ -e {dir}/bad ]; then echo 'disk full' >&2; exit 3; fi; echo fine"] }
interval = "100ms"
timeout = "400ms"
failures = 1
on_failure = "mark"
"#,
        )
        .start();
    let p = wait_health(&init, "svc", "healthy");
    assert_eq!(p["health"]["last"]["output"], "fine");
    std::fs::write(init.dir().join("bad"), "").unwrap();
    let p = wait_health(&init, "svc", "unhealthy");
    assert_eq!(p["health"]["last"]["output"], "exit status 3: disk full");
    std::fs::remove_file(init.dir().join("bad")).unwrap();
    wait_health(&init, "svc", "healthy");
    std::fs::write(init.dir().join("slow"), "").unwrap();
    let p = wait_health(&init, "svc", "unhealthy");
    assert_eq!(p["health"]["last"]["output"], "timed out after 400ms");
    let took = p["health"]["last"]["took_ms"].as_u64().unwrap();
    assert!(took >= 400, "it ran until its timeout: {took} ms");
    std::fs::remove_file(init.dir().join("slow")).unwrap();
    wait_health(&init, "svc", "healthy");
    // The timed-out checks' whole groups were killed: no `sleep 30` is left.
    let leftovers: Vec<i32> = init
        .namespace_pids()
        .into_iter()
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"sleep\x0030"))
        })
        .collect();
    assert!(leftovers.is_empty(), "check processes left: {leftovers:?}");
    assert!(init.zombies().is_empty(), "zombies: {:?}", init.zombies());
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn heartbeat_and_silence_checks_judge_this_run_only() {
    let builder = init().file(
        "a.toml",
        r#"
[program.beater]
command = ["/bin/sh", "-c", "while :; do [ -e {dir}/freeze ] || touch {dir}/beat; sleep 0.05; done"]
[program.beater.health]
check = { heartbeat = "{dir}/beat", max_age = "400ms" }
interval = "100ms"
failures = 1
on_failure = "mark"

[program.stale]
command = ["sleep", "600"]
[program.stale.health]
check = { heartbeat = "{dir}/stale-beat", max_age = "1h" }
interval = "100ms"
failures = 1
on_failure = "mark"

[program.talker]
command = ["/bin/sh", "-c", "while :; do [ -e {dir}/quiet ] || echo tick; sleep 0.05; done"]
[program.talker.health]
check = { silence = "400ms" }
interval = "100ms"
failures = 1
on_failure = "mark"
"#,
    );
    // A heartbeat file left from before ctrlinit started, fresh by its age: it must not count.
    std::fs::write(builder.dir().join("stale-beat"), "").unwrap();
    let init = builder.start();
    wait_health(&init, "beater", "healthy");
    wait_health(&init, "talker", "healthy");
    let p = wait_health(&init, "stale", "unhealthy");
    assert!(
        p["health"]["last"]["output"]
            .as_str()
            .unwrap()
            .contains("has not been touched by this run"),
        "{p}"
    );
    std::fs::write(init.dir().join("freeze"), "").unwrap();
    std::fs::write(init.dir().join("quiet"), "").unwrap();
    let p = wait_health(&init, "beater", "unhealthy");
    assert!(
        p["health"]["last"]["output"]
            .as_str()
            .unwrap()
            .contains("last touched"),
        "{p}"
    );
    let p = wait_health(&init, "talker", "unhealthy");
    assert!(
        p["health"]["last"]["output"]
            .as_str()
            .unwrap()
            .starts_with("no output for"),
        "{p}"
    );
    std::fs::remove_file(init.dir().join("freeze")).unwrap();
    std::fs::remove_file(init.dir().join("quiet")).unwrap();
    wait_health(&init, "beater", "healthy");
    wait_health(&init, "talker", "healthy");
}

#[test]
fn failures_within_the_start_period_do_not_count() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.slow]
command = ["sleep", "600"]
[program.slow.health]
check = { exec = ["false"] }
interval = "100ms"
failures = 1
start_period = "5s"
on_failure = "mark"
"#,
        )
        .start();
    init.wait_states(&["slow=running"]);
    // Failures are made and counted in the totals, but the program stays `starting`.
    wait_until("failures made in the start period", DEADLINE, || {
        let p = init.program_json("slow");
        let made = p["health"]["failures_total"].as_u64() >= Some(2);
        (made && p["health"]["status"] == "starting").then_some(())
    });
    let p = wait_health(&init, "slow", "unhealthy");
    // A lower bound only: the run became ready after its spawn, so the start period ends no
    // sooner than 5 s into its uptime.
    let uptime = p["uptime_ms"].as_u64().unwrap();
    assert!(uptime >= 5000, "unhealthy after {uptime} ms");
}

#[test]
fn a_ready_file_left_by_the_last_run_does_not_make_a_restart_ready() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.api]
command = ["/bin/sh", "-c", "n=$(cat {dir}/runs 2>/dev/null | wc -l); echo run >> {dir}/runs; until [ -e {dir}/go.$n ]; do sleep 0.02; done; touch {dir}/api.ready; exec sleep 600"]
ready = { file = "{dir}/api.ready", interval = "20ms" }
"#,
        )
        .start();
    std::fs::write(init.dir().join("go.0"), "").unwrap();
    init.wait_states(&["api=running"]);
    let (code, out) = init.ctl(&["restart", "api", "--timeout", "1s"]);
    // The ready file still exists, but it is the last run's: the restart is not ready until
    // this run writes it.
    assert_ne!(
        code, 0,
        "restart must wait for the new run's ready file: {out}"
    );
    assert_eq!(init.program_json("api")["state"], "starting");
    std::fs::write(init.dir().join("go.1"), "").unwrap();
    init.wait_states(&["api=running"]);
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn http_readiness_counts_3xx_and_follows_no_redirect() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.web]
command = ["/usr/bin/python3", "{HTTPD}", "{port}", "{{dir}}"]
ready = {{ http = "http://127.0.0.1:{port}/redirect", interval = "50ms" }}
"#
            ),
        )
        .start();
    init.wait_states(&["web=running"]);
    // The program's request lines travel through the log thread, behind the state change: all
    // of them are in once ctrlinit has exited.
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let out = init.output();
    assert!(out.contains("GET /redirect"), "{out}");
    assert!(
        !out.contains("GET /nowhere"),
        "the redirect is not followed: {out}"
    );
}

const JAMMED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/programs/jammed_listener.py"
);

#[test]
fn a_tcp_check_that_gets_no_answer_times_out_and_counts_as_a_failure() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.listener]
command = ["/usr/bin/python3", "{JAMMED}", "{port}", "{{dir}}"]
ready = {{ tcp = "127.0.0.1:{port}", interval = "50ms" }}

[program.watched]
command = ["sleep", "600"]
depends_on = {{ listener = "ready" }}
[program.watched.health]
check = {{ tcp = "127.0.0.1:{port}" }}
interval = "100ms"
timeout = "300ms"
failures = 2
on_failure = "mark"
"#
            ),
        )
        .start();
    init.wait_states(&["listener=running", "watched=running"]);
    let p = wait_health(&init, "watched", "healthy");
    assert_eq!(
        p["health"]["last"]["output"],
        format!("connected to 127.0.0.1:{port}")
    );
    let pid = p["pid"].clone();
    // The listener's accept queue is full: the kernel drops the check's SYN, so its connect is
    // neither accepted nor refused.
    std::fs::write(init.dir().join("jam"), "").unwrap();
    init.wait_for_line("listener | jammed");
    let check = format!("tcp 127.0.0.1:{port}");
    init.wait_for_line(&format!(
        "watched: health: healthy -> unhealthy 1/2: {check}: timed out after 300ms"
    ));
    let p = wait_health(&init, "watched", "unhealthy");
    let last = &p["health"]["last"];
    assert_eq!(last["passed"], false, "{p}");
    assert_eq!(last["output"], "timed out after 300ms", "{p}");
    let took = last["took_ms"].as_u64().unwrap();
    assert!(took >= 300, "it waited for its timeout: {took} ms");
    assert!(p["health"]["failures_total"].as_u64() >= Some(2), "{p}");
    assert_eq!(p["pid"], pid, "mark: the same run goes on: {p}");
    let (code, out) = init.ctl(&["health"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("watched is unhealthy") && out.contains("timed out after 300ms"),
        "{out}"
    );
    // Let go: the next connect is accepted and it recovers.
    std::fs::remove_file(init.dir().join("jam")).unwrap();
    init.wait_for_line("listener | unjammed");
    let p = wait_health(&init, "watched", "healthy");
    assert_eq!(p["pid"], pid);
    assert_eq!(init.ctl(&["health"]).0, 0);
    let refused: Vec<String> = init
        .lines()
        .into_iter()
        .filter(|l| l.contains("watched: health") && l.contains("refused"))
        .collect();
    assert!(refused.is_empty(), "no check was refused: {refused:?}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn an_http_check_in_mark_mode_fails_past_its_threshold_and_recovers_without_a_restart() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.web]
command = ["/usr/bin/python3", "{HTTPD}", "{port}", "{{dir}}"]
ready = {{ http = "http://127.0.0.1:{port}/ready", interval = "50ms" }}

[program.web.health]
check = {{ http = "http://127.0.0.1:{port}/healthz" }}
interval = "1s"
timeout = "2s"
failures = 3
successes = 2
on_failure = "mark"
"#
            ),
        )
        .start();
    init.wait_states(&["web=running"]);
    let p = wait_health(&init, "web", "healthy");
    let (pid, run) = (p["pid"].clone(), p["run"].clone());
    std::fs::write(init.dir().join("sick"), "").unwrap();
    init.wait_for_line("web: health: healthy -> unhealthy 1/3: http");
    // Below the threshold `status` counts the failures; with a check every second, each count
    // is shown for about a second, many times what a status request takes.
    let table = wait_until("status showing unhealthy n/3", DEADLINE, || {
        let (_, table) = init.ctl(&["status"]);
        (table.contains("unhealthy 1/3") || table.contains("unhealthy 2/3")).then_some(table)
    });
    assert!(table.contains("HEALTH"), "{table}");
    assert_eq!(
        init.ctl(&["health"]).0,
        0,
        "below its threshold a program is not unhealthy yet"
    );
    init.wait_for_line("web: health: unhealthy 2/3 -> unhealthy: http");
    let p = wait_health(&init, "web", "unhealthy");
    assert_eq!(p["health"]["last"]["output"], "HTTP 500 Sick", "{p}");
    let (code, out) = init.ctl(&["health"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("web is unhealthy"), "{out}");
    let (_, table) = init.ctl(&["status"]);
    // NAME TYPE STATE HEALTH PID …: past the threshold the count is gone.
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("web "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(row[2..4], ["running", "unhealthy"], "{table}");
    assert!(row[4].parse::<u32>().is_ok(), "the PID column: {table}");
    // Mark only reports: the same run goes on.
    std::fs::remove_file(init.dir().join("sick")).unwrap();
    let p = wait_health(&init, "web", "healthy");
    assert_eq!((&p["pid"], &p["run"]), (&pid, &run), "no restart: {p}");
    assert_eq!(p["restarts"], 0, "{p}");
    assert_eq!(p["restarts_by_cause"]["health"], 0, "{p}");
    assert_eq!(init.ctl(&["health"]).0, 0);
    let out = init.output();
    assert!(!out.contains("web: running -> stopping"), "{out}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn an_exec_checks_output_is_cut_to_512_bytes_and_carries_its_time() {
    use std::time::{Duration, SystemTime};
    // The check prints `begin` and then as many bytes as {dir}/size says: 10 000 (less than a
    // pipe holds), then 200 000 (more).
    let since = SystemTime::now();
    let builder = init().file(
        "a.toml",
        r#"
[program.svc]
command = ["sleep", "600"]
[program.svc.health]
check = { exec = ["/bin/sh", "-c", "echo begin; head -c $(cat {dir}/size) /dev/zero | tr '\\0' x"] }
interval = "100ms"
timeout = "5s"
failures = 1
on_failure = "mark"
"#,
    );
    std::fs::write(builder.dir().join("size"), "10000").unwrap();
    let mut init = builder.start();
    let p = wait_health(&init, "svc", "healthy");
    let last = &p["health"]["last"];
    let output = last["output"].as_str().unwrap();
    assert!(output.len() <= 512, "{} bytes: {output}", output.len());
    assert!(
        output.len() >= 256 && output.starts_with("begin xxx"),
        "cut, not dropped: {output}"
    );
    assert!(!output.contains('\n'), "on one line: {output}");
    let time = humantime::parse_rfc3339(last["time"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("time is RFC 3339 ({e}): {last}"));
    let now = SystemTime::now();
    // Whole seconds of slack: the time may be rounded, the clocks read apart.
    assert!(
        time + Duration::from_secs(1) >= since && time <= now + Duration::from_secs(1),
        "the check ended within the test: {last}"
    );
    let ago = Duration::from_millis(last["ago_ms"].as_u64().unwrap());
    let age = now.duration_since(time).unwrap_or_default();
    assert!(
        ago <= age + Duration::from_secs(1),
        "ago_ms agrees with time: {last}"
    );
    // More than a pipe holds: the check must still end, pass, and show its beginning.
    std::fs::write(init.dir().join("size"), "200000").unwrap();
    let seen = p["health"]["checks_total"].as_u64().unwrap();
    let p = wait_until("two checks since", DEADLINE, || {
        let p = try_program_json(&init, "svc")?;
        (p["health"]["checks_total"].as_u64()? >= seen + 2).then_some(p)
    });
    let last = &p["health"]["last"];
    assert_eq!(last["passed"], true, "{p}");
    assert_eq!(p["health"]["status"], "healthy", "{p}");
    let output = last["output"].as_str().unwrap();
    assert!(
        output.len() <= 512 && output.starts_with("begin xxx"),
        "{output}"
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

//! The control plane against the real binary as PID 1 (issue 4): every client command and its
//! exit status — status (table, JSON, --wait), start/stop/restart semantics, signal, logs (-n and
//! -f), events, health, shutdown, graph — and unknown-program errors.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn pid_of(init: &Init, name: &str) -> i64 {
    init.pid_of(name)
        .unwrap_or_else(|| panic!("{name} has no pid"))
}

/// Waits for a child to exit, up to `timeout`; returns its code and when it was seen exiting.
fn wait_child(child: &mut Child, timeout: Duration) -> (i32, Instant) {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return (s.code().unwrap_or(-1), Instant::now());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("client did not exit within {timeout:?}");
        }
        std::thread::park_timeout(Duration::from_millis(2));
    }
}

const SLEEPER: &str = r#"["/bin/sleep", "1000"]"#;

/// a ← b ← c (c requires b, b requires a), and an unrelated d.
fn chain() -> String {
    format!(
        r#"
[program.a]
command = {SLEEPER}

[program.b]
command = {SLEEPER}
depends_on = ["a"]

[program.c]
command = {SLEEPER}
depends_on = ["b"]

[program.d]
command = {SLEEPER}
"#
    )
}

#[test]
fn status_table_json_and_exit_codes() {
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.web]
command = {SLEEPER}

[program.setup]
type = "oneshot"
command = ["/bin/true"]

[program.worker]
command = {SLEEPER}
depends_on = ["setup"]
"#
            ),
        )
        .start();
    init.wait_states(&["web=running", "setup=completed", "worker=running"]);
    // All up: exit 0, a table with a header and a row per program.
    let (code, out) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{out}");
    // The boot's line above the table (issue 25) is not part of it.
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with("boot ")).collect();
    for column in ["NAME", "TYPE", "STATE", "PID", "UPTIME", "RESTARTS"] {
        assert!(lines[0].contains(column), "header lacks {column}: {out}");
    }
    assert_eq!(lines.len(), 4, "{out}");
    let row = |name: &str| -> Vec<String> {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}: {out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(row("web")[1..3], ["service", "running"], "{out}");
    assert_eq!(row("setup")[1..3], ["oneshot", "completed"], "{out}");
    // JSON: a list of objects with name, state and pid (the pid the program sees as its own).
    let list = init.status_json();
    let names: Vec<&str> = list.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 3, "{list:?}");
    for name in ["web", "setup", "worker"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let web = init.program_json("web");
    assert_eq!(web["state"], "running");
    let ns_pid = web["pid"].as_i64().unwrap() as i32;
    assert!(
        host_pid(&init, ns_pid).is_some_and(alive),
        "web's pid {ns_pid} is not running"
    );
    assert!(init.program_json("setup")["pid"].is_null());
    // Names select programs.
    let (code, out) = init.ctl(&["status", "--json", "web"]);
    assert_eq!(code, 0);
    let one: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(one.as_array().unwrap().len(), 1);
    assert_eq!(one[0]["name"], "web");
    // One stopped by hand: exit 3, for the table and the JSON alike.
    let (code, out) = init.ctl(&["stop", "web"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = init.ctl(&["status"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("web") && l.contains("stopped")),
        "{out}"
    );
    let (code, _) = init.ctl(&["status", "--json"]);
    assert_eq!(code, 3);
    assert_eq!(init.program_json("web")["state"], "stopped");
    assert!(init.program_json("web")["pid"].is_null());
    // Only the others: 0 again.
    let (code, out) = init.ctl(&["status", "setup", "worker"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn status_of_an_unreachable_init_exits_4_and_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nobody-here.sock");
    for args in [&["status"][..], &["status", "--json"]] {
        let out = Command::new(bin())
            .args(args)
            .env("CTRLINIT_SOCKET", &socket)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(socket.to_str().unwrap()), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one clear line: {err}");
    }
    // A stale socket file with nobody behind it is unreachable too.
    std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let out = Command::new(bin())
        .arg("status")
        .env("CTRLINIT_SOCKET", &socket)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
}

#[test]
fn status_wait_returns_as_soon_as_the_state_holds_and_exits_1_on_timeout() {
    let init = init()
        .file(
            "a.toml",
            &format!("[program.late]\ncommand = {SLEEPER}\nautostart = false\n"),
        )
        .start();
    init.wait_states(&["late=stopped"]);
    let (mut waiter, _) =
        init.spawn_client(&["status", "--wait", "late=running", "--timeout", "20s"]);
    // It blocks while the state does not hold.
    let (code, out) = init.ctl(&["status", "--wait", "late=running", "--timeout", "300ms"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        waiter.try_wait().unwrap().is_none(),
        "--wait returned before the state held"
    );
    let (code, out) = init.ctl(&["start", "late"]);
    let started = Instant::now();
    assert_eq!(code, 0, "{out}");
    let (code, done) = wait_child(&mut waiter, Duration::from_secs(20));
    assert_eq!(code, 0);
    let latency = done.saturating_duration_since(started);
    assert!(
        latency < Duration::from_secs(2),
        "--wait returned {latency:?} after the state held"
    );
    // Timeout: exit 1, after the timeout and not much later, with a line saying what is unmet.
    let t = Instant::now();
    let (code, out) = init.ctl(&["status", "--wait", "late=stopped", "--timeout", "500ms"]);
    let took = t.elapsed();
    assert_eq!(code, 1, "{out}");
    assert!(took >= Duration::from_millis(500), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(out.contains("late is running"), "{out}");
    // The timeout given, not what was left of it once connected ("timed out after 499ms").
    assert!(out.contains("timed out after 500ms"), "{out}");
    // Alternatives, and several conditions at once.
    let (code, out) = init.ctl(&[
        "status",
        "--wait",
        "late=backoff|running",
        "--timeout",
        "5s",
    ]);
    assert_eq!(code, 0, "{out}");
    // An unknown program is a usage error, at once.
    let (code, out) = init.ctl(&["status", "--wait", "ghost=running", "--timeout", "5s"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("ghost") && out.contains("late"), "{out}");
}

#[test]
fn stop_stops_dependents_first_and_the_stopped_stay_stopped_uncounted() {
    let init = init().file("a.toml", &chain()).start();
    init.wait_states(&["a=running", "b=running", "c=running", "d=running"]);
    let d_pid = pid_of(&init, "d");
    let (code, out) = init.ctl(&["stop", "a"]);
    assert_eq!(code, 0, "{out}");
    // The command returned once the change was applied.
    for name in ["a", "b", "c"] {
        let p = init.program_json(name);
        assert_eq!(p["state"], "stopped", "{p}");
        assert!(p["pid"].is_null(), "{p}");
        assert_eq!(p["stopped_by_hand"], true, "{p}");
    }
    assert_eq!(
        pid_of(&init, "d"),
        d_pid,
        "an unrelated program is untouched"
    );
    // Dependents first: c, then b, then a (ctrlinit's log reaches us a little later).
    init.wait_for_line("a: stopping -> stopped");
    let lines = init.lines();
    let at =
        |needle: &str| index_of_line(&lines, needle).unwrap_or_else(|| panic!("no {needle:?}"));
    assert!(at("c: stopping -> stopped") < at("b: running -> stopping"));
    assert!(at("b: stopping -> stopped") < at("a: running -> stopping"));
    // Not restarted: nothing leaves `stopped` within a generous window.
    let (code, out) = init.ctl(&[
        "status",
        "--wait",
        "a=waiting|starting|running|backoff",
        "--timeout",
        "1s",
    ]);
    assert_eq!(code, 1, "a stopped program came back: {out}");
    // Not counted as a failure.
    for name in ["a", "b", "c"] {
        let p = init.program_json(name);
        assert_eq!(p["state"], "stopped", "{p}");
        assert_eq!(p["restarts"], 0, "{p}");
        assert_eq!(p["restarts_in_window"], 0, "{p}");
    }
    // Stopping what is stopped is fine.
    let (code, out) = init.ctl(&["stop", "a"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn stopping_a_dependency_says_which_dependents_it_stops() {
    let init = init().file("a.toml", &chain()).start();
    init.wait_states(&["a=running", "b=running", "c=running"]);
    let (code, out) = init.ctl(&["stop", "a"]);
    assert_eq!(code, 0, "{out}");
    // "stopping db stops what requires it first, saying so"
    let words: Vec<&str> = out.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    assert!(
        ["a", "b", "c"].iter().all(|n| words.contains(n)),
        "the stop command does not say it stopped b and c (which require a): {out:?}"
    );
}

#[test]
fn start_pulls_in_dependencies() {
    let init = init().file("a.toml", &chain()).start();
    init.wait_states(&["a=running", "b=running", "c=running"]);
    let (code, out) = init.ctl(&["stop", "a"]);
    assert_eq!(code, 0, "{out}");
    // Starting c brings b and a back, in dependency order; it returns once c runs.
    let (code, out) = init.ctl(&["start", "c"]);
    assert_eq!(code, 0, "{out}");
    for name in ["a", "b", "c"] {
        let p = init.program_json(name);
        assert_eq!(p["state"], "running", "{p}");
        assert_eq!(p["stopped_by_hand"], false, "{p}");
        assert_eq!(p["restarts"], 0, "by hand is not counted: {p}");
    }
    init.wait_for_nth_line("c: starting -> running", 2, DEADLINE);
    let lines = init.lines();
    let last = |needle: &str| {
        lines
            .iter()
            .rposition(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?}"))
    };
    assert!(last("a: starting -> running") < last("b: waiting -> starting"));
    assert!(last("b: starting -> running") < last("c: waiting -> starting"));
    // start --all: everything is up already; it succeeds.
    let (code, out) = init.ctl(&["start", "--all"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_start_that_fails_or_times_out_says_so_with_exit_1() {
    // Neither ever becomes ready (their readiness file never appears): `broken` exits 3 first,
    // `slow` just never gets there.
    let init = init()
        .file(
            "a.toml",
            r#"
[program.broken]
command = ["/bin/sh", "-c", "sleep 0.2; exit 3"]
ready = { file = "{dir}/never" }
autostart = false
restart = "never"

[program.slow]
command = ["/bin/sleep", "1000"]
ready = { file = "{dir}/never" }
autostart = false
"#,
        )
        .start();
    init.wait_states(&["broken=stopped", "slow=stopped"]);
    let (code, out) = init.ctl(&["start", "broken", "--timeout", "15s"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("broken") && out.contains("exit status 3"),
        "{out}"
    );
    assert_eq!(out.trim_end().lines().count(), 1, "one clear line: {out}");
    let t = Instant::now();
    let (code, out) = init.ctl(&["start", "slow", "--timeout", "500ms"]);
    assert_eq!(code, 1, "{out}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(out.contains("slow") && out.contains("timed out"), "{out}");
    assert_eq!(out.trim_end().lines().count(), 1, "one clear line: {out}");
}

#[test]
fn restart_gives_new_pids_to_the_program_and_its_dependents() {
    let init = init().file("a.toml", &chain()).start();
    init.wait_states(&["a=running", "b=running", "c=running", "d=running"]);
    let before: Vec<i64> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| pid_of(&init, n))
        .collect();
    let (code, out) = init.ctl(&["restart", "a"]);
    assert_eq!(code, 0, "{out}");
    // Returned once applied: all running again.
    let after: Vec<i64> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| pid_of(&init, n))
        .collect();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        assert_ne!(before[i], after[i], "{name} kept its pid");
        let p = init.program_json(name);
        assert_eq!(p["state"], "running");
        assert_eq!(p["restarts"], 0, "by hand is not counted: {p}");
    }
    assert_eq!(before[3], after[3], "d does not depend on a");
    // Restarting a leaf restarts only it.
    let (code, out) = init.ctl(&["restart", "c"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(pid_of(&init, "a"), after[0]);
    assert_eq!(pid_of(&init, "b"), after[1]);
    assert_ne!(pid_of(&init, "c"), after[2]);
}

#[test]
fn signal_reaches_the_program() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.hup]
command = ["/bin/sh", "-c", "trap 'echo got-hup >> {dir}/hup' HUP; touch {dir}/hup.ready; while :; do sleep 0.05; done"]
# running only once the trap is set
ready = { file = "{dir}/hup.ready", interval = "10ms" }
"#,
        )
        .start();
    init.wait_states(&["hup=running"]);
    let pid = pid_of(&init, "hup");
    let (code, out) = init.ctl(&["signal", "HUP", "hup"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("SIGHUP"), "{out}");
    assert_eq!(
        wait_for_lines_in(&init.dir().join("hup"), 1),
        vec!["got-hup"]
    );
    let (code, out) = init.ctl(&["signal", "SIGHUP", "hup"]);
    assert_eq!(code, 0, "{out}");
    wait_for_lines_in(&init.dir().join("hup"), 2);
    assert_eq!(pid_of(&init, "hup"), pid, "trapped: still the same process");
    // A bad signal name is an error; an unknown program is a usage error.
    let (code, out) = init.ctl(&["signal", "NOSUCH", "hup"]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = init.ctl(&["signal", "HUP", "ghost"]);
    assert_eq!(code, 2, "{out}");
}

#[test]
fn logs_prints_the_last_lines_with_prefixes() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.talker]
command = ["/bin/sh", "-c", "seq 1 20; echo oops >&2; exec sleep 1000"]

[program.quiet]
command = ["/bin/sh", "-c", "echo hello; exec sleep 1000"]
"#,
        )
        .start();
    init.wait_for_line("talker   ! oops");
    init.wait_for_line("quiet    | hello");
    let (code, out) = init.ctl(&["logs", "talker", "-n", "5"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "talker   | 17\ntalker   | 18\ntalker   | 19\ntalker   | 20\ntalker   ! oops\n"
    );
    // All programs by default.
    let (code, out) = init.ctl(&["logs", "-n", "1"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("talker   ! oops\n") && out.contains("quiet    | hello\n"),
        "{out}"
    );
    // Unknown program: usage error naming the known ones.
    let (code, out) = init.ctl(&["logs", "ghost"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("talker") && out.contains("quiet"), "{out}");
}

#[test]
fn logs_merges_programs_in_the_order_lines_were_written() {
    // `zed` writes first, `abe` answers: name order would put every `abe` line first. Each step
    // waits for the one before to reach the console, then a short pause in the program itself
    // keeps their read times apart.
    let step = |name: &str, go: &str| {
        format!("until [ -e {{dir}}/{go} ]; do sleep 0.01; done; sleep 0.02; echo {name}")
    };
    let init = init()
        .file(
            "a.toml",
            &format!(
                "[program.zed]\ncommand = [\"/bin/sh\", \"-c\", \"echo zed-1; {}; exec sleep 1000\"]\n\n[program.abe]\ncommand = [\"/bin/sh\", \"-c\", \"{}; {}; exec sleep 1000\"]\n",
                step("zed-2", "go1"),
                step("abe-1", "go0"),
                step("abe-2", "go2"),
            ),
        )
        .start();
    for (line, go) in [("zed-1", "go0"), ("abe-1", "go1"), ("zed-2", "go2")] {
        init.wait_for_line(&format!("| {line}"));
        std::fs::write(init.dir().join(go), "").unwrap();
    }
    init.wait_for_line("| abe-2");
    let (code, out) = init.ctl(&["logs", "-n", "5"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out, "zed      | zed-1\nabe      | abe-1\nzed      | zed-2\nabe      | abe-2\n",
        "merged in time order"
    );
    let (code, out) = init.ctl(&["logs", "-n", "5", "--by-program"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "abe      | abe-1\nabe      | abe-2\nzed      | zed-1\nzed      | zed-2\n"
    );
}

#[test]
fn logs_follow_streams_live_output() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.tick]
command = ["/bin/sh", "-c", "i=0; while :; do i=$((i+1)); echo tick-$i; sleep 0.02; done"]
"#,
        )
        .start();
    init.wait_for_line("tick     | tick-3");
    let (mut client, lines) = init.spawn_client(&["logs", "tick", "-f", "-n", "1"]);
    let mut got = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    while got.len() < 6 {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) => got.push(l),
            Err(_) => {
                let _ = client.kill();
                panic!("logs -f printed only {got:?}");
            }
        }
    }
    let _ = client.kill();
    let _ = client.wait();
    let numbers: Vec<u64> = got
        .iter()
        .map(|l| {
            l.strip_prefix("tick     | tick-")
                .unwrap_or_else(|| panic!("unprefixed line {l:?}"))
                .parse()
                .unwrap()
        })
        .collect();
    // The ring's last line, then live lines, in order, none twice.
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
}

/// A follower whose init goes away says so, instead of ending as if the user had stopped it.
#[test]
fn logs_follow_says_when_the_init_goes_away() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.tick]
command = ["/bin/sh", "-c", "i=0; while :; do i=$((i+1)); echo tick-$i; sleep 0.05; done"]
"#,
        )
        .start();
    init.wait_for_line("tick     | tick-2");
    let mut clients = Vec::new();
    for args in [&["logs", "tick", "-f"][..], &["events"][..]] {
        let mut client = Command::new(bin())
            .args(args)
            .env("CTRLINIT_SOCKET", &init.socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Connected once it printed something (the ring's lines; the events header).
        let mut out = BufReader::new(client.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        assert!(!first.is_empty(), "{args:?} printed nothing");
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        clients.push(client);
    }
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    for mut client in clients {
        let status = wait_until("the follower to end", DEADLINE, || {
            client.try_wait().unwrap()
        });
        let mut err = String::new();
        client
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(
            err.contains("the init closed the stream (it stopped or is restarting)"),
            "a follower ended without a word ({status}): {err:?}"
        );
    }
}

#[test]
fn events_stream_state_changes() {
    let init = init()
        .file(
            "a.toml",
            &format!("[program.a]\ncommand = {SLEEPER}\n\n[program.ping]\ncommand = {SLEEPER}\n"),
        )
        .start();
    init.wait_states(&["a=running", "ping=running"]);
    let (mut client, lines) = init.spawn_client(&["events", "--json"]);
    // Until the stream shows something, it may not be subscribed yet: poke with restarts.
    let deadline = Instant::now() + DEADLINE;
    let first = loop {
        let (code, out) = init.ctl(&["restart", "ping"]);
        assert_eq!(code, 0, "{out}");
        if let Ok(l) = lines.recv_timeout(Duration::from_millis(200)) {
            break l;
        }
        assert!(Instant::now() < deadline, "events printed nothing");
    };
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert!(v["seq"].is_u64() && v["message"].is_string(), "{first}");
    let (code, out) = init.ctl(&["stop", "a"]);
    assert_eq!(code, 0, "{out}");
    let mut seen = Vec::new();
    let mut last_seq = v["seq"].as_u64().unwrap();
    loop {
        let l = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no stopped event for a; saw {seen:#?}"));
        let e: serde_json::Value = serde_json::from_str(&l).unwrap();
        let seq = e["seq"].as_u64().unwrap();
        assert!(seq > last_seq, "sequence numbers grow: {l}");
        last_seq = seq;
        seen.push(l);
        if e["program"] == "a" && e["to"] == "stopped" {
            assert_eq!(e["from"], "stopping", "{e}");
            break;
        }
    }
    assert!(
        seen.iter()
            .any(|l| l.contains("\"to\":\"stopping\"") && l.contains("\"program\":\"a\"")),
        "{seen:#?}"
    );
    let _ = client.kill();
    let _ = client.wait();
    // The plain form: a header with the current states at once (a quiet container does not
    // look like a hung command), then one line per change.
    let (mut plain, lines) = init.spawn_client(&["events"]);
    let header = lines
        .recv_timeout(DEADLINE)
        .expect("events printed no header");
    assert!(
        header.starts_with("watching 2 programs: a stopped, ping running;"),
        "{header}"
    );
    let line = loop {
        let (code, out) = init.ctl(&["restart", "ping"]);
        assert_eq!(code, 0, "{out}");
        if let Ok(l) = lines.recv_timeout(Duration::from_millis(200)) {
            break l;
        }
        assert!(Instant::now() < deadline, "events printed nothing");
    };
    assert!(line.contains(" ping: "), "{line}");
    let _ = plain.kill();
    let _ = plain.wait();
}

#[test]
fn health_is_0_or_1_only() {
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.fine]
command = {SLEEPER}

[program.setup]
type = "oneshot"
command = ["/bin/true"]

[program.flaky]
command = ["/bin/sh", "-c", "exit 1"]
backoff = {{ initial = "60s", max = "60s" }}

[program.lazy]
command = {SLEEPER}
autostart = false
"#
            ),
        )
        .start();
    init.wait_states(&["fine=running", "setup=completed", "flaky=backoff"]);
    // A crashing service in backoff: unhealthy, one line naming it.
    let (code, out) = init.ctl(&["health"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("flaky"), "{out}");
    assert!(!out.contains("fine"), "{out}");
    assert_eq!(out.trim_end().lines().count(), 1, "one line: {out}");
    // Stopped by hand: healthy (a probe must not undo an operator's stop), unless --strict.
    let (code, out) = init.ctl(&["stop", "flaky"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = init.ctl(&["health"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = init.ctl(&["health", "--strict"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("flaky"), "{out}");
    // `autostart = false` wants it stopped: healthy even with --strict.
    assert!(!out.contains("lazy"), "{out}");
    // A bad probe command line: 1 too, with clap's message.
    let out = Command::new(bin())
        .args(["health", "--no-such-flag"])
        .env("CTRLINIT_SOCKET", &init.socket)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // Unreachable: 1, never 2 (Docker reserves it) nor 4.
    let out = Command::new(bin())
        .arg("health")
        .env("CTRLINIT_SOCKET", init.dir().join("elsewhere.sock"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let out = Command::new(bin())
        .args(["health", "--strict"])
        .env("CTRLINIT_SOCKET", init.dir().join("elsewhere.sock"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

#[test]
fn shutdown_stops_everything_and_the_init_exits_0() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.svc]
command = ["/bin/sh", "-c", "trap 'echo term >> {dir}/svc; exit 0' TERM; touch {dir}/svc.ready; while :; do sleep 0.05; done"]
# running only once the trap is set
ready = { file = "{dir}/svc.ready", interval = "10ms" }
"#,
        )
        .start();
    init.wait_states(&["svc=running"]);
    let (code, out) = init.ctl(&["shutdown"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    assert_eq!(
        file_lines(&init.dir().join("svc")),
        vec!["term"],
        "graceful: SIGTERM"
    );
    assert!(!init.socket.exists(), "the socket is removed at exit");
    let (code, _) = init.ctl(&["status"]);
    assert_eq!(code, 4);
}

#[test]
fn graph_shows_edges_in_dot_and_mermaid_live_and_from_config() {
    let init = init().file("a.toml", &chain()).start();
    init.wait_states(&["a=running", "b=running", "c=running", "d=running"]);
    let (code, dot) = init.ctl(&["graph", "--format", "dot"]);
    assert_eq!(code, 0, "{dot}");
    assert!(dot.trim_start().starts_with("digraph"), "{dot}");
    assert!(
        dot.contains(r#""a" -> "b""#) && dot.contains(r#""b" -> "c""#),
        "{dot}"
    );
    assert!(!dot.contains(r#"-> "d""#), "{dot}");
    assert!(dot.contains("running"), "live states: {dot}");
    let (code, mermaid) = init.ctl(&["graph", "--format", "mermaid"]);
    assert_eq!(code, 0, "{mermaid}");
    assert!(mermaid.trim_start().starts_with("flowchart"), "{mermaid}");
    let edge = |from: &str, to: &str| {
        mermaid.lines().any(|l| {
            l.trim_start().starts_with(&format!("{from} -->")) && l.trim_end().ends_with(to)
        })
    };
    assert!(edge("a", "b") && edge("b", "c"), "{mermaid}");
    // Default format is dot.
    let (code, default) = init.ctl(&["graph"]);
    assert_eq!(code, 0);
    assert!(default.contains(r#""a" -> "b""#), "{default}");
    // Without a running init: from the config alone.
    let out = Command::new(bin())
        .args(["graph", "--format", "dot", "--config-dir"])
        .arg(init.dir().join("conf.d"))
        .env("CTRLINIT_SOCKET", init.dir().join("elsewhere.sock"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        text.contains(r#""a" -> "b""#) && text.contains(r#""b" -> "c""#),
        "{text}"
    );
    assert!(
        !text.contains("running"),
        "no states without an init: {text}"
    );
}

#[test]
fn unknown_programs_are_exit_2_with_the_known_names() {
    let init = init().file("a.toml", &chain()).start();
    init.wait_states(&["a=running"]);
    for args in [
        &["status", "ghost"][..],
        &["start", "ghost"],
        &["stop", "ghost"],
        &["restart", "ghost"],
        &["signal", "TERM", "ghost"],
        &["logs", "ghost"],
    ] {
        let (code, out) = init.ctl(args);
        assert_eq!(code, 2, "{args:?}: {out}");
        let words: Vec<&str> = out.split(|c: char| !c.is_ascii_alphanumeric()).collect();
        assert!(words.contains(&"ghost"), "{args:?}: {out}");
        for known in ["a", "b", "c", "d"] {
            assert!(
                words.contains(&known),
                "{args:?} does not name {known}: {out}"
            );
        }
        assert_eq!(
            out.trim_end().lines().count(),
            1,
            "{args:?}: one clear line: {out}"
        );
    }
    // Nothing was touched.
    for name in ["a", "b", "c", "d"] {
        assert_eq!(init.program_json(name)["state"], "running");
    }
}

#[test]
fn a_member_of_name_takes_its_programs_as_supervisorctl_groups_did() {
    let init = init()
        .file(
            "a.toml",
            &format!(
                "[program.api]\ncommand = {SLEEPER}\nmember_of = \"backend\"\n[program.worker]\ncommand = {SLEEPER}\nmember_of = \"backend\"\n[program.cron]\ncommand = {SLEEPER}\n"
            ),
        )
        .start();
    init.wait_states(&["api=running", "worker=running", "cron=running"]);
    let (api, worker, cron) = (
        init.pid_of("api"),
        init.pid_of("worker"),
        init.pid_of("cron"),
    );
    let (code, out) = init.ctl(&["restart", "backend"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["api=running", "worker=running"]);
    assert_ne!(init.pid_of("api"), api, "api restarted");
    assert_ne!(init.pid_of("worker"), worker, "worker restarted");
    assert_eq!(init.pid_of("cron"), cron, "cron is no member");
    // supervisorctl's spellings: GROUP:* and GROUP:NAME.
    let (code, out) = init.ctl(&["status", "backend:*"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("api") && out.contains("worker") && !out.contains("cron"),
        "{out}"
    );
    let (code, out) = init.ctl(&["stop", "backend:worker"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["worker=stopped", "api=running"]);
    let (code, out) = init.ctl(&["status", "nosuch"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("backend"),
        "the shared name is among the known: {out}"
    );
}

#[test]
fn shell_patterns_name_every_program_they_match_in_any_command() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.svc-a]
command = ["sleep", "1000"]
[program.svc-b]
command = ["sleep", "1000"]
[program.db]
command = ["sleep", "1000"]
[program.prov]
type = "oneshot"
command = ["true"]
max_restarts = 0
"#,
        )
        .start();
    init.wait_states(&[
        "svc-a=running",
        "svc-b=running",
        "db=running",
        "prov=completed",
    ]);
    let (code, out) = init.ctl(&["status", "svc-*"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("svc-a") && out.contains("svc-b"), "{out}");
    assert!(!out.contains("db "), "{out}");
    let (code, out) = init.ctl(&["stop", "svc-?"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["svc-a=stopped", "svc-b=stopped", "db=running"]);
    let (code, out) = init.ctl(&["status", "[d]*"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("db") && !out.contains("svc-a"), "{out}");
    // A pattern that matches nothing is an unknown name, exit 2, as a misspelt one is.
    let (code, out) = init.ctl(&["status", "web-*"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("web-*"), "{out}");
    // A oneshot without a restart budget shows its count alone, not "0 (0 left)".
    let (_, out) = init.ctl(&["status", "prov"]);
    let row = out.lines().find(|l| l.starts_with("prov")).unwrap();
    assert!(!row.contains("left)"), "{row}");
    let (_, out) = init.ctl(&["status", "db"]);
    assert!(out.contains("0 (5 left)"), "{out}");
}

#[test]
fn start_brings_back_what_the_stop_took_and_says_so() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.db]
command = ["sleep", "1000"]
[program.api]
command = ["sleep", "1000"]
depends_on = ["db"]
[program.web]
command = ["sleep", "1000"]
depends_on = ["api"]
"#,
        )
        .start();
    init.wait_states(&["db=running", "api=running", "web=running"]);
    let (code, out) = init.ctl(&["stop", "db"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["db=stopped", "api=stopped", "web=stopped"]);
    let (code, out) = init.ctl(&["start", "db"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("brought back api, web (stopped along with db)"),
        "{out}"
    );
    // The command returned once they were up: no wait needed here.
    let (code, status) = init.ctl(&["status"]);
    assert_eq!(code, 0, "every program is up again: {status}");
}

//! Readiness protocols daemons already speak, against the real binary as PID 1: systemd's
//! sd_notify (a test program sending every message kind, messages from descendants and from a
//! foreign process, the watchdog, Debian's redis-server with `supervised systemd`), s6's
//! notification fd, a log line, and ctrlinit's own readiness reported upward.

mod common;

use std::os::unix::net::UnixDatagram;

use common::*;

const NOTIFIER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/notifier.py");

/// Appends a command to the notifier's script and waits for its acknowledgement.
fn tell(init: &Init, script: &str, command: &str, n: usize) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(init.dir().join(script))
        .unwrap();
    writeln!(f, "{command}").unwrap();
    init.wait_for_line(&format!("| done {n}"));
}

/// [`tell`] for one of several programs: waits for `program`'s own acknowledgement.
fn tell_to(init: &Init, program: &str, script: &str, command: &str, n: usize) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(init.dir().join(script))
        .unwrap();
    writeln!(f, "{command}").unwrap();
    let ack = format!("| done {n}");
    wait_until(&format!("{program}'s {ack:?}"), DEADLINE, || {
        init.lines()
            .iter()
            .any(|l| l.starts_with(&format!("{program} ")) && l.ends_with(&ack))
            .then_some(())
    });
}

fn notify_of(init: &Init, name: &str) -> serde_json::Value {
    init.program_json(name)["notify"].clone()
}

#[test]
fn a_program_speaking_sd_notify_reports_readiness_status_and_more() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[init]
http = "127.0.0.1:{port}"

[program.daemon]
command = ["/usr/bin/python3", "{NOTIFIER}", "{{dir}}/script"]
ready = {{ notify = "systemd" }}
ready_timeout = "1s"

[program.intruder]
command = ["/bin/sh", "-c", "until [ -e {{dir}}/intrude ]; do sleep 0.02; done; /usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b\"STATUS=forged\\nREADY=1\", \"{{dir}}/ctrlinit-notify.sock\")'; echo sent; exec sleep 600"]
"#
            ),
        )
        .start();
    tell(&init, "script", "env", 1);
    let out = init.output();
    assert!(
        out.contains(&format!(
            "NOTIFY_SOCKET={}/ctrlinit-notify.sock",
            init.dir().display()
        )),
        "{out}"
    );
    // More time than ready_timeout: without the extension it would be stopped.
    tell(
        &init,
        "script",
        "send EXTEND_TIMEOUT_USEC=20000000\\nSTATUS=loading",
        2,
    );
    wait_until("past the ready timeout", DEADLINE, || {
        let p = init.program_json("daemon");
        (p["uptime_ms"].as_u64() > Some(1500)).then_some(())
    });
    let p = init.program_json("daemon");
    assert_eq!(
        p["state"], "starting",
        "EXTEND_TIMEOUT_USEC moved the deadline: {p}"
    );
    assert_eq!(p["notify"]["status"], "loading");
    // A foreign process (another program's) cannot make it ready or set its status; what it
    // sent is counted in /metrics.
    let foreign = |n: u64| format!("\nctrlinit_notify_foreign_messages_total {n}\n");
    let (code, metrics) = curl(port, "/metrics", &[]);
    assert_eq!(code, 200);
    assert!(metrics.contains(&foreign(0)), "{metrics}");
    std::fs::write(init.dir().join("intrude"), "").unwrap();
    init.wait_for_line("intruder | sent");
    init.wait_for_line("notify socket: ignored a message from pid");
    assert_eq!(init.program_json("daemon")["state"], "starting");
    let (_, metrics) = curl(port, "/metrics", &[]);
    assert!(metrics.contains(&foreign(1)), "{metrics}");
    tell(&init, "script", "send READY=1\\nSTATUS=serving", 3);
    init.wait_states(&["daemon=running"]);
    assert_eq!(notify_of(&init, "daemon")["status"], "serving");
    // Descendants speak for it too: a child, and a grandchild that was reparented away.
    tell(&init, "script", "child STATUS=from a child", 4);
    wait_until("child status", DEADLINE, || {
        (notify_of(&init, "daemon")["status"] == "from a child").then_some(())
    });
    tell(&init, "script", "orphan STATUS=from an orphan", 5);
    wait_until("orphan status", DEADLINE, || {
        (notify_of(&init, "daemon")["status"] == "from an orphan").then_some(())
    });
    tell(&init, "script", "send RELOADING=1", 6);
    wait_until("reloading", DEADLINE, || {
        (notify_of(&init, "daemon")["reloading"] == true).then_some(())
    });
    tell(&init, "script", "send READY=1\\nERRNO=2", 7);
    init.wait_for_line("daemon: reports ERRNO=2 (No such file or directory");
    let n = notify_of(&init, "daemon");
    assert_eq!(n["reloading"], false, "READY=1 ends a reload: {n}");
    assert_eq!(n["errno"], 2);
    tell(&init, "script", "send STOPPING=1", 8);
    wait_until("stopping", DEADLINE, || {
        (notify_of(&init, "daemon")["stopping"] == true).then_some(())
    });
    // MAINPID: a forked child becomes the main process; its death ends the run.
    let launcher = init.pid_of("daemon").unwrap();
    tell(&init, "script", "fork-main", 9);
    let main = wait_until("new main pid", DEADLINE, || {
        init.pid_of("daemon").filter(|&p| p != launcher)
    });
    init.wait_for_line(&format!(
        "daemon: main process is now pid {main} (was {launcher}, MAINPID=)"
    ));
    let host = host_pid(&init, main as i32).unwrap();
    assert!(send_signal(host, libc::SIGKILL));
    init.wait_for_line("daemon: running -> stopping");
    init.wait_for_line("daemon: stopping -> backoff");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn a_missed_watchdog_restarts_the_program() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.pinger]
command = ["/bin/sh", "-c", "echo run >> {dir}/runs; while [ ! -e {dir}/hang ]; do /usr/bin/python3 -c 'import os,socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b\"WATCHDOG=1\", os.environ[\"NOTIFY_SOCKET\"])'; sleep 0.1; done; exec sleep 600"]
backoff = { initial = "50ms" }
[program.pinger.health]
watchdog = "1s"
"#,
        )
        .start();
    init.wait_states(&["pinger=running"]);
    let p = wait_until("healthy by its pings", DEADLINE, || {
        let p = init.program_json("pinger");
        (p["health"]["status"] == "healthy").then_some(p)
    });
    assert_eq!(p["health"]["check"], "watchdog 1s");
    std::fs::write(init.dir().join("hang"), "").unwrap();
    init.wait_for_line("pinger: health: healthy -> unhealthy: watchdog: no WATCHDOG=1 within 1s");
    init.wait_for_line("pinger: running -> stopping: unhealthy: watchdog");
    std::fs::remove_file(init.dir().join("hang")).unwrap();
    wait_until("second run", DEADLINE, || {
        (file_lines(&init.dir().join("runs")).len() == 2).then_some(())
    });
    let p = init.program_json("pinger");
    assert_eq!(p["restarts_by_cause"]["health"], 1, "{p}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn redis_server_supervised_by_systemd_protocol_is_ready_when_it_says_so() {
    let redis = "/usr/bin/redis-server";
    assert!(
        std::path::Path::new(redis).exists(),
        "this test needs Debian's redis-server (.ci/run installs it)"
    );
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.redis]
command = ["{redis}", "--supervised", "systemd", "--port", "0", "--unixsocket", "{{dir}}/redis.sock", "--save", "", "--appendonly", "no", "--dir", "{{dir}}", "--daemonize", "no"]
ready = {{ notify = "systemd" }}
ready_timeout = "20s"

[program.client]
command = ["/bin/sh", "-c", "test -S {{dir}}/redis.sock && echo socket-was-there; exec sleep 600"]
depends_on = {{ redis = "ready" }}
"#
            ),
        )
        .start();
    init.wait_states(&["redis=running", "client=running"]);
    // Ready only once redis said so: its socket existed when its dependent started.
    init.wait_for_line("client   | socket-was-there");
    let status = notify_of(&init, "redis")["status"].clone();
    assert!(
        status
            .as_str()
            .is_some_and(|s| s.to_lowercase().contains("ready")),
        "redis sends its status over sd_notify: {status}"
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn a_notification_fd_and_a_log_line_make_programs_ready() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.s6style]
command = ["/bin/sh", "-c", "ls /proc/self/fd > {dir}/fds; until [ -e {dir}/go-fd ]; do sleep 0.02; done; echo >&5; exec 5>&-; exec sleep 600"]
ready = { fd = 5 }

[program.talker]
command = ["/bin/sh", "-c", "echo booting; until [ -e {dir}/go-log ]; do sleep 0.02; done; echo 'Now ready to accept connections' >&2; exec sleep 600"]
ready = { log = "ready to (accept|serve)" }

[program.plain]
command = ["/bin/sh", "-c", "ls /proc/self/fd > {dir}/plain-fds; exec sleep 600"]
"#,
        )
        .start();
    init.wait_states(&["plain=running"]);
    let fds = wait_for_text(&init.dir().join("fds"));
    init.wait_for_line("talker   | booting");
    assert_eq!(init.program_json("s6style")["state"], "starting");
    assert_eq!(init.program_json("talker")["state"], "starting");
    assert!(
        fds.lines().any(|l| l == "5"),
        "fd 5 is open in the program: {fds}"
    );
    let plain = wait_for_text(&init.dir().join("plain-fds"));
    assert!(
        !plain.lines().any(|l| l == "5"),
        "and only in programs that asked: {plain}"
    );
    std::fs::write(init.dir().join("go-fd"), "").unwrap();
    init.wait_states(&["s6style=running"]);
    assert_eq!(
        init.program_json("talker")["state"],
        "starting",
        "booting is not the pattern"
    );
    std::fs::write(init.dir().join("go-log"), "").unwrap();
    init.wait_states(&["talker=running"]);
}

#[test]
fn ctrlinit_tells_its_own_supervisor_when_it_is_ready_and_when_it_stops() {
    let builder = init().file(
        "a.toml",
        r#"
[program.prov]
type = "oneshot"
command = ["/bin/sh", "-c", "echo NOTIFY_SOCKET=[$NOTIFY_SOCKET]"]

[program.api]
command = ["/bin/sh", "-c", "until [ -e {dir}/go ]; do sleep 0.02; done; touch {dir}/api.ready; exec sleep 600"]
depends_on = ["prov"]
ready = { file = "{dir}/api.ready", interval = "20ms" }
"#,
    );
    let path = builder.dir().join("upward.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut init = builder.env("NOTIFY_SOCKET", path.to_str().unwrap()).start();
    let mut received = Vec::new();
    let next = |received: &mut Vec<String>| {
        let mut buf = [0u8; 4096];
        let n = socket.recv(&mut buf).expect("a datagram from ctrlinit");
        let text = String::from_utf8_lossy(&buf[..n]).to_string();
        received.push(text.clone());
        text
    };
    // Not ready while api waits.
    let first = next(&mut received);
    assert!(!first.contains("READY=1"), "{first}");
    assert!(first.starts_with("STATUS="), "{first}");
    std::fs::write(init.dir().join("go"), "").unwrap();
    let ready = loop {
        let text = next(&mut received);
        if text.contains("READY=1") {
            break text;
        }
    };
    assert!(ready.contains("STATUS=2 of 2 programs up"), "{ready}");
    init.signal("TERM");
    let stopping = loop {
        let text = next(&mut received);
        if text.contains("STOPPING=1") {
            break text;
        }
    };
    assert!(stopping.contains("STATUS=stopping"), "{stopping}");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    assert_eq!(
        received.iter().filter(|t| t.contains("READY=1")).count(),
        1,
        "READY=1 once: {received:?}"
    );
    // Its own NOTIFY_SOCKET is addressed to ctrlinit; programs do not inherit it.
    init.wait_for_line("prov     | NOTIFY_SOCKET=[]");
}

/// A notifier program `daemon` with `extra` settings (TOML lines of its table) and `health`
/// (lines of its health table, none when empty). Its N-th run reads `script.N`.
fn notifier(extra: &str, health: &str) -> Builder {
    let health = if health.is_empty() {
        String::new()
    } else {
        format!("[program.daemon.health]\n{health}\n")
    };
    init().file(
        "a.toml",
        &format!(
            r#"
[program.daemon]
command = ["/bin/sh", "-c", "echo run >> {{dir}}/runs; exec /usr/bin/python3 {NOTIFIER} {{dir}}/script.$(wc -l < {{dir}}/runs)"]
backoff = {{ initial = "50ms" }}
{extra}
{health}"#
        ),
    )
}

fn health_of(init: &Init) -> serde_json::Value {
    init.program_json("daemon")["health"].clone()
}

#[test]
fn a_missed_watchdog_in_mark_mode_is_reported_and_recovers_when_pings_resume() {
    let mut init = notifier("", "watchdog = \"1s\"\non_failure = \"mark\"").start();
    init.wait_states(&["daemon=running"]);
    tell(&init, "script.1", "watchdog on", 1);
    wait_until("healthy by its pings", DEADLINE, || {
        (health_of(&init)["status"] == "healthy").then_some(())
    });
    let p = init.program_json("daemon");
    let (pid, run) = (p["pid"].clone(), p["run"].clone());
    tell(&init, "script.1", "watchdog off", 2);
    init.wait_for_line("daemon: health: healthy -> unhealthy: watchdog: no WATCHDOG=1 within 1s");
    let p = init.program_json("daemon");
    assert_eq!(p["health"]["status"], "unhealthy", "{p}");
    assert_eq!(p["state"], "running", "mark never stops it: {p}");
    assert_eq!((&p["pid"], &p["run"]), (&pid, &run), "{p}");
    let (code, out) = init.ctl(&["health"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("daemon is unhealthy"), "{out}");
    tell(&init, "script.1", "watchdog on", 3);
    init.wait_for_line("daemon: health: unhealthy -> healthy: watchdog: WATCHDOG=1");
    let p = init.program_json("daemon");
    assert_eq!(p["health"]["status"], "healthy", "{p}");
    assert_eq!((&p["pid"], &p["run"]), (&pid, &run), "no restart: {p}");
    assert_eq!(p["restarts"], 0, "{p}");
    assert_eq!(init.ctl(&["health"]).0, 0);
    // One miss is told once, however long the silence lasted.
    assert_eq!(
        init.count_lines("no WATCHDOG=1 within"),
        1,
        "{}",
        init.output()
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn watchdog_trigger_fails_the_check_at_once() {
    // Watchdogs of an hour: only the trigger can fail them within the test. `marked` only
    // reports; `restarted` is restarted.
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.marked]
command = ["/usr/bin/python3", "{NOTIFIER}", "{{dir}}/marked"]
[program.marked.health]
watchdog = "1h"
on_failure = "mark"

[program.restarted]
command = ["/bin/sh", "-c", "echo run >> {{dir}}/runs; exec /usr/bin/python3 {NOTIFIER} {{dir}}/restarted.$(wc -l < {{dir}}/runs)"]
backoff = {{ initial = "50ms" }}
[program.restarted.health]
watchdog = "1h"
"#
            ),
        )
        .start();
    init.wait_states(&["marked=running", "restarted=running"]);
    tell_to(&init, "marked", "marked", "send WATCHDOG=1", 1);
    tell_to(&init, "restarted", "restarted.1", "send WATCHDOG=1", 1);
    wait_until("healthy by their pings", DEADLINE, || {
        let all = init.status_json();
        all.iter()
            .all(|p| p["health"]["status"] == "healthy")
            .then_some(())
    });
    let pid = init.pid_of("marked");
    tell_to(&init, "marked", "marked", "send WATCHDOG=trigger", 2);
    // The send returned after its barrier: ctrlinit had read the trigger, and it handles what it
    // read before any later request, so the failed check is there without waiting.
    let p = init.program_json("marked");
    assert_eq!(p["health"]["status"], "unhealthy", "at once: {p}");
    assert_eq!(p["health"]["last"]["passed"], false, "{p}");
    assert_eq!(
        p["health"]["last"]["output"], "it sent WATCHDOG=trigger",
        "{p}"
    );
    assert_eq!(p["state"], "running", "{p}");
    assert_eq!(init.pid_of("marked"), pid);
    assert_eq!(init.ctl(&["health"]).0, 1);
    tell_to(&init, "marked", "marked", "send WATCHDOG=1", 3);
    assert_eq!(
        init.program_json("marked")["health"]["status"],
        "healthy",
        "the next ping after a trigger counts toward recovery"
    );
    // With on_failure = "restart" the trigger stops the run at once (no ack: the stop may end
    // the sender before it prints one).
    let first = init.program_json("restarted")["run"].as_u64().unwrap();
    std::fs::write(
        init.dir().join("restarted.1"),
        "send WATCHDOG=1\nsend WATCHDOG=trigger\n",
    )
    .unwrap();
    init.wait_for_line(
        "restarted: running -> stopping: unhealthy: watchdog: it sent WATCHDOG=trigger",
    );
    let p = wait_until("the next run", DEADLINE, || {
        let p = init.program_json("restarted");
        (p["run"].as_u64() > Some(first) && p["state"] == "running").then_some(p)
    });
    assert_eq!(p["restarts_by_cause"]["health"], 1, "{p}");
    assert_eq!(p["restarts"], 1, "it counts toward the budget: {p}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn extend_timeout_during_a_stop_holds_off_sigkill() {
    let mut init = notifier(
        "ready = { notify = \"systemd\" }\nstop_timeout = \"1s\"",
        "",
    )
    .start();
    tell(&init, "script.1", "send READY=1", 1);
    init.wait_states(&["daemon=running"]);
    // On TERM it asks for 20 s more and takes 2.5 s: past its stop_timeout, within the
    // extension.
    tell(
        &init,
        "script.1",
        "on-term 2.5 EXTEND_TIMEOUT_USEC=20000000",
        2,
    );
    let (code, out) = init.ctl(&["stop", "daemon", "--timeout", "30s"]);
    assert_eq!(code, 0, "{out}");
    let p = init.program_json("daemon");
    assert_eq!(p["state"], "stopped", "{p}");
    assert_eq!(p["last_exit"]["code"], 0, "it ended by itself: {p}");
    init.wait_for_line("daemon   | got TERM");
    init.wait_for_line("daemon   | exiting after TERM");
    assert!(
        !init.output().contains("sending SIGKILL"),
        "{}",
        init.output()
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn extend_timeout_during_a_pre_stop_hook_lets_the_hook_finish() {
    // The hook asks the program (SIGUSR1) to say it needs more time, then takes 3 s: past
    // pre_stop_timeout and stop_timeout, within the extension.
    let mut init = notifier(
        "ready = { notify = \"systemd\" }\npre_stop = [\"/bin/sh\", \"-c\", \"kill -USR1 $CTRLINIT_PID; sleep 3; touch {dir}/hook-done\"]\npre_stop_timeout = \"1s\"\nstop_timeout = \"2s\"",
        "",
    )
    .start();
    tell(&init, "script.1", "send READY=1", 1);
    init.wait_states(&["daemon=running"]);
    tell(&init, "script.1", "on-usr1 EXTEND_TIMEOUT_USEC=20000000", 2);
    let (code, out) = init.ctl(&["stop", "daemon", "--timeout", "30s"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        init.dir().join("hook-done").exists(),
        "the hook ran to its end: {}",
        init.output()
    );
    let p = init.program_json("daemon");
    assert_eq!(p["last_exit"]["signal"], "SIGTERM", "{p}");
    init.wait_for_line("daemon   | got USR1");
    let out = init.output();
    assert!(!out.contains("did not end in time"), "{out}");
    assert!(!out.contains("sending SIGKILL"), "{out}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

/// `KEY=VALUE` lines a program wrote (`env > FILE`; renamed into place, so complete when seen).
fn env_written(init: &Init, name: &str) -> std::collections::HashMap<String, String> {
    wait_for_file(&init.dir().join(name))
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_watchdog_reaches_the_program_as_watchdog_usec_and_ctrlinits_own_stays_with_it() {
    // ctrlinit's own supervisor's watchdog variables are addressed to ctrlinit: a program gets
    // its own watchdog's, or none. 2.5 s: microseconds, not whole seconds.
    let init = init()
        .env("WATCHDOG_USEC", "7")
        .env("WATCHDOG_PID", "1")
        .file(
            "a.toml",
            r#"
[program.fed]
command = ["/bin/sh", "-c", "{ env; echo SELF=$$$$; } > {dir}/fed.tmp; mv {dir}/fed.tmp {dir}/fed.env; exec sleep 600"]
[program.fed.health]
watchdog = "2500ms"
on_failure = "mark"

[program.unfed]
command = ["/bin/sh", "-c", "env > {dir}/unfed.tmp; mv {dir}/unfed.tmp {dir}/unfed.env; exec sleep 600"]
"#,
        )
        .start();
    let fed = env_written(&init, "fed.env");
    assert_eq!(
        fed.get("WATCHDOG_USEC").map(String::as_str),
        Some("2500000"),
        "{fed:?}"
    );
    // WATCHDOG_PID, where set, names the program itself (sd_watchdog_enabled() compares it
    // with getpid()); never the value ctrlinit was given.
    if let Some(pid) = fed.get("WATCHDOG_PID") {
        assert_eq!(Some(pid), fed.get("SELF"), "{fed:?}");
    }
    assert_eq!(
        fed.get("NOTIFY_SOCKET"),
        Some(&format!("{}/ctrlinit-notify.sock", init.dir().display())),
        "a watchdog needs the socket to be fed: {fed:?}"
    );
    let unfed = env_written(&init, "unfed.env");
    for key in ["WATCHDOG_USEC", "WATCHDOG_PID", "NOTIFY_SOCKET"] {
        assert!(!unfed.contains_key(key), "{key} in {unfed:?}");
    }
}

/// The `daemon` row of the `status` table.
fn table_row(init: &Init) -> String {
    let (code, table) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{table}");
    table
        .lines()
        .find(|l| l.starts_with("daemon "))
        .unwrap_or_else(|| panic!("no daemon row: {table}"))
        .to_string()
}

#[test]
fn the_status_table_shows_the_programs_own_status_text() {
    let init = notifier("ready = { notify = \"systemd\" }", "").start();
    tell(
        &init,
        "script.1",
        "send READY=1\\nSTATUS=serving 12 requests",
        1,
    );
    init.wait_states(&["daemon=running"]);
    let row = table_row(&init);
    assert!(row.contains("running (serving 12 requests)"), "{row}");
    // A long one is cut at 40 characters (not bytes), so one program does not widen the table.
    let long = format!("{}{}", "é".repeat(10), "x".repeat(50));
    tell(&init, "script.1", &format!("send STATUS={long}"), 2);
    assert_eq!(notify_of(&init, "daemon")["status"], long.as_str());
    let shown: String = long.chars().take(40).collect();
    let row = table_row(&init);
    assert!(row.contains(&format!("running ({shown}…)")), "{row}");
    assert!(!row.contains(&long), "{row}");
}

//! External dependencies (`[external.NAME]`) against the real binary as PID 1: a program waits
//! for another container's port (a real TCP listener in the test) with the last reason said,
//! starts when it answers, and restarts (without spending its budget) when it goes down and
//! comes back; a dependent without `restart` keeps running. A second ctrlinit as a peer: a
//! restart of its program restarts the local dependent. Bad input: no check kind, two kinds,
//! a name clash or a misspelt name (config errors with file:line), a peer that answers garbage
//! or never closes, a name that does not resolve, a check that hangs: a waiting dependent with
//! the reason, never a hung PID 1. `start_timeout` with `on_timeout = "exit"` ends the
//! container with `[init] exit_code`.

mod common;

use std::net::TcpListener;

use common::*;

/// `name`'s `status --json` entry.
fn program_json(init: &Init, name: &str) -> serde_json::Value {
    wait_until(&format!("{name} in status --json"), DEADLINE, || {
        let (_, out) = init.ctl(&["status", "--json"]);
        let list: serde_json::Value = serde_json::from_str(&out).ok()?;
        list.as_array()?.iter().find(|p| p["name"] == name).cloned()
    })
}

#[test]
fn dependents_wait_for_an_external_port_and_restart_when_it_goes_down_and_comes_back() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[external.db]
tcp = "localhost:{port}"
interval = "100ms"
timeout = "1s"
failures = 2

[program.app]
command = ["/bin/sh", "-c", "echo app up; exec sleep 1000"]
depends_on = {{ db = {{ condition = "ready", restart = true }} }}
max_restarts = 0

[program.other]
command = ["/bin/sleep", "1000"]
depends_on = ["db"]
"#
            ),
        )
        .start();
    // The last reason, as `status` shows it.
    let want = format!("db: tcp localhost:{port}: ");
    let why = wait_until("app waits with the check's reason", DEADLINE, || {
        let p = program_json(&init, "app");
        let why = p["waiting_why"].as_str()?.to_string();
        (p["state"] == "waiting" && why.contains(&want)).then_some(why)
    });
    assert!(why.contains("refused"), "{why}");

    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    init.wait_for_line("external db: waiting -> ready");
    init.wait_states(&["app=running", "other=running"]);
    let other_run = program_json(&init, "other")["run"].as_u64().unwrap();

    drop(listener);
    init.wait_for_line("external db: ready -> down after 2 failed check(s)");
    init.wait_for_line("app: running -> stopping: restarting because external db ended");
    init.wait_states(&["app=waiting"]);
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    init.wait_for_nth_line("external db: down -> ready", 1, DEADLINE);
    init.wait_for_nth_line("| app up", 2, DEADLINE);
    init.wait_states(&["app=running"]);
    let app = program_json(&init, "app");
    // max_restarts = 0: a restart that spent the budget would have exhausted it.
    assert_eq!(app["run"], 2);
    assert_eq!(app["restarts_in_window"], 0);
    assert_eq!(
        program_json(&init, "other")["run"],
        other_run,
        "other kept running"
    );
    drop(listener);
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn a_peer_ctrlinits_program_restart_restarts_the_local_dependent() {
    let (probe, peer) = peer_with_api();
    let mut local = dependent_of_peer(probe, "interval = \"200ms\"");
    local.wait_for_line("external config-api: waiting -> ready: ctrlinit 127.0.0.1");
    local.wait_states(&["control=running"]);
    // A restart by hand on the peer: the local check sees a new run, whatever its timing.
    let (code, out) = peer.ctl(&["restart", "api"]);
    assert_eq!(code, 0, "{out}");
    local.wait_for_line("external config-api: the peer's program is on a new run");
    control_restarted_once(&mut local);
}

/// A ctrlinit with `[init] http` on a free port and one program, `api`, running: the peer.
fn peer_with_api() -> (u16, Init) {
    let probe = free_port();
    let peer = init()
        .file(
            "peer.toml",
            &format!(
                "[init]\nhttp = \"127.0.0.1:{probe}\"\n\n[program.api]\ncommand = [\"/bin/sleep\", \"1000\"]\n"
            ),
        )
        .start();
    peer.wait_states(&["api=running"]);
    (probe, peer)
}

/// A ctrlinit whose `control` depends, with `restart = true`, on the peer's `api` through
/// `[external.config-api]` (its check settings: `settings`).
fn dependent_of_peer(probe: u16, settings: &str) -> Init {
    init()
        .file(
            "a.toml",
            &format!(
                r#"
[external.config-api]
ctrlinit = "http://127.0.0.1:{probe}"
program = "api"
{settings}

[program.control]
command = ["/bin/sh", "-c", "echo control up; exec sleep 1000"]
depends_on = {{ config-api = {{ condition = "ready", restart = true }} }}
"#
            ),
        )
        .start()
}

/// `control` started a second time (and only once more), then the container stops cleanly.
fn control_restarted_once(local: &mut Init) {
    local.wait_for_nth_line("| control up", 2, DEADLINE);
    local.wait_states(&["control=running"]);
    assert_eq!(program_json(local, "control")["run"], 2);
    local.signal("TERM");
    assert_eq!(local.wait_exit(DEADLINE), 0);
}

fn bad_server(answer: &'static [u8], hold: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            use std::io::Write;
            let mut s = stream;
            let _ = s.write_all(answer);
            if hold {
                held.push(s);
            }
        }
    });
    port
}

#[test]
fn bad_peers_unresolvable_names_and_hung_checks_leave_dependents_waiting_with_the_reason() {
    let garbage = bad_server(b"SSH-2.0-OpenSSH\r\n", false);
    let never_closes = bad_server(b"HTTP/1.1 200 OK\r\n\r\nboot=x", true);
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[external.garbage]
ctrlinit = "http://127.0.0.1:{garbage}"
program = "api"
interval = "100ms"

[external.slow]
ctrlinit = "http://127.0.0.1:{never_closes}"
program = "api"
interval = "100ms"
timeout = "300ms"

[external.nowhere]
tcp = "no-such-host.invalid:80"
interval = "100ms"

[external.hangs]
exec = ["/bin/sleep", "1000"]
interval = "100ms"
timeout = "300ms"

[program.a]
command = ["/bin/sleep", "1000"]
depends_on = ["garbage"]

[program.b]
command = ["/bin/sleep", "1000"]
depends_on = ["slow"]

[program.c]
command = ["/bin/sleep", "1000"]
depends_on = ["nowhere"]

[program.d]
command = ["/bin/sleep", "1000"]
depends_on = ["hangs"]

[program.free]
command = ["/bin/sleep", "1000"]
"#
            ),
        )
        .start();
    init.wait_states(&["free=running"]);
    let reason = |name: &str, want: &str| {
        wait_until(&format!("{name} waits: {want}"), DEADLINE, || {
            let why = program_json(&init, name)["waiting_why"].to_string();
            why.contains(want).then_some(why)
        })
    };
    reason("a", "not a ctrlinit peer's answer");
    reason("b", "timed out after");
    // Said plainly: not the resolver's debug dump (`proto error: … Query { … }`).
    let c = reason("c", "no-such-host.invalid");
    assert!(
        c.contains("no address for no-such-host.invalid")
            || c.contains("cannot resolve no-such-host.invalid: "),
        "{c}"
    );
    assert!(!c.contains("proto error") && !c.contains('{'), "{c}");
    reason("d", "timed out; killed");
    // PID 1 still answers and stops cleanly.
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn an_external_not_ready_within_start_timeout_ends_the_container_with_exit_code() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[external.db]
tcp = "127.0.0.1:{port}"
interval = "100ms"
start_timeout = "500ms"
on_timeout = "exit"

[program.app]
command = ["/bin/sleep", "1000"]
depends_on = ["db"]

[program.free]
command = ["/bin/sleep", "1000"]
"#
            ),
        )
        .start();
    init.wait_for_line("external db was not ready within start_timeout 500ms");
    assert_eq!(init.wait_exit(DEADLINE), 75);
}

#[test]
fn check_reports_bad_externals_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.toml"),
        r#"[external.none]
interval = "1s"

[external.two]
tcp = "config:8082"
http = "http://config:8082/"

[external.app]
tcp = "config:8082"

[external.config-api]
tcp = "config:8082"

[program.app]
command = ["/bin/true"]

[program.web]
command = ["/bin/true"]
depends_on = ["config-apj"]
"#,
    )
    .unwrap();
    let out = std::process::Command::new(bin())
        .args(["check", "--config-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    for want in [
        "a.toml:1",
        "exactly one check kind, found none",
        "a.toml:4",
        "found tcp and http",
        "a.toml:8",
        "`app` is both an external and a program",
        "a.toml:19",
        "did you mean `config-api`?",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

#[test]
fn status_lists_externals_and_graph_draws_them_as_their_own_kind_of_node() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let up = listener.local_addr().unwrap().port();
    let refused = free_port();
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[external.cache]
tcp = "127.0.0.1:{up}"
interval = "100ms"

[external.config-api]
tcp = "127.0.0.1:{refused}"
interval = "100ms"

[program.web]
command = ["/bin/sleep", "1000"]
depends_on = {{ cache = {{ condition = "ready", restart = true }} }}

[program.control]
command = ["/bin/sleep", "1000"]
depends_on = ["config-api", "web"]
"#
            ),
        )
        .start();
    init.wait_states(&["web=running", "control=waiting"]);
    let entries = wait_until("both externals in status --json", DEADLINE, || {
        let (_, out) = init.ctl(&["status", "--json"]);
        let list: serde_json::Value = serde_json::from_str(&out).ok()?;
        let ext: Vec<serde_json::Value> = list
            .as_array()?
            .iter()
            .filter(|e| e["type"] == "external")
            .cloned()
            .collect();
        (ext.len() == 2 && ext[1]["last"].is_string()).then_some(ext)
    });
    assert_eq!(entries[0]["name"], "cache");
    assert_eq!(entries[0]["state"], "ready");
    assert_eq!(entries[0]["check"], format!("tcp 127.0.0.1:{up}"));
    assert_eq!(entries[0]["dependents"], serde_json::json!(["web"]));
    assert_eq!(entries[1]["name"], "config-api");
    assert_eq!(entries[1]["state"], "waiting");
    let last = entries[1]["last"].as_str().unwrap();
    assert!(last.contains("refused"), "{last}");
    assert!(entries[1]["since_ms"].is_u64());

    let (_, table) = init.ctl(&["status"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("config-api "))
        .unwrap_or_else(|| panic!("no config-api row in:\n{table}"));
    assert!(
        row.contains("waiting (") && row.contains("refused"),
        "{row}"
    );
    assert!(table.contains("EXTERNAL"), "{table}");

    let (code, dot) = init.ctl(&["graph"]);
    assert_eq!(code, 0, "{dot}");
    assert!(
        dot.contains("\"cache\" [label=\"cache (external tcp 127.0.0.1:"),
        "{dot}"
    );
    assert!(
        dot.contains("ready)\", shape=hexagon, fillcolor=palegreen"),
        "{dot}"
    );
    assert!(
        dot.contains("\"cache\" -> \"web\" [label=\"ready, restarts with it\""),
        "{dot}"
    );
    assert!(dot.contains("\"config-api\" -> \"control\""), "{dot}");
    let (_, mermaid) = init.ctl(&["graph", "--format", "mermaid"]);
    assert!(
        mermaid.contains("  config_api{{\"config-api (external tcp"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("config_api -->|ready| control"),
        "{mermaid}"
    );
    drop(listener);
}

#[test]
fn a_streaming_peer_propagates_a_restart_without_waiting_for_the_interval() {
    let (probe, peer) = peer_with_api();
    // An hour between polls: only the stream can tell of the restart within the deadline.
    let mut local = dependent_of_peer(probe, "interval = \"1h\"\nfailures = 1");
    local.wait_for_line("external config-api: waiting -> ready");
    local.wait_states(&["control=running"]);
    let (code, out) = peer.ctl(&["restart", "api"]);
    assert_eq!(code, 0, "{out}");
    local.wait_for_line("restarting because external config-api");
    // Only once, though the stream told of several states on the way.
    control_restarted_once(&mut local);
}

/// An older peer: answers `/v1/peer` once per connection (ignoring `watch`), its program on run
/// `run`.
fn old_peer(run: std::sync::Arc<std::sync::atomic::AtomicU64>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming().flatten() {
            let mut s = stream;
            let mut head = [0u8; 1024];
            let _ = s.read(&mut head);
            let n = run.load(std::sync::atomic::Ordering::SeqCst);
            let body = format!("boot=b1 program=api run={n} state=running ready=true\n");
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn an_older_peer_that_cannot_stream_is_polled() {
    let run = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1));
    let port = old_peer(run.clone());
    let mut local = init()
        .file(
            "a.toml",
            &format!(
                r#"
[external.config-api]
ctrlinit = "http://127.0.0.1:{port}"
program = "api"
interval = "100ms"

[program.control]
command = ["/bin/sh", "-c", "echo control up; exec sleep 1000"]
depends_on = {{ config-api = {{ condition = "ready", restart = true }} }}
"#
            ),
        )
        .start();
    local.wait_states(&["control=running"]);
    run.store(2, std::sync::atomic::Ordering::SeqCst);
    local.wait_for_line("external config-api: the peer's program is on a new run (b1/1 -> b1/2)");
    local.wait_for_nth_line("| control up", 2, DEADLINE);
    local.signal("TERM");
    assert_eq!(local.wait_exit(DEADLINE), 0);
}

#[test]
fn a_peer_stream_of_garbage_or_silence_is_a_failed_check() {
    let garbage = bad_server(
        b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 100\r\n\r\nboot=b1 program=api run=1 state=running ready=true\nhello there\n",
        true,
    );
    let silent = bad_server(b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 100\r\n\r\n", true);
    let endless = bad_server(
        b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 100\r\n\r\nboot=b1 program=api run=1 state=running ready=true",
        true,
    );
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[external.garbage]
ctrlinit = "http://127.0.0.1:{garbage}"
program = "api"
interval = "100ms"
successes = 2

[external.silent]
ctrlinit = "http://127.0.0.1:{silent}"
program = "api"
interval = "100ms"
timeout = "200ms"

[external.endless]
ctrlinit = "http://127.0.0.1:{endless}"
program = "api"
interval = "100ms"
timeout = "200ms"

[program.a]
command = ["/bin/sleep", "1000"]
depends_on = ["garbage"]

[program.b]
command = ["/bin/sleep", "1000"]
depends_on = ["silent"]

[program.c]
command = ["/bin/sleep", "1000"]
depends_on = ["endless"]
"#
            ),
        )
        .start();
    let reason = |name: &str, want: &str| {
        wait_until(&format!("{name} waits: {want}"), DEADLINE, || {
            let why = program_json(&init, name)["waiting_why"].to_string();
            why.contains(want).then_some(why)
        })
    };
    reason("a", "not a ctrlinit peer's answer");
    reason("b", "the peer said nothing for");
    reason("c", "the peer said nothing for");
    let (code, _) = init.ctl(&["status"]);
    assert_eq!(code, 3, "PID 1 answers");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

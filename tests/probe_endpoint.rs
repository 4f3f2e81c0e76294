//! The read-only probe endpoint (`[init] http`) against the real binary as PID 1, with a real
//! HTTP client (curl) and the metrics validated by the OpenMetrics parser of Debian's
//! `python3-prometheus-client`.

mod common;

use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

use common::*;

/// Parses `text` with prometheus_client's OpenMetrics parser; returns the family names.
fn openmetrics_families(text: &str) -> Vec<String> {
    let script = "import sys\nfrom prometheus_client.openmetrics.parser import text_string_to_metric_families as p\nfor f in p(sys.stdin.read()):\n    print(f.name, f.type)\n";
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 (with python3-prometheus-client: .ci/run installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "not valid OpenMetrics: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn livez_readyz_metrics_and_status_over_http() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[init]
http = "127.0.0.1:{port}"

[program.api]
command = ["/bin/sh", "-c", "until [ -e {{dir}}/go ]; do sleep 0.02; done; touch {{dir}}/api.ready; exec sleep 600"]
ready = {{ file = "{{dir}}/api.ready", interval = "20ms" }}

[program.worker]
command = ["sleep", "600"]
[program.worker.health]
check = {{ exec = ["test", "!", "-e", "{{dir}}/sick"] }}
interval = "100ms"
failures = 1
on_failure = "mark"
"#
            ),
        )
        .start();
    init.wait_states(&["worker=running"]);
    let (code, body) = curl(port, "/readyz", &[]);
    assert_eq!(code, 503, "api is still starting: {body}");
    assert!(body.contains("api is starting"), "{body}");
    assert_eq!(curl(port, "/livez", &[]).0, 200);
    std::fs::write(init.dir().join("go"), "").unwrap();
    init.wait_states(&["api=running"]);
    assert_eq!(curl(port, "/readyz", &[]), (200, "ok\n".into()));

    // Liveness follows the threshold.
    std::fs::write(init.dir().join("sick"), "").unwrap();
    wait_until("livez 503", DEADLINE, || {
        let (code, body) = curl(port, "/livez", &[]);
        (code == 503).then_some(body)
    });
    std::fs::remove_file(init.dir().join("sick")).unwrap();
    wait_until("livez 200", DEADLINE, || {
        (curl(port, "/livez", &[]).0 == 200).then_some(())
    });

    // Metrics: valid OpenMetrics, with every family (docs/src/reference/metrics.md lists them).
    let (code, text) = curl(port, "/metrics", &[]);
    assert_eq!(code, 200);
    let families = openmetrics_families(&text);
    for want in [
        "ctrlinit_program_state stateset",
        "ctrlinit_program_up gauge",
        "ctrlinit_program_restarts counter",
        "ctrlinit_program_last_exit_status gauge",
        "ctrlinit_program_ready_seconds gauge",
        "ctrlinit_health_checks counter",
        "ctrlinit_health_check_failures counter",
        "ctrlinit_health_check_duration_seconds gauge",
        "ctrlinit_program_healthy gauge",
        "ctrlinit_orphans_reaped counter",
        "ctrlinit_notify_foreign_messages counter",
        "ctrlinit_resident_memory_bytes gauge",
        "ctrlinit_open_fds gauge",
    ] {
        assert!(
            families.iter().any(|f| f == want),
            "{want} missing: {families:?}"
        );
    }
    assert!(
        text.contains(
            "ctrlinit_program_state{program=\"api\",ctrlinit_program_state=\"running\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("ctrlinit_health_check_failures_total{program=\"worker\"} "),
        "{text}"
    );
    let (_, headers) = curl(port, "/metrics", &["-I"]);
    assert!(
        headers.contains("application/openmetrics-text; version=1.0.0"),
        "{headers}"
    );

    // The JSON of `status --json`.
    let (code, body) = curl(port, "/v1/status", &[]);
    assert_eq!(code, 200);
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["api", "worker"]);
    assert_eq!(list[0]["state"], "running");

    // Read-only and bounded.
    assert_eq!(curl(port, "/livez", &["-X", "POST"]).0, 405);
    assert_eq!(curl(port, "/nope", &[]).0, 404);
    assert_eq!(
        init.program_json("api")["run"],
        1,
        "nothing over HTTP changed anything"
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn slow_and_hostile_clients_do_not_hold_the_endpoint() {
    let port = free_port();
    let init = init()
        .file(
            "a.toml",
            &format!("[init]\nhttp = \"127.0.0.1:{port}\"\n\n[program.a]\ncommand = [\"sleep\", \"600\"]\n"),
        )
        .start();
    init.wait_states(&["a=running"]);
    // A request head without end gets an error answer, not a stall.
    let mut flood = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _ = flood.write_all(&vec![b'x'; 64 * 1024]);
    flood.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut answer = String::new();
    let _ = flood.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 431") || answer.starts_with("HTTP/1.1 400"),
        "{answer:?}"
    );
    // Many connections that never send a request: they hold at most the endpoint's slots, for
    // at most its read deadline; the supervisor and the control socket go on.
    let idle: Vec<std::net::TcpStream> = (0..100)
        .filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    let (code, _) = init.ctl(&["status"]);
    assert_eq!(code, 0);
    // The deadline frees them even while their clients keep them open.
    wait_until("livez answered again", Duration::from_secs(30), || {
        (curl(port, "/livez", &[]).0 == 200).then_some(())
    });
    drop(idle);
    wait_until("livez answered", Duration::from_secs(30), || {
        (curl(port, "/livez", &[]).0 == 200).then_some(())
    });
}

#[test]
fn a_port_in_use_stops_the_start_with_the_fix() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut init = init()
        .file(
            "a.toml",
            &format!("[init]\nhttp = \"127.0.0.1:{port}\"\n\n[program.a]\ncommand = [\"sleep\", \"600\"]\n"),
        )
        .start();
    assert_eq!(init.wait_exit(DEADLINE), 1);
    let out = init.output();
    assert!(
        out.contains(&format!(
            "cannot serve the probe endpoint on 127.0.0.1:{port} ([init] http)"
        )),
        "{out}"
    );
    assert!(out.contains("fix: choose a free port"), "{out}");
    assert!(
        !out.contains("a: stopped -> starting"),
        "nothing started: {out}"
    );
}

#[test]
fn livez_and_readyz_fail_while_the_container_stops() {
    let port = free_port();
    let mut init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[init]
http = "127.0.0.1:{port}"
stop_timeout = "60s"

[program.slow]
command = ["/bin/sh", "-c", "trap 'touch {{dir}}/got-term; until [ -e {{dir}}/release ]; do sleep 0.02; done; exit 0' TERM; while :; do sleep 0.05; done"]
stop_timeout = "60s"
"#
            ),
        )
        .start();
    init.wait_states(&["slow=running"]);
    assert_eq!(curl(port, "/livez", &[]), (200, "ok\n".into()));
    assert_eq!(curl(port, "/readyz", &[]), (200, "ok\n".into()));
    // It holds the container in its stop until released.
    init.signal("TERM");
    wait_for_file(&init.dir().join("got-term"));
    for path in ["/livez", "/readyz"] {
        let (code, body) = curl(port, path, &[]);
        assert_eq!(code, 503, "{path} while stopping: {body}");
        assert!(body.contains("the container is stopping"), "{path}: {body}");
    }
    let (code, _) = curl(port, "/readyz", &["-I"]);
    assert_eq!(code, 503, "HEAD too");
    std::fs::write(init.dir().join("release"), "").unwrap();
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let out = init.output();
    assert!(!out.contains("SIGKILL"), "{out}");
}

#[test]
fn health_live_is_livez_a_restart_within_budget_fails_readiness_only() {
    let port = free_port();
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[init]
http = "127.0.0.1:{port}"

# Fails at once, then waits out a long backoff: restarting within its budget.
[program.flappy]
command = ["/bin/sh", "-c", "exit 1"]
backoff = {{ initial = "60s", max = "60s" }}

[program.worker]
command = ["sleep", "600"]
[program.worker.health]
check = {{ exec = ["test", "!", "-e", "{{dir}}/sick"] }}
interval = "100ms"
failures = 1
on_failure = "mark"
"#
            ),
        )
        .start();
    init.wait_states(&["flappy=backoff", "worker=running"]);
    // Readiness fails while flappy is down; liveness does not: ctrlinit has not given up.
    let (code, out) = init.ctl(&["health"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("flappy"), "{out}");
    let (code, out) = init.ctl(&["health", "--live"]);
    assert_eq!((code, out.trim()), (0, "healthy"));
    assert_eq!(curl(port, "/livez", &[]).0, 200);
    assert_eq!(curl(port, "/readyz", &[]).0, 503);
    // A program past its liveness threshold fails both.
    std::fs::write(init.dir().join("sick"), "").unwrap();
    let out = wait_until("health --live fails", DEADLINE, || {
        let (code, out) = init.ctl(&["health", "--live"]);
        (code == 1).then_some(out)
    });
    assert!(out.contains("worker is unhealthy"), "{out}");
    assert_eq!(curl(port, "/livez", &[]).0, 503);
    // --strict (stopped by hand) and --live ask different questions: refused, and still 0 or 1.
    let (code, out) = init.ctl(&["health", "--live", "--strict"]);
    assert_eq!(code, 1, "{out}");
}

/// A slowloris: `n` connections from this process that trickle a request head a byte every
/// 200 ms and are reopened as soon as ctrlinit closes them, until `stop` (or a minute).
/// `open` counts those open now.
fn slowloris(
    port: u16,
    n: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let mut conns: Vec<Option<std::net::TcpStream>> = (0..n).map(|_| None).collect();
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while !stop.load(Ordering::Relaxed) && std::time::Instant::now() < until {
            for c in conns.iter_mut() {
                if c.is_none() {
                    *c = std::net::TcpStream::connect(("127.0.0.1", port))
                        .ok()
                        .filter(|mut s| s.write_all(b"GET /livez HTTP/1.1\r\n").is_ok())
                        .filter(|s| s.set_nonblocking(true).is_ok());
                }
                let Some(s) = c else { continue };
                // Closed by ctrlinit (an answer or EOF): reopen next round.
                let mut byte = [0u8; 64];
                let closed = !matches!(s.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
                if closed || s.write_all(b"X").is_err() {
                    *c = None;
                }
            }
            open.store(
                conns.iter().filter(|c| c.is_some()).count(),
                Ordering::Relaxed,
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    })
}

/// Slow connections cannot make `/livez` fail (a kubelet would restart a healthy container):
/// 48 trickling connections from the probes' own address, reopened as soon as they are
/// closed, while curl asks `/livez` 20 times: every answer is 200.
#[test]
fn livez_answers_while_slow_connections_hold_the_port() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let port = free_port();
    let init = init()
        .file(
            "a.toml",
            &format!("[init]\nhttp = \"127.0.0.1:{port}\"\n\n[program.a]\ncommand = [\"sleep\", \"600\"]\n"),
        )
        .start();
    init.wait_states(&["a=running"]);
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let open = std::sync::Arc::new(AtomicUsize::new(0));
    let attacker = slowloris(port, 48, stop.clone(), open.clone());
    wait_until("40 slow connections open", DEADLINE, || {
        (open.load(Ordering::Relaxed) >= 40).then_some(())
    });
    let answers: Vec<(u16, String)> = (0..20).map(|_| curl(port, "/livez", &[])).collect();
    stop.store(true, Ordering::Relaxed);
    attacker.join().unwrap();
    for (code, body) in &answers {
        assert_eq!(
            *code, 200,
            "a probe failed under a slowloris: {body:?} ({answers:?})"
        );
    }
}

/// A peer's questions have a lane of their own: with a slowloris holding this source's room in
/// the full lane, `/v1/peer` still answers (and a watch still streams) instead of `503 busy`,
/// which a dependent container would have read as this one being down.
#[test]
fn peer_requests_are_answered_while_slow_connections_hold_the_port() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let port = free_port();
    let init = init()
        .file(
            "a.toml",
            &format!("[init]\nhttp = \"127.0.0.1:{port}\"\n\n[program.a]\ncommand = [\"sleep\", \"600\"]\n"),
        )
        .start();
    init.wait_states(&["a=running"]);
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let open = std::sync::Arc::new(AtomicUsize::new(0));
    let attacker = slowloris(port, 48, stop.clone(), open.clone());
    wait_until("40 slow connections open", DEADLINE, || {
        (open.load(Ordering::Relaxed) >= 40).then_some(())
    });
    let answers: Vec<(u16, String)> = (0..10)
        .map(|_| curl(port, "/v1/peer?program=a", &[]))
        .collect();
    // A watch: its head says it streams.
    let mut watch = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    watch
        .write_all(b"GET /v1/peer?program=a&watch=1000 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    watch
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = Vec::new();
    let mut chunk = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match watch.read(&mut chunk) {
            Ok(n) if n > 0 => head.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    stop.store(true, Ordering::Relaxed);
    attacker.join().unwrap();
    for (code, body) in &answers {
        assert_eq!(
            *code, 200,
            "a peer's question was refused: {body:?} ({answers:?})"
        );
        assert!(body.contains("program=a run=1"), "{body:?}");
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.contains("X-Ctrlinit-Watch: 1000"), "{head}");
}

//! Whatever answers at a peer's address, against the real binary as PID 1: a fake peer that
//! streams valid lines as fast as it can (PID 1's memory stays flat and `status` answers within
//! a second), one that announces an hour between keepalives and falls silent (a failed check
//! after the external's own `interval + timeout`), one that only says it is busy (no verdict:
//! the external stays ready), and one whose words carry terminal escapes (shown escaped).

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;

/// A fake peer on a free port: each connection's request head is read, then `serve` answers it.
fn fake_peer(serve: impl Fn(TcpStream) + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serve = Arc::new(serve);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let serve = Arc::clone(&serve);
            std::thread::spawn(move || {
                let mut s = stream;
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                    match s.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                serve(s);
            });
        }
    });
    port
}

/// A local ctrlinit whose `app` depends on the fake peer's `api` (`settings` for the check).
fn dependent(port: u16, settings: &str) -> Init {
    init()
        .file(
            "a.toml",
            &format!(
                r#"
[external.api]
ctrlinit = "http://127.0.0.1:{port}"
program = "api"
{settings}

[program.app]
command = ["/bin/sh", "-c", "echo app up; exec sleep 1000"]
depends_on = {{ api = {{ condition = "ready", restart = true }} }}
"#
            ),
        )
        .start()
}

/// PID 1's resident memory, in KiB.
fn rss_kib(init: &Init) -> u64 {
    proc_status_field(init.pid, "VmRSS")
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_peer_that_streams_as_fast_as_it_can_neither_grows_pid1_nor_delays_status() {
    let port = fake_peer(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 100\r\n\r\n");
        let flood = b"boot=b1 program=api run=1 state=running ready=true\n".repeat(1000);
        while s.write_all(&flood).is_ok() {}
    });
    let init = dependent(port, "interval = \"1s\"\ntimeout = \"1s\"");
    init.wait_for_line("starting 1 program");
    let before = rss_kib(&init);
    // Five seconds of flood (the peer is asked again after each refusal): `status` answers
    // within a second each time, and PID 1 stays small (it went 6 MB -> 1.4 GB in 8 s).
    let until = Instant::now() + Duration::from_secs(5);
    let mut asked = 0;
    while Instant::now() < until {
        let rss = rss_kib(&init);
        assert!(rss < 40 * 1024, "PID 1 at {rss} KiB (from {before} KiB)");
        let t = Instant::now();
        let (code, out) = init.ctl(&["status"]);
        let took = t.elapsed();
        assert!(code == 0 || code == 3, "{out}");
        assert!(took < Duration::from_secs(1), "status took {took:?}");
        asked += 1;
        // A pace for the questions, not a wait for a condition.
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(asked >= 5, "status asked {asked} times");
    assert!(
        init.count_lines("the peer sent more than 50 lines a second") >= 2,
        "each new flood is refused:\n{}",
        init.output()
    );
}

#[test]
fn a_peer_that_announces_an_hour_between_keepalives_and_falls_silent_is_a_failed_check() {
    let port = fake_peer(|mut s| {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nX-Ctrlinit-Watch: 3600000\r\n\r\nboot=b1 program=api run=1 state=running ready=true\n",
        );
        // Holds the connection open, silent.
        let mut sink = [0u8; 64];
        while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
    });
    let mut init = dependent(
        port,
        "interval = \"200ms\"\ntimeout = \"300ms\"\nfailures = 1",
    );
    init.wait_for_line("external api: waiting -> ready");
    let down = init.wait_for_line("external api: ready -> down after 1 failed check(s)");
    assert!(down.contains("the peer said nothing for 500ms"), "{down}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn a_busy_peer_is_no_verdict_and_the_external_stays_ready() {
    let busy = Arc::new(AtomicBool::new(false));
    let busy_answers = Arc::new(AtomicU64::new(0));
    let (b, n) = (Arc::clone(&busy), Arc::clone(&busy_answers));
    let port = fake_peer(move |mut s| {
        if b.load(Ordering::SeqCst) {
            n.fetch_add(1, Ordering::SeqCst);
            let _ = s.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n",
            );
        } else {
            let body = "boot=b1 program=api run=1 state=running ready=true\n";
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let mut init = dependent(port, "interval = \"100ms\"\nfailures = 1");
    init.wait_for_line("external api: waiting -> ready");
    init.wait_states(&["app=running"]);
    busy.store(true, Ordering::SeqCst);
    wait_until("20 busy answers", DEADLINE, || {
        (busy_answers.load(Ordering::SeqCst) >= 20).then_some(())
    });
    let (_, out) = init.ctl(&["status"]);
    assert!(out.contains("the peer is busy"), "{out}");
    assert!(!out.contains("not a ctrlinit peer"), "{out}");
    assert_eq!(init.count_lines("ready -> down"), 0, "{}", init.output());
    assert_eq!(init.count_lines("| app up"), 1, "app was not restarted");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn terminal_escapes_in_a_peers_answer_are_shown_escaped() {
    let run = Arc::new(AtomicU64::new(1));
    let r = Arc::clone(&run);
    let port = fake_peer(move |mut s| {
        let n = r.load(Ordering::SeqCst);
        let body =
            format!("boot=\x1b]0;pwned\x07 program=api run={n} state=\x1b[2Jup ready=true\n");
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let mut init = dependent(port, "interval = \"100ms\"");
    init.wait_for_line("external api: waiting -> ready");
    init.wait_states(&["app=running"]);
    // A new run: the log names the peer's boot id.
    run.store(2, Ordering::SeqCst);
    init.wait_for_line("the peer's program is on a new run");
    let (_, status) = init.ctl(&["status"]);
    assert!(status.contains("api is \\e[2Jup (run 2)"), "{status}");
    let log = wait_until("ctrlinit.log names the new run", DEADLINE, || {
        let log = std::fs::read(init.dir().join("log/ctrlinit.log")).ok()?;
        let text = String::from_utf8_lossy(&log).into_owned();
        text.contains("new run").then_some(log)
    });
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains("\\e[2Jup"), "{text}");
    assert!(text.contains("\\e]0;pwned\\x07/1"), "{text}");
    for (what, bytes) in [
        ("status", status.as_bytes()),
        ("ctrlinit.log", &log[..]),
        ("the console", init.output().as_bytes()),
    ] {
        assert!(!bytes.contains(&0x1b), "a raw ESC in {what}");
        assert!(!bytes.contains(&0x07), "a raw BEL in {what}");
    }
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

//! The control socket under abuse and load against the real binary as PID 1 (issue 4): garbage,
//! oversized and half-open requests while a program restarts with zero backoff — its restarts
//! keep their pace and other clients get answers — and 200 concurrent `status` clients.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use common::*;

/// `restarts` of a program, from a raw status request (so measuring does not spawn processes).
fn restarts(socket: &Path, name: &str) -> u64 {
    let v = request(
        socket,
        &format!(r#"{{"v":1,"cmd":"status","names":["{name}"]}}"#),
    )
    .unwrap_or_else(|e| panic!("status failed: {e}"));
    v["programs"][0]["restarts"]
        .as_u64()
        .unwrap_or_else(|| panic!("no restarts in {v}"))
}

/// Sends one request line and reads one answer line (10 s bound).
fn request(socket: &Path, line: &str) -> Result<serde_json::Value, String> {
    let mut s = UnixStream::connect(socket).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(line.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    s.write_all(b"\n").map_err(|e| format!("write: {e}"))?;
    let mut answer = String::new();
    BufReader::new(s)
        .read_line(&mut answer)
        .map_err(|e| format!("read: {e}"))?;
    serde_json::from_str(&answer).map_err(|e| format!("answer {answer:?}: {e}"))
}

/// Reads whatever the server sends until it closes (bounded); the text.
fn read_all(mut s: UnixStream, timeout: Duration) -> String {
    s.set_read_timeout(Some(timeout)).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Waits until `name` has restarted at least `n` more times; the restarts seen and the time
/// they took (both read at the same moment, so the waiting's polling step does not skew the rate).
fn restarts_over_time(socket: &Path, name: &str, n: u64) -> (u64, Duration) {
    let before = restarts(socket, name);
    let t = Instant::now();
    wait_until(&format!("{n} more restarts of {name}"), DEADLINE, || {
        let made = restarts(socket, name) - before;
        (made >= n).then(|| (made, t.elapsed()))
    })
}

/// Puts the calling thread at nice 19.
fn lowest_priority() {
    // SAFETY: gettid and setpriority take plain integers; PRIO_PROCESS with a thread id sets
    // that thread's nice value only.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
}

/// Held by each test of this file: the abuse test times restarts as a ratio of two phases, and
/// the 200-client tests (running beside it, as tests of one binary do) would load one phase and
/// not the other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

const CONFIG: &str = r#"
[program.crashy]
command = ["/bin/sh", "-c", "exit 1"]
backoff = { initial = "0s", max = "0s" }
max_restarts = 999999

[program.steady]
command = ["/bin/sleep", "1000"]
"#;

#[test]
fn garbage_oversized_and_half_open_requests_stall_neither_restarts_nor_other_clients() {
    let _alone = one_at_a_time();
    let init = init().file("a.toml", CONFIG).start();
    let socket: PathBuf = init.socket.clone();
    let (code, out) = init.ctl(&["status", "--wait", "steady=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    wait_until("crashy to be restarting", DEADLINE, || {
        (restarts(&socket, "crashy") >= 10).then_some(())
    });
    // Alternating phases, quiet then abused, each timing the same number of restarts, so that
    // other load on the machine weighs on both.
    let per_phase = 20;
    let gate = Gate::new(false);
    let abused = Arc::new(AtomicUsize::new(0));
    let answers = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut threads = Vec::new();
    for kind in 0..4 {
        let (socket, gate, abused, answers) = (
            socket.clone(),
            gate.clone(),
            abused.clone(),
            answers.clone(),
        );
        threads.push(std::thread::spawn(move || {
            // The abusers are the test's clients, not the init under test: at the lowest
            // priority their own wake-ups (thousands a second) do not take the CPUs' time
            // from the owner loop; what ctrlinit spends on their requests still counts.
            lowest_priority();
            let big = vec![b'x'; 200 * 1024];
            // Paced (a few hundred requests a second in all): abuse, not a CPU flood of this
            // small machine.
            while gate.pace(Duration::from_millis(5)) && gate.wait_open() {
                let Ok(mut s) = UnixStream::connect(&socket) else {
                    continue;
                };
                let _ = match kind {
                    0 => s.write_all(b"this is not json\n"),
                    1 => s.write_all(b"\x00\xff\xfe{{{{\"v\":1,\n"),
                    2 => s.write_all(&big).and_then(|()| s.write_all(b"\n")),
                    _ => s
                        .write_all(br#"{"v":1,"cmd":"status""#)
                        .and_then(|()| s.shutdown(std::net::Shutdown::Write)),
                };
                let text = read_all(s, Duration::from_secs(10));
                abused.fetch_add(1, Ordering::Relaxed);
                let mut a = answers.lock().unwrap();
                if a.len() < 400 {
                    a.push(text);
                }
            }
        }));
    }
    // Connections that send nothing or half a line: some for the whole test (to see them given
    // up), more during each abused phase.
    let half_open = |n: usize| -> Vec<UnixStream> {
        (0..n)
            .map(|i| {
                let mut s = UnixStream::connect(&socket).unwrap();
                if i % 2 == 1 {
                    s.write_all(br#"{"v":1,"cmd":"sta"#).unwrap();
                }
                s
            })
            .collect()
    };
    // A reference for plain CPU contention: the same number of threads spinning, no requests.
    // On a loaded machine, restarts slow down with the CPUs' share the owner loop gets, whatever
    // the threads do; what the abuse must not add is a stall.
    let spin = Gate::new(false);
    let spinners: Vec<_> = (0..4)
        .map(|_| {
            let spin = spin.clone();
            std::thread::spawn(move || {
                while spin.wait_open() {
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(1) {
                        std::hint::spin_loop();
                    }
                }
            })
        })
        .collect();
    let mut quiet = (0, Duration::ZERO);
    let mut spun = (0, Duration::ZERO);
    let mut busy = (0, Duration::ZERO);
    let add = |sum: &mut (u64, Duration), (n, took): (u64, Duration)| {
        sum.0 += n;
        sum.1 += took;
    };
    let mut kept = Vec::new();
    let mut kept_since = Instant::now();
    for round in 0..3 {
        add(&mut quiet, restarts_over_time(&socket, "crashy", per_phase));
        spin.open();
        add(&mut spun, restarts_over_time(&socket, "crashy", per_phase));
        spin.pause();
        let extra = half_open(200);
        if round == 0 {
            kept = half_open(10);
            kept_since = Instant::now();
        }
        gate.open();
        add(&mut busy, restarts_over_time(&socket, "crashy", per_phase));
        // Other clients are served meanwhile, promptly.
        let t = Instant::now();
        let (code, out) = init.ctl(&["status"]);
        let took = t.elapsed();
        assert!(code == 3 || code == 0, "{out}");
        assert!(out.contains("steady"), "{out}");
        assert!(
            took < Duration::from_secs(3),
            "status took {took:?} during the abuse"
        );
        gate.pause();
        drop(extra);
    }
    let (code, out) = init.ctl(&["restart", "steady", "--timeout", "10s"]);
    assert_eq!(code, 0, "restart after the abuse: {out}");
    gate.close();
    spin.close();
    for t in threads.into_iter().chain(spinners) {
        t.join().unwrap();
    }
    let n = abused.load(Ordering::Relaxed);
    let per_restart = |(n, took): (u64, Duration)| took / n as u32;
    let (quiet, spun, busy) = (per_restart(quiet), per_restart(spun), per_restart(busy));
    eprintln!(
        "a restart every {quiet:?} quiet, every {spun:?} beside 4 spinning threads, every {busy:?} during {n} abusive requests"
    );
    assert!(n >= 20, "the abuse did not happen: {n} requests");
    assert!(
        busy <= (quiet * 3).max(spun * 2),
        "restarts slowed down under abuse: one every {busy:?}, against {quiet:?} quiet and {spun:?} beside spinning threads"
    );
    // Each abusive request got an error answer (or was dropped), never a served command.
    let answers = answers.lock().unwrap();
    for a in answers.iter() {
        for line in a.lines() {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("unreadable answer {line:?}: {e}"));
            assert_eq!(v["type"], "error", "{line}");
        }
    }
    assert!(
        answers.iter().any(|a| a.contains("bad request")),
        "garbage is answered with an error"
    );
    assert!(
        answers.iter().any(|a| a.contains("longer than")),
        "oversized is answered with an error"
    );
    assert!(
        answers.iter().any(|a| a.contains("newline")),
        "half a line then EOF is answered with an error"
    );
    // Half-open connections are given up after the request time bound (with an error or a close).
    for s in kept {
        let text = read_all(s, Duration::from_secs(12));
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["type"], "error", "{line}");
        }
    }
    let held = kept_since.elapsed();
    assert!(
        held < Duration::from_secs(12),
        "half-open connections were kept {held:?}"
    );
    assert!(alive(init.pid));
}

#[test]
fn two_hundred_concurrent_status_clients_all_get_answers() {
    let _alone = one_at_a_time();
    let init = init().file("a.toml", CONFIG).start();
    let (code, out) = init.ctl(&["status", "--wait", "steady=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    let n = 200;
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (socket, barrier) = (init.socket.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let v = request(&socket, r#"{"v":1,"cmd":"status"}"#)?;
                if v["type"] != "status" || v["programs"].as_array().map(Vec::len) != Some(2) {
                    return Err(format!("unexpected answer {v}"));
                }
                Ok(())
            })
        })
        .collect();
    let failures: Vec<String> = threads
        .into_iter()
        .filter_map(|t| t.join().unwrap().err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {n} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

#[test]
fn two_hundred_concurrent_status_commands_all_succeed() {
    let _alone = one_at_a_time();
    let init = init()
        .file(
            "a.toml",
            "[program.steady]\ncommand = [\"/bin/sleep\", \"1000\"]\n",
        )
        .start();
    let (code, out) = init.ctl(&["status", "--wait", "steady=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    let n = 200;
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (socket, barrier) = (init.socket.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut cmd = std::process::Command::new(bin());
                cmd.args(["status", "--json"])
                    .env("CTRLINIT_SOCKET", &socket);
                barrier.wait();
                let r = run_with_deadline(cmd, Duration::from_secs(30));
                (r.code == 0 && r.stdout.contains("\"steady\""))
                    .then_some(())
                    .ok_or_else(|| format!("{r:?}"))
            })
        })
        .collect();
    let failures: Vec<String> = threads
        .into_iter()
        .filter_map(|t| t.join().unwrap().err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {n} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

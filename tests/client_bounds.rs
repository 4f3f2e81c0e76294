//! The client against a socket that is not an honest ctrlinit: an answer line that never ends
//! is cut by the answer's deadline however the bytes trickle in, and by a cap on its length
//! however fast they come, with a clear error and bounded memory.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// `status`'s answer deadline (the client's slack) and a margin for a loaded machine.
const STATUS_WAIT: Duration = Duration::from_secs(5);
const MARGIN: Duration = Duration::from_secs(15);

/// A fake server at `path`: for every connection, reads the request, then writes `chunk` every
/// `period` (no newline ever) until the client goes.
fn stream_forever(path: &Path, chunk: usize, period: Option<Duration>) {
    let listener = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = conn.read(&mut request);
                let bytes = vec![b'a'; chunk];
                let gate = Gate::new(true);
                while conn.write_all(&bytes).is_ok() {
                    if let Some(p) = period {
                        gate.pace(p);
                    }
                }
            });
        }
    });
}

/// `ctrlinit status --socket SOCKET` (under `prlimit` with an address-space cap, so a client
/// that holds what it reads fails rather than takes the machine's memory).
fn status_at(socket: &Path) -> (Ran, Duration) {
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={}", 1u64 << 30))
        .arg(bin())
        .args(["status", "--socket"])
        .arg(socket);
    let t = Instant::now();
    let ran = run_with_deadline(cmd, STATUS_WAIT + MARGIN);
    (ran, t.elapsed())
}

#[test]
fn an_answer_that_trickles_in_without_a_line_end_is_cut_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("fake.sock");
    // 4 KiB every 10 ms: bytes keep coming (a per-read timeout never fires), far below the cap.
    stream_forever(&socket, 4096, Some(Duration::from_millis(10)));
    let (ran, took) = status_at(&socket);
    assert_ne!(ran.code, 0, "{}", ran.all());
    assert!(
        ran.stderr.contains("ctrlinit did not answer in time"),
        "{}",
        ran.all()
    );
    assert!(took >= STATUS_WAIT - Duration::from_millis(500), "{took:?}");
}

#[test]
fn an_answer_past_the_cap_is_refused_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("fake.sock");
    // As fast as the socket takes it.
    stream_forever(&socket, 1 << 20, None);
    let (ran, _) = status_at(&socket);
    assert_ne!(ran.code, 0, "{}", ran.all());
    // Either the cap or (on a slow machine) the deadline came first; both are clear refusals,
    // and neither held more than the cap (the address-space limit would have failed it).
    assert!(
        ran.stderr
            .contains("refused an answer longer than 64 MiB without a line end")
            || ran.stderr.contains("ctrlinit did not answer in time"),
        "{}",
        ran.all()
    );
}

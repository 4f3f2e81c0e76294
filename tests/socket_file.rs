//! The control socket's file and connections against the real binary as PID 1 (issue 4): a stale
//! socket is replaced, a live one is not stolen, a file that is not a socket is left alone, and a
//! client that hangs up on a stream (`events`) gives its connection back at once.

mod common;

use std::io::Write;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use common::*;

const ONE: &str = "[program.svc]\ncommand = [\"/bin/sleep\", \"1000\"]\n";

/// The sockets `pid` holds open, by inode (`socket:[123]`). Counting descriptors instead is
/// fragile: a connection that was closing when the "before" count was taken (the `status --wait`
/// client just hung up) makes the baseline one too high for as long as the server takes to see
/// it, and its number is then reused by a new connection.
fn open_sockets(pid: i32) -> std::collections::HashSet<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .map(|t| t.to_string_lossy().into_owned())
                .filter(|t| t.starts_with("socket:"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_stale_socket_from_an_earlier_run_is_replaced() {
    let builder = init().file("a.toml", ONE);
    // A socket nobody listens on any more: what a killed init leaves behind.
    drop(UnixListener::bind(builder.dir().join("ctrlinit.sock")).unwrap());
    let init = builder.start();
    let (code, out) = init.ctl(&["status", "--wait", "svc=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_socket_held_by_a_live_init_is_not_stolen() {
    let first = init().file("a.toml", ONE).start();
    let (code, out) = first.ctl(&["status", "--wait", "svc=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    let mut second = init()
        .file("a.toml", ONE)
        .env("CTRLINIT_SOCKET", first.socket.to_str().unwrap())
        .start();
    assert_ne!(second.wait_exit(DEADLINE), 0);
    let out = second.output();
    assert!(
        out.contains("is in use by a running ctrlinit") && out.contains("fix:"),
        "{out}"
    );
    // The first one still answers on it.
    let (code, out) = first.ctl(&["status", "svc"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_file_that_is_not_a_socket_is_left_alone() {
    let builder = init().file("a.toml", ONE);
    let path = builder.dir().join("ctrlinit.sock");
    std::fs::write(&path, "precious").unwrap();
    let mut init = builder.start();
    assert_ne!(init.wait_exit(DEADLINE), 0);
    let out = init.output();
    assert!(
        out.contains("is not a socket") && out.contains("fix:"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
}

#[test]
fn event_streams_whose_clients_hang_up_are_closed_at_once() {
    let init = init().file("a.toml", ONE).start();
    let (code, out) = init.ctl(&["status", "--wait", "svc=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    let before = open_sockets(init.pid);
    let n = 50;
    let streams: Vec<UnixStream> = (0..n)
        .map(|_| {
            let mut s = UnixStream::connect(&init.socket).unwrap();
            s.write_all(b"{\"v\":1,\"cmd\":\"events\"}\n").unwrap();
            s
        })
        .collect();
    // Sockets that were not there before: the server's ends of these connections.
    let new = |init: &Init| open_sockets(init.pid).difference(&before).count();
    wait_until("the event streams to be served", DEADLINE, || {
        (new(&init) >= n).then_some(())
    });
    drop(streams);
    // No event happens meanwhile: the server notices the hang-ups themselves.
    let left = wait_until_soft(Duration::from_secs(10), || (new(&init) == 0).then_some(()));
    assert!(
        left.is_some(),
        "{} of the {n} connections still open after their clients left",
        new(&init)
    );
    let (code, out) = init.ctl(&["status", "svc"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_client_that_only_shuts_down_its_writing_side_still_gets_its_answer() {
    // `nc -N` and socat send the request, then end of file, then read: that is not a hang-up.
    let init = init().file("a.toml", ONE).start();
    let (code, out) = init.ctl(&["status", "--wait", "svc=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    let mut s = UnixStream::connect(&init.socket).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    // A wait that cannot hold, so the answer (its time-out) comes well after the end of file.
    s.write_all(b"{\"v\":1,\"cmd\":\"wait\",\"conditions\":[{\"name\":\"svc\",\"states\":[\"stopped\"]}],\"timeout_ms\":300}\n")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut s, &mut answer).unwrap();
    assert!(
        answer.contains("\"type\":\"error\"") && answer.contains("timed out"),
        "{answer}"
    );
}

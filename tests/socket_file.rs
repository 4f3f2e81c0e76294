//! The control socket's file and connections against the real binary as PID 1 (issue 4): a stale
//! socket is replaced, a live one is not stolen, a file that is not a socket is left alone, and a
//! client that hangs up on a stream (`events`) gives its connection back at once.

mod common;

use std::io::Write;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use common::*;

const ONE: &str = "[program.svc]\ncommand = [\"/bin/sleep\", \"1000\"]\n";

fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
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
    let before = open_fds(init.pid);
    let n = 50;
    let streams: Vec<UnixStream> = (0..n)
        .map(|_| {
            let mut s = UnixStream::connect(&init.socket).unwrap();
            s.write_all(b"{\"v\":1,\"cmd\":\"events\"}\n").unwrap();
            s
        })
        .collect();
    wait_until("the event streams to be served", DEADLINE, || {
        (open_fds(init.pid) >= before + n).then_some(())
    });
    drop(streams);
    // No event happens meanwhile: the server notices the hang-ups themselves.
    let left = wait_until_soft(Duration::from_secs(10), || {
        (open_fds(init.pid) <= before + 2).then_some(())
    });
    assert!(
        left.is_some(),
        "{} descriptors still open after the clients left (was {before})",
        open_fds(init.pid)
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

//! Syslog attribution against forgery, with the real binary as PID 1: a local user (`nobody`,
//! inside the container's PID namespace) who takes the pid a program's `logger` used, and a
//! stream connection handed on by the process that opened it, outliving its run. Neither may
//! write into a program's log file; what they send goes to the `syslog` stream of senders that
//! are no program's.

mod common;

use std::io::{IoSliceMut, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::Command;

use common::*;

/// A line of `path` containing `needle`, once there is one.
fn wait_in_file(path: &Path, needle: &str) -> String {
    wait_until(
        &format!("{needle:?} in {}", path.display()),
        DEADLINE,
        || {
            let text = std::fs::read_to_string(path).ok()?;
            text.lines()
                .find(|l| l.contains(needle))
                .map(str::to_string)
        },
    )
}

/// Makes the next pid allocated in `init`'s namespace `next` (root, through `ns_last_pid`): a
/// head start for the attacker, who cycles pids itself if another process took it first.
fn next_pid_in(init: &Init, next: i32) {
    let mut c = Command::new("nsenter");
    c.args([
        "-t",
        &init.pid.to_string(),
        "-p",
        "-m",
        "--",
        "/bin/sh",
        "-c",
    ]);
    c.arg(format!("echo {} > /proc/sys/kernel/ns_last_pid", next - 1));
    let ran = run_with_deadline(c, DEADLINE);
    assert_eq!(ran.code, 0, "{}", ran.all());
}

/// Forks until a process holds pid `argv[2]`, which sends five forged lines to `argv[1]`.
const PID_CYCLER: &str = r#"
import os, socket, sys
path, target = sys.argv[1], int(sys.argv[2])
def forge():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    for i in range(5):
        s.sendto(b"<13>app[%d]: FORGED %d" % (target, i), path)
if os.getpid() == target:
    forge()
    sys.exit(0)
for _ in range(200000):
    pid = os.fork()
    if pid == 0:
        if os.getpid() == target:
            forge()
        os._exit(0)
    os.waitpid(pid, 0)
    if pid == target:
        sys.exit(0)
sys.exit(3)
"#;

#[test]
fn a_local_user_holding_a_pid_a_programs_logger_used_is_not_that_program() {
    let builder = init();
    let dir = builder.dir();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The program's `logger` logs one line, stays until told (so its line is traced to the
    // run), then exits: its pid is free for anyone to take.
    let init = builder
        .file(
            "a.toml",
            "[init]\nsyslog = \"{dir}/log.sock\"\n\n\
             [program.app]\ncommand = [\"sh\", \"-c\", \"{ echo first; while [ ! -e {dir}/go ]; do sleep 0.05; done; } | logger -u {dir}/log.sock -t app -i; exec sleep 600\"]\n",
        )
        .start();
    let log = dir.join("log");
    let first = wait_in_file(&log.join("app.log"), "first");
    let pid: i32 = first
        .strip_prefix("notice app[")
        .and_then(|r| r.split_once(']'))
        .and_then(|(p, _)| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {first:?}"));
    std::fs::write(dir.join("go"), b"").unwrap();
    wait_until("the program's logger to exit", DEADLINE, || {
        host_pid(&init, pid).is_none().then_some(())
    });
    std::fs::write(dir.join("cycle.py"), PID_CYCLER).unwrap();
    next_pid_in(&init, pid);
    let mut c = Command::new("nsenter");
    c.args(["-t", &init.pid.to_string(), "-p", "-m", "--"])
        .args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .args(["/usr/bin/python3", dir.join("cycle.py").to_str().unwrap()])
        .args([dir.join("log.sock").to_str().unwrap(), &pid.to_string()]);
    let ran = run_with_deadline(c, std::time::Duration::from_secs(300));
    assert_eq!(
        ran.code,
        0,
        "the attacker never held pid {pid}: {}",
        ran.all()
    );
    // Every forged line arrives somewhere; none in the program's file.
    let line = wait_until("the forged lines", DEADLINE, || {
        ["app.log", "syslog.log"].into_iter().find_map(|f| {
            let text = std::fs::read_to_string(log.join(f)).ok()?;
            text.contains("FORGED 4").then(|| f.to_string())
        })
    });
    let app = std::fs::read_to_string(log.join("app.log")).unwrap();
    assert!(
        !app.contains("FORGED"),
        "a forged line landed in the program's log:\n{app}"
    );
    assert_eq!(line, "syslog.log");
    let foreign = std::fs::read_to_string(log.join("syslog.log")).unwrap();
    assert_eq!(foreign.matches("FORGED").count(), 5, "{foreign}");
    init.wait_for_line("syslog   | notice app[");
}

/// The program's process that opens a stream connection, hands its descriptor to the test
/// (`SCM_RIGHTS` over `argv[2]`), waits for one byte from it, and exits.
const HANDER: &str = r#"
import socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
conn.sendall(b"<14>app: opened\n")
peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
peer.connect(sys.argv[2])
socket.send_fds(peer, [b"x"], [conn.fileno()])
peer.recv(1)
"#;

/// The descriptor sent with one message on `from`.
fn receive_fd(from: &UnixStream) -> UnixStream {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut buf = [0u8; 8];
    let mut iov = [IoSliceMut::new(&mut buf)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(
        from.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::empty(),
    )
    .expect("recvmsg");
    for c in msg.cmsgs().expect("cmsgs") {
        if let ControlMessageOwned::ScmRights(fds) = c {
            // SAFETY: the kernel installed this descriptor for us just now; nothing else owns it.
            return unsafe { UnixStream::from_raw_fd(fds[0]) };
        }
    }
    panic!("no descriptor came");
}

#[test]
fn a_stream_connection_handed_on_is_closed_when_the_run_that_opened_it_ends() {
    let builder = init();
    let dir = builder.dir();
    std::fs::write(dir.join("hand.py"), HANDER).unwrap();
    let pass = UnixListener::bind(dir.join("pass.sock")).unwrap();
    let init = builder
        .file(
            "a.toml",
            "[init]\nsyslog_stream = \"{dir}/log.stream\"\n\n\
             [program.app]\ncommand = [\"sh\", \"-c\", \"/usr/bin/python3 {dir}/hand.py {dir}/log.stream {dir}/pass.sock; exec sleep 600\"]\n",
        )
        .start();
    let log = dir.join("log");
    let (mut hander, _) = pass.accept().unwrap();
    let mut held = receive_fd(&hander);
    wait_in_file(&log.join("app.log"), "opened");
    // The opener exits; the descriptor lives on here. While the run lasts it speaks for it.
    hander.write_all(b"y").unwrap();
    let mut end = [0u8; 1];
    let _ = hander.read(&mut end);
    held.write_all(b"<14>app: while running\n").unwrap();
    wait_in_file(&log.join("app.log"), "while running");
    let (code, out) = init.ctl(&["stop", "app"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["app=stopped"]);
    // The run ended: its connection is closed, whoever holds it.
    held.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut buf = [0u8; 16];
    match held.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("{n} bytes from the syslog socket"),
        Err(e) => panic!("the connection outlived its run: {e}"),
    }
    let _ = held.write_all(b"<14>app: after the end\n");
    let app = std::fs::read_to_string(log.join("app.log")).unwrap();
    assert!(!app.contains("after the end"), "{app}");
}

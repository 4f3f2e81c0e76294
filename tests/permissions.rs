//! The control socket's credential check against the real binary as PID 1 (issue 4): a client
//! running as another uid is refused even when the socket file's mode lets it connect, so the
//! check on the connection itself (SO_PEERCRED) is what is tested; `socket_group` lets a group in.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

/// Makes the test directory reachable by other users and copies the client binary into it (the
/// build directory may not be theirs to execute from). Returns the copy.
fn open_up(init: &Init) -> PathBuf {
    std::fs::set_permissions(init.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let client = init.dir().join("ctrlinit-client");
    std::fs::copy(bin(), &client).unwrap();
    std::fs::set_permissions(&client, std::fs::Permissions::from_mode(0o755)).unwrap();
    client
}

/// Runs the client as `uid:gid` with no supplementary groups. An exec refused with "Text file
/// busy" is tried again: a process another test thread forks while the copy of the client is
/// being written holds its write descriptor until that process execs (slow on a loaded machine).
fn ctl_as(init: &Init, client: &Path, uid: u32, gid: u32, args: &[&str]) -> Ran {
    let run = || {
        let mut cmd = Command::new("setpriv");
        cmd.arg(format!("--reuid={uid}"))
            .arg(format!("--regid={gid}"))
            .arg("--clear-groups")
            .arg(client)
            .args(args)
            .env("CTRLINIT_SOCKET", &init.socket);
        run_with_deadline(cmd, Duration::from_secs(15))
    };
    let mut last = None;
    wait_until_soft(Duration::from_secs(10), || {
        let r = run();
        let busy = r.code == 126 && r.all().contains("Text file busy");
        last = Some(r);
        (!busy).then_some(())
    });
    last.expect("the client ran")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn state_and_pid(init: &Init, name: &str) -> (String, i64) {
    let (_, out) = init.ctl(&["status", "--json", name]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    (
        v[0]["state"].as_str().unwrap().to_string(),
        v[0]["pid"].as_i64().unwrap_or(-1),
    )
}

/// Sends one raw request line as `uid:gid` (python3 under setpriv) and returns every line the
/// server answered. A refused peer may find the connection closed before it could send: the
/// answer is read either way.
fn raw_as(init: &Init, uid: u32, gid: u32, request: &str) -> String {
    let script = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
try:
    s.sendall(sys.argv[2].encode() + b"\n")
except OSError:
    pass
data = b""
while True:
    try:
        chunk = s.recv(65536)
    except OSError:
        break
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode())
"#;
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .arg("--clear-groups")
        .args(["/usr/bin/python3", "-c", script])
        .arg(&init.socket)
        .arg(request);
    let r = run_with_deadline(cmd, Duration::from_secs(15));
    assert_eq!(r.code, 0, "python client failed: {r:?}");
    r.stdout
}

fn start_svc() -> Init {
    let init = init()
        .file(
            "a.toml",
            "[program.svc]\ncommand = [\"/bin/sleep\", \"1000\"]\n",
        )
        .start();
    let (code, out) = init.ctl(&["status", "--wait", "svc=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    init
}

#[test]
fn another_uid_is_refused_by_the_credential_check_even_with_the_socket_mode_opened_wide() {
    let init = start_svc();
    assert_eq!(mode(&init.socket), 0o600, "created 0600");
    let client = open_up(&init);
    // With the default mode the file system already keeps uid 65534 out.
    let r = ctl_as(&init, &client, 65534, 65534, &["status"]);
    assert_ne!(r.code, 0, "{r:?}");
    // Opened wide, the connection succeeds; the peer-credential check must refuse it.
    std::fs::set_permissions(&init.socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let before = state_and_pid(&init, "svc");
    for request in [
        r#"{"v":1,"cmd":"status"}"#,
        r#"{"v":1,"cmd":"stop","names":["svc"],"timeout_ms":5000}"#,
        r#"{"v":1,"cmd":"signal","signal":"KILL","names":["svc"]}"#,
        r#"{"v":1,"cmd":"shutdown"}"#,
        r#"{"v":1,"cmd":"logs","names":["svc"],"lines":10}"#,
    ] {
        let answer = raw_as(&init, 65534, 65534, request);
        let lines: Vec<&str> = answer.lines().collect();
        assert_eq!(lines.len(), 1, "{request}: one answer: {answer:?}");
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(
            v["type"], "error",
            "{request} as uid 65534 was served: {answer}"
        );
        let error = v["error"].as_str().unwrap();
        assert!(
            error.contains("permission denied") && error.contains("65534"),
            "{error}"
        );
    }
    // The client binary fails too (not as "unreachable"), and health says unhealthy (1).
    for args in [
        &["status"][..],
        &["stop", "svc"],
        &["shutdown"],
        &["reload"],
    ] {
        let r = ctl_as(&init, &client, 65534, 65534, args);
        assert_ne!(r.code, 0, "{args:?} as uid 65534 was accepted: {r:?}");
        assert_ne!(r.code, 4, "{args:?}: refused, not unreachable: {r:?}");
        assert!(!r.stdout.contains("svc"), "{args:?} leaked status: {r:?}");
    }
    let r = ctl_as(&init, &client, 65534, 65534, &["health"]);
    assert_eq!(r.code, 1, "health refused is unhealthy, exit 1: {r:?}");
    // Nothing was done on their behalf.
    assert_eq!(state_and_pid(&init, "svc"), before);
    assert!(alive(init.pid));
    // Root still gets in.
    let (code, out) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_refused_client_says_permission_denied_in_one_clear_line() {
    let init = start_svc();
    let client = open_up(&init);
    std::fs::set_permissions(&init.socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    // "Client errors are one clear line: ... permission denied". The server refuses as soon as
    // it accepts; the client must report that refusal, whatever the timing of its own send.
    let mut bad = Vec::new();
    for _ in 0..5 {
        for args in [
            &["status"][..],
            &["stop", "svc"],
            &["logs", "svc"],
            &["events"],
        ] {
            let r = ctl_as(&init, &client, 65534, 65534, args);
            let text = r.all();
            if !(text.contains("permission denied")
                && text.trim_end().lines().count() == 1
                && r.stdout.is_empty()
                && r.code == 1)
            {
                bad.push(format!("{args:?} -> exit {}: {}", r.code, text.trim_end()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of 20 refusals were not reported as such (one line on stderr, exit 1):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_socket_group_is_let_in_and_others_are_not() {
    let init = init()
        .file(
            "a.toml",
            "[init]\nsocket_group = \"nogroup\"\n\n[program.svc]\ncommand = [\"/bin/sleep\", \"1000\"]\n",
        )
        .start();
    let (code, out) = init.ctl(&["status", "--wait", "svc=running", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    let meta = std::fs::metadata(&init.socket).unwrap();
    assert_eq!(mode(&init.socket), 0o660, "socket_group makes it 0660");
    assert_eq!(meta.gid(), 65534, "owned by the group");
    let client = open_up(&init);
    // A member of the group (here by its primary gid) is served.
    let r = ctl_as(&init, &client, 65534, 65534, &["status"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("svc"), "{r:?}");
    // Another uid outside the group is refused even with the mode opened wide.
    std::fs::set_permissions(&init.socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = ctl_as(&init, &client, 4242, 4242, &["status"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(!r.stdout.contains("svc"), "{r:?}");
    let answer = raw_as(&init, 4242, 4242, r#"{"v":1,"cmd":"status"}"#);
    assert!(
        answer.contains("permission denied") && answer.contains("4242"),
        "{answer}"
    );
    // The group member speaks the raw protocol too.
    let answer = raw_as(&init, 65534, 65534, r#"{"v":1,"cmd":"status"}"#);
    assert!(answer.contains(r#""type":"status""#), "{answer}");
}

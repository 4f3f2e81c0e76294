//! The control socket against local users (issue 13): nobody who can write its directory can
//! make ctrlinit chown or chmod another file; a socket group member cannot starve root; refused
//! peers hold nothing; and an `events` client that keeps up misses nothing of a thousand
//! programs restarting at once.

mod common;

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const ONE: &str = "[program.svc]\ncommand = [\"/bin/sleep\", \"1000\"]\n";

/// A python3 script run as another user (`setpriv`), its stdout captured.
fn python_as(uid: u32, gid: u32, script: &str) -> std::process::Child {
    Command::new("setpriv")
        .args([
            &format!("--reuid={uid}"),
            &format!("--regid={gid}"),
            "--clear-groups",
            // Debian's, which every user can run (not a python of root's home).
            "/usr/bin/python3",
            "-c",
            script,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Opens `n` connections to `socket` as this script's user, each asking for `events`, reads the
/// first line each got (until all answered, or none did for `quiet` seconds), prints
/// `held H refused R`, then holds them open.
fn holder_script(socket: &str, n: usize, quiet: u32) -> String {
    format!(
        r#"
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, refused = [], 0
for _ in range({n}):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("{socket}")
    try:
        s.sendall(b'{{"v":1,"cmd":"events"}}\n')
    except OSError:
        pass
    held.append(s)
# A refusal is an error line the server wrote before closing. Wait for the answers with one
# deadline, not a short wait per connection: on a loaded machine an answer may take a while to
# be scheduled. A connection that is served (held) says nothing, so the wait ends when every
# connection answered, when none answered for {quiet} s, or at the deadline.
import selectors
sel = selectors.DefaultSelector()
got = {{}}
for s in held:
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
    got[s] = b""
deadline = time.monotonic() + 60
last = time.monotonic()
while got and time.monotonic() < deadline and time.monotonic() - last < {quiet}:
    for key, _ in sel.select(timeout=0.2):
        s = key.fileobj
        try:
            chunk = s.recv(4096)
        except OSError:
            chunk = b""
        got[s] += chunk
        if not chunk or b"\n" in got[s]:
            last = time.monotonic()
            if b"error" in got[s]:
                refused += 1
            sel.unregister(s)
            del got[s]
print("held", len(held) - refused, "refused", refused, flush=True)
time.sleep(3600)
"#
    )
}

fn read_line(child: &mut std::process::Child) -> String {
    let mut out = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    String::from_utf8_lossy(&line).into_owned()
}

#[test]
fn a_socket_group_member_cannot_starve_root() {
    let init = init()
        .file(
            "a.toml",
            &format!("[init]\nsocket_group = \"nogroup\"\n\n{ONE}"),
        )
        .start();
    init.wait_states(&["svc=running"]);
    // The test dir is root's 0700: let the member reach the socket inside it.
    std::fs::set_permissions(init.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut member = python_as(
        65534,
        65534,
        &holder_script(init.socket.to_str().unwrap(), 1_100, 3),
    );
    let said = read_line(&mut member);
    let counts: Vec<usize> = said
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(counts.len(), 2, "{said}");
    assert!(
        counts[0] <= 64,
        "one member held {} connections: {said}",
        counts[0]
    );
    assert!(counts[1] >= 1_000, "the rest were refused: {said}");
    // Root is served at once, while the member holds its connections.
    for args in [&["status"][..], &["health"]] {
        let t = Instant::now();
        let (code, out) = init.ctl(args);
        assert_eq!(code, 0, "{args:?}: {out}");
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "{args:?} took {:?}",
            t.elapsed()
        );
    }
    let _ = member.kill();
    let _ = member.wait();
}

#[test]
fn refused_peers_are_answered_at_once_and_hold_nothing() {
    let init = init().file("a.toml", ONE).start();
    init.wait_states(&["svc=running"]);
    std::fs::set_permissions(init.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&init.socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let before = std::fs::read_dir(format!("/proc/{}/fd", init.pid))
        .unwrap()
        .count();
    let mut stranger = python_as(
        12345,
        12345,
        &holder_script(init.socket.to_str().unwrap(), 2_000, 60),
    );
    let said = read_line(&mut stranger);
    assert!(
        said.ends_with("refused 2000"),
        "every connection refused at once: {said}"
    );
    // They are still open on the stranger's side: the server's side is closed already.
    let after = std::fs::read_dir(format!("/proc/{}/fd", init.pid))
        .unwrap()
        .count();
    assert!(
        after <= before + 2,
        "refused connections hold descriptors: {before} -> {after}"
    );
    let (code, out) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{out}");
    let _ = stranger.kill();
    let _ = stranger.wait();
}

/// Two processes race: ctrlinit starting with its socket in a directory every user may write
/// (and that is not sticky), and another user swapping the socket's path for a link to a
/// root-only file. Whatever the interleaving, that file keeps its owner and mode.
#[test]
fn swapping_the_socket_path_for_a_link_never_hands_over_another_file() {
    let base = tempfile::tempdir().unwrap();
    let open_dir = base.path().join("open");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let victim = base.path().join("root-only");
    std::fs::write(&victim, "secret").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let socket = open_dir.join("ctl.sock");
    let racer = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/bin/sh",
            "-c",
        ])
        .arg(format!(
            "while :; do rm -f {s}; ln -s {v} {s} 2>/dev/null; done",
            s = socket.display(),
            v = victim.display()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let racer = scopeguard(racer);
    let started = Instant::now();
    let mut starts = 0;
    while started.elapsed() < Duration::from_secs(4) && starts < 30 {
        let mut init = init()
            .file(
                "a.toml",
                &format!("[init]\nsocket_group = \"nogroup\"\n\n{ONE}"),
            )
            .env("CTRLINIT_SOCKET", socket.to_str().unwrap())
            .start();
        // Either it bound (and is stopped) or it refused the path it found (and exited).
        let up = wait_until_soft(Duration::from_secs(5), || {
            init.output()
                .contains("svc: starting -> running")
                .then_some(())
        });
        if up.is_some() {
            init.signal("TERM");
        }
        init.wait_exit(DEADLINE);
        starts += 1;
    }
    drop(racer);
    let meta = std::fs::metadata(&victim).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600, "after {starts} starts");
    assert_eq!((meta.uid(), meta.gid()), (0, 0), "after {starts} starts");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret");
}

/// Another user's racer for the private directory ctrlinit makes beside a socket: it waits for
/// a `.ctl.*` directory of root's to change (the socket bound in it), then swaps it at once
/// (`renameat2(RENAME_EXCHANGE)`, one system call) for a directory of its own holding a link
/// named like the socket to `victim`. Runs until killed.
fn private_dir_racer(dir: &str, victim: &str) -> String {
    format!(
        r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
d, victim = {dir:?}, {victim:?}
n = 0
def bait():
    global n
    n += 1
    b = os.path.join(d, "bait%d" % n)
    os.mkdir(b)
    for s in ("s", "socket", "ctl.sock", "notify.sock"):
        os.symlink(victim, os.path.join(b, s))
    return b
b = bait()
while True:
    try:
        names = [x for x in os.listdir(d) if x.startswith(".ctl.")]
    except OSError:
        continue
    for name in names:
        p = os.path.join(d, name)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if st.st_uid != 0:
            continue
        for _ in range(20000):
            try:
                now = os.lstat(p)
            except OSError:
                break
            if now.st_mtime_ns != st.st_mtime_ns or now.st_size != st.st_size:
                break
        if libc.renameat2(AT_FDCWD, b.encode(), AT_FDCWD, p.encode(), RENAME_EXCHANGE) == 0:
            b = bait()
"#
    )
}

/// Two processes race: ctrlinit starting with its control and notify sockets in a directory
/// every user may write (and that is not sticky), and another user swapping the private
/// directory ctrlinit binds them in for one of theirs, holding links to a root-only file, right
/// after the socket appears there. Whatever the interleaving, that file keeps its owner and mode.
#[test]
fn swapping_the_private_directory_never_hands_over_another_file() {
    let base = tempfile::tempdir().unwrap();
    let open_dir = base.path().join("open");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let victim = base.path().join("root-only");
    std::fs::write(&victim, "secret").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let socket = open_dir.join("ctl.sock");
    let racer = Guard(python_as(
        65534,
        65534,
        &private_dir_racer(open_dir.to_str().unwrap(), victim.to_str().unwrap()),
    ));
    let config = format!(
        "[init]\nsocket_group = \"nogroup\"\nnotify_socket = \"{}\"\n\n{ONE}\n[program.notified]\ncommand = [\"/bin/sleep\", \"1000\"]\nready = {{ notify = \"systemd\" }}\n",
        open_dir.join("notify.sock").display()
    );
    let started = Instant::now();
    let mut starts = 0;
    let mut bound = 0;
    while started.elapsed() < Duration::from_secs(20) && starts < 150 {
        let mut init = init()
            .file("a.toml", &config)
            .env("CTRLINIT_SOCKET", socket.to_str().unwrap())
            .start();
        // Either it bound (and is stopped) or it refused the directory it found (and exited).
        let up = wait_until_soft(Duration::from_secs(5), || {
            init.output()
                .contains("svc: starting -> running")
                .then_some(())
        });
        if up.is_some() {
            bound += 1;
            init.signal("TERM");
        }
        init.wait_exit(DEADLINE);
        starts += 1;
        let meta = std::fs::metadata(&victim).unwrap();
        assert_eq!(
            (meta.mode() & 0o7777, meta.uid(), meta.gid()),
            (0o600, 0, 0),
            "the root-only file was handed over at start {starts}:\n{}",
            init.output()
        );
    }
    drop(racer);
    assert!(starts >= 5, "only {starts} starts in the time");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret");
    // The racer did swap private directories: ctrlinit's, renamed to the racer's bait names.
    let swapped = std::fs::read_dir(&open_dir)
        .unwrap()
        .flatten()
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == 0 && m.is_dir()))
        .count();
    eprintln!("{starts} starts, {bound} bound, {swapped} private directories swapped");
}

/// Kills the racer when the test ends, however it ends.
struct Guard(std::process::Child);

fn scopeguard(child: std::process::Child) -> Guard {
    Guard(child)
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_events_client_that_keeps_up_misses_nothing_of_a_thousand_restarts() {
    let mut text = String::new();
    for i in 0..1_000 {
        text.push_str(&format!(
            "[program.p{i:04}]\ncommand = [\"/bin/sleep\", \"1000\"]\n"
        ));
    }
    let init = init().file("a.toml", &text).start();
    init.wait_states(&["p0999=running", "p0000=running"]);
    let (code, out) = init.ctl(&["status", "--wait", "p0500=running"]);
    assert_eq!(code, 0, "{out}");
    let mut client = Command::new(bin())
        .args(["events", "--json"])
        .env("CTRLINIT_SOCKET", &init.socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = client.stdout.take().unwrap();
    let stderr = client.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(v) = serde_json::from_str(&line) else {
                break;
            };
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    // Subscribed once the stream shows a change: poke one program until it does.
    wait_until("the events stream to show a change", DEADLINE, || {
        let (code, out) = init.ctl(&["restart", "p0000"]);
        assert_eq!(code, 0, "{out}");
        rx.recv_timeout(Duration::from_millis(300)).ok()
    });
    while rx.try_recv().is_ok() {}
    let (code, out) = init.ctl(&["restart", "--all", "--timeout", "120s"]);
    assert_eq!(code, 0, "{out}");
    let mut running = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while running.len() < 1_000 && Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(v) if v["to"] == "running" => {
                running.insert(v["program"].as_str().unwrap().to_string());
            }
            _ => {}
        }
    }
    let seen = running.len();
    let _ = client.kill();
    let _ = client.wait();
    let mut errors = String::new();
    let mut stderr = stderr;
    let _ = stderr.read_to_string(&mut errors);
    assert!(!errors.contains("missed"), "{errors}");
    assert_eq!(seen, 1_000, "every program's return to running was seen");
}

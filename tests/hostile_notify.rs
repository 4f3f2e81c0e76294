//! The sd_notify socket and forking daemons' pid files against a local user (issue 21): a user
//! inside the container's namespaces, `nobody` (uid 65534), who can write the notify socket and
//! run a daemon of its own. Descriptors it attaches are all closed; a flood from the bottom of a
//! deep process tree does not stall the owner loop; a pid file cannot name another program's
//! process or a root-only file.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use common::*;

/// A program speaking sd_notify (so the socket is bound) that says it is ready. The main process
/// itself sends and stays: a sender that is gone when ctrlinit reads its datagram (a helper
/// process that sends and exits) can no longer be told to belong to the program, under load.
const SPEAKER: &str = r#"
[program.speaker]
command = ["/usr/bin/python3", "-c", "import os,socket,time; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b\"READY=1\", os.environ[\"NOTIFY_SOCKET\"]); time.sleep(1000)"]
ready = { notify = "systemd" }
"#;

/// A program that fails at once, again and again (its restarts count the loop's turns).
const FLAPPER: &str = r#"
[program.flapper]
command = ["/bin/sh", "-c", "exit 3"]
restart = "always"
backoff = { initial = "50ms", max = "50ms" }
max_restarts = 999999
restart_window = "1s"
"#;

/// Lets every user reach the test directory (the notify socket in it is writable by all).
fn open_to_all(init: &Init) {
    std::fs::set_permissions(init.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A python3 script run as `nobody`, with arguments.
fn python_as_nobody(script: &str, args: &[&str]) -> std::process::Child {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            script,
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Descriptors open in process `pid`.
fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Sends `rounds` datagrams to the notify socket, each carrying 17 to 253 descriptors (one more
/// each time, around again), as the script's user; prints `sent N` at the end.
const FD_SENDER: &str = r#"
import os, socket, sys, time, errno
path, rounds = sys.argv[1], int(sys.argv[2])
r, w = os.pipe()
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(path)
sent = 0
for i in range(rounds):
    n = 17 + i % (253 - 17 + 1)
    while True:
        try:
            socket.send_fds(s, [b"STATUS=hello"], [r] * n)
            break
        except OSError as e:
            # Too many descriptors in flight for this user: ctrlinit has not read them yet.
            if e.errno in (errno.ETOOMANYREFS, errno.EAGAIN, errno.ENOBUFS):
                time.sleep(0.001)
                continue
            raise
    sent += 1
print("sent", sent, flush=True)
"#;

#[test]
fn descriptors_sent_to_the_notify_socket_never_stay_open_in_pid1() {
    let init = init()
        .file("a.toml", &format!("{SPEAKER}{FLAPPER}"))
        .start();
    open_to_all(&init);
    init.wait_for_line("speaker: starting -> running");
    init.wait_for_line("flapper: ");
    let before = open_fds(init.pid);
    let notify = init.dir().join("ctrlinit-notify.sock");
    let mut sender = python_as_nobody(FD_SENDER, &[notify.to_str().unwrap(), "600"]);
    let mut out = String::new();
    std::io::Read::read_to_string(sender.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(sender.wait().unwrap().success(), "{out}");
    assert_eq!(out.trim(), "sent 600");
    // Each datagram is read and dropped; once the last one has been read the count is back.
    wait_until(
        "ctrlinit's descriptors back to what they were",
        DEADLINE,
        || (open_fds(init.pid) <= before + 4).then_some(()),
    );
    // And it still answers and restarts programs.
    let (code, text) = init.ctl(&["status"]);
    assert!(code != 4 && text.contains("speaker"), "{code}: {text}");
    let restarts = init.program_json("flapper")["restarts"].as_u64().unwrap();
    wait_until("the flapper to restart again", DEADLINE, || {
        (init.program_json("flapper")["restarts"].as_u64().unwrap() > restarts).then_some(())
    });
    assert!(!init.output().contains("EMFILE"), "{}", init.output());
}

/// Connects to the control socket and sends a request with 253 descriptors attached, `rounds`
/// times, then one plain request; prints its answer's first bytes.
const CONTROL_FD_SENDER: &str = r#"
import os, socket, sys
path, rounds = sys.argv[1], int(sys.argv[2])
r, w = os.pipe()
for i in range(rounds):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    socket.send_fds(s, [b'{"v":1,"cmd":"status"}\n'], [r] * 253)
    s.recv(65536)
    s.close()
print("done", flush=True)
"#;

#[test]
fn descriptors_sent_to_the_control_socket_never_stay_open_in_pid1() {
    let init = init().file("a.toml", SPEAKER).start();
    init.wait_for_line("speaker: starting -> running");
    let before = open_fds(init.pid);
    let ran = run_with_deadline(
        {
            let mut c = Command::new("/usr/bin/python3");
            c.args(["-c", CONTROL_FD_SENDER, init.socket.to_str().unwrap(), "50"]);
            c
        },
        DEADLINE,
    );
    assert_eq!(ran.stdout.trim(), "done", "{}", ran.all());
    wait_until(
        "ctrlinit's descriptors back to what they were",
        DEADLINE,
        || (open_fds(init.pid) <= before + 4).then_some(()),
    );
}

#[test]
fn a_pid_file_planted_as_a_link_is_never_followed() {
    let builder = init();
    let dir = builder.dir();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A root-only file holding a number, and a directory the daemon's user owns.
    let secret = dir.join("secret");
    std::fs::write(&secret, "31337\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let run = dir.join("run");
    std::fs::create_dir(&run).unwrap();
    nix::unistd::chown(&run, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    let conf = format!(
        r#"
[program.planted]
type = "forking"
user = "nobody"
command = ["/bin/sh", "-c", "ln -s {secret} {run}/p.pid; exit 0"]
pidfile = "{run}/p.pid"
ready_timeout = "5s"
max_restarts = 0
on_exhausted = "stop"
"#,
        secret = secret.display(),
        run = run.display()
    );
    let init = builder.file("a.toml", &conf).start();
    // Root writes its file after the link was planted (as a root program updates its own), so
    // the link's target is newer than the run.
    init.wait_for_line("reading the daemon's pid from");
    std::fs::write(&secret, "31337\n").unwrap();
    init.wait_for_line("is refused: it is a symbolic link, which ctrlinit does not follow");
    init.wait_states(&["planted=stopped"]);
    assert!(!init.output().contains("31337"), "{}", init.output());
}

/// Makes the next pid allocated in `init`'s namespace `next` (root, through `ns_last_pid`).
fn next_pid_in(init: &Init, next: i32) {
    let ran = run_with_deadline(
        {
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
            c
        },
        DEADLINE,
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
}

#[test]
fn a_pid_file_naming_another_programs_run_is_refused_and_the_stop_keeps_its_budget() {
    // The attack of issue 21: a `nobody` daemon leaves its launcher's group, the launcher exits,
    // a root program's new run gets the launcher's old number (and leads a group of it), and
    // the daemon writes that number into its pid file.
    let builder = init();
    let dir = builder.dir();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = dir.join("run");
    std::fs::create_dir(&run).unwrap();
    nix::unistd::chown(&run, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    nix::unistd::mkfifo(
        &run.join("go"),
        nix::sys::stat::Mode::from_bits_truncate(0o666),
    )
    .unwrap();
    let conf = format!(
        r#"
[init]
stop_timeout = "4s"

[program.victim]
command = ["/bin/sleep", "1000"]

[program.attacker]
type = "forking"
user = "nobody"
command = ["/bin/sh", "-c", "setsid sh -c 'read v < {run}/go; echo $$v > {run}/a.pid; exec sleep 1000' & echo $$$$ > {run}/launcher; exit 0"]
pidfile = "{run}/a.pid"
ready_timeout = "60s"
"#,
        run = run.display()
    );
    let mut init = builder.file("a.toml", &conf).start();
    init.wait_for_line("attacker: launcher pid");
    let launcher: i32 = wait_for_text(&run.join("launcher")).trim().parse().unwrap();
    // Until the victim's new run has the launcher's number.
    let mut tries = 0;
    while init.pid_of("victim") != Some(launcher as i64) {
        tries += 1;
        assert!(tries < 40, "the victim never got pid {launcher}");
        next_pid_in(&init, launcher);
        let (code, out) = init.ctl(&["restart", "victim"]);
        assert_eq!(code, 0, "{out}");
    }
    let victim_host = host_pid(&init, launcher).unwrap();
    std::fs::write(run.join("go"), format!("{launcher}\n")).unwrap();
    init.wait_for_line(&format!(
        "names pid {launcher} (sleep), a process of program victim, not of this run: refused"
    ));
    assert_eq!(init.count_lines("adopted daemon"), 0, "{}", init.output());
    // The victim was not touched, and is still the victim's.
    assert!(alive(victim_host) && proc_state(victim_host) != Some('Z'));
    assert_eq!(init.pid_of("victim"), Some(launcher as i64));
    // The container stops within its budget (4 s, and SIGKILL's grace).
    let began = std::time::Instant::now();
    init.signal("TERM");
    init.wait_exit(DEADLINE);
    assert!(
        began.elapsed() < std::time::Duration::from_secs(12),
        "{}",
        init.output()
    );
}

#[test]
fn an_sd_notify_flood_from_a_deep_tree_does_not_stall_the_loop() {
    let speakers: String = (0..20)
        .map(|i| SPEAKER.replace("[program.speaker]", &format!("[program.speaker{i}]")))
        .collect();
    let init = init()
        .file("a.toml", &format!("{speakers}{FLAPPER}"))
        .start();
    open_to_all(&init);
    for i in 0..20 {
        // Twenty pythons starting at once on a loaded machine: a generous wait.
        init.wait_for_line_within(
            &format!("speaker{i}: starting -> running"),
            std::time::Duration::from_secs(90),
        );
    }
    std::fs::write(init.dir().join("flood.py"), FLOODER).unwrap();
    let script = format!("{}/chain.sh", init.dir().display());
    std::fs::write(
        &script,
        nested_chain(
            60,
            &format!(
                "exec /usr/bin/python3 {}/flood.py {}/ctrlinit-notify.sock 8",
                init.dir().display(),
                init.dir().display()
            ),
        ),
    )
    .unwrap();
    // The same machine, the same load, no flood: what the loop does in this run's conditions.
    let baseline = loop_while(&init, || false, std::time::Duration::from_secs(4));
    // The flooder runs inside the container (ctrlinit's PID namespace), as `nobody`: a sender
    // outside it has no pid there, and its datagrams are dropped before any ancestry is read.
    let mut flood = Command::new("nsenter")
        .args(["-t", &init.pid.to_string(), "-p", "-m", "--"])
        .args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/bin/sh",
            &script,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = flood.stdout.take().unwrap();
    let mut first = [0u8; 9];
    std::io::Read::read_exact(&mut out, &mut first).unwrap();
    assert_eq!(&first, b"flooding\n");
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        rest
    });
    // During the flood: every status answers, and the flapper keeps restarting.
    let during = loop_while(&init, || !reader.is_finished(), std::time::Duration::ZERO);
    let rest = reader.join().unwrap();
    eprintln!("flood: baseline {baseline:?}; during {during:?}; {rest}");
    assert!(flood.wait().unwrap().success(), "{rest}");
    assert!(
        during.samples >= 3,
        "{} status answers in the flood's 8 s",
        during.samples
    );
    // Relative to this run's baseline (a loaded machine slows both), with room for the
    // flood's own cost: the code before the budget answered in seconds and restarted a
    // fraction as often.
    let allowed = (baseline.slowest * 10).max(std::time::Duration::from_secs(1));
    assert!(
        during.slowest < allowed,
        "status took {:?} in the flood, {:?} before it",
        during.slowest,
        baseline.slowest
    );
    assert!(
        during.restarts_per_sec() * 3.0 >= baseline.restarts_per_sec(),
        "the flapper restarted {:.1}/s in the flood, {:.1}/s before it",
        during.restarts_per_sec(),
        baseline.restarts_per_sec()
    );
    init.wait_for_line("notify socket: uid 65534 sends more than 200 datagrams a second");
}

/// What the loop did over a stretch: `status` answers, the slowest, the flapper's restarts.
#[derive(Debug)]
struct Stretch {
    samples: u32,
    slowest: std::time::Duration,
    restarts: u64,
    took: std::time::Duration,
}

impl Stretch {
    fn restarts_per_sec(&self) -> f64 {
        self.restarts as f64 / self.took.as_secs_f64()
    }
}

/// Asks `status` one after the other while `go()` holds, or for `least` (the baseline), at
/// most 60 s; counts the flapper's restarts over the stretch.
fn loop_while(init: &Init, go: impl Fn() -> bool, least: std::time::Duration) -> Stretch {
    let began = std::time::Instant::now();
    let restarts = init.program_json("flapper")["restarts"].as_u64().unwrap();
    let (mut slowest, mut samples) = (std::time::Duration::ZERO, 0);
    let most = std::time::Duration::from_secs(60);
    while (go() || began.elapsed() < least) && began.elapsed() < most {
        let asked = std::time::Instant::now();
        let (code, text) = init.ctl(&["status"]);
        assert!(code != 4 && text.contains("speaker4"), "{code}: {text}");
        slowest = slowest.max(asked.elapsed());
        samples += 1;
    }
    let took = began.elapsed();
    let restarts = init.program_json("flapper")["restarts"].as_u64().unwrap() - restarts;
    Stretch {
        samples,
        slowest,
        restarts,
        took,
    }
}

/// A shell script that runs `last` at the bottom of a chain of `depth` shells, each waiting for
/// the next (none is replaced by its child).
fn nested_chain(depth: usize, last: &str) -> String {
    let mut s = String::from("#!/bin/sh\n");
    s.push_str("d=${1:-0}\n");
    s.push_str(&format!(
        "if [ \"$d\" -lt {depth} ]; then /bin/sh \"$0\" $((d+1)); exit $?; fi\n{last}\n"
    ));
    s
}

/// Sends `STATUS=flood` as fast as the socket takes it for a number of seconds.
const FLOODER: &str = r#"
import socket, sys, time
path, secs = sys.argv[1], float(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setblocking(False)
print("flooding", flush=True)
end, sent = time.time() + secs, 0
while time.time() < end:
    try:
        s.sendto(b"STATUS=flood", path)
        sent += 1
    except (BlockingIOError, OSError):
        pass
print("sent", sent, flush=True)
"#;

//! ctrlinit as tini: a `--` command gets ctrlinit's terminal and standard streams, byte for
//! byte; with a terminal it is the foreground process group (Ctrl-C, Ctrl-Z and `fg`, window
//! size changes work inside an interactive shell); signals reach it as they came and its status
//! is the container's. Driven through a real pseudo-terminal, with ctrlinit PID 1 of a fresh
//! PID namespace.

mod common;
#[path = "common/pty.rs"]
mod pty;

use std::io::Write;
use std::process::{Command, Stdio};

use common::*;
use pty::Pty;

const SHELL: &str = "/usr/bin/bash";

/// `unshare`, started with every signal at its default disposition. ctrlinit hands the
/// dispositions it was started with on to its `--` command, as tini does, so these tests, which
/// send SIGINT and SIGQUIT and expect their default effect, must not inherit a background
/// shell's ignored SIGINT and SIGQUIT (`setsid cmd &`, `nohup`, a CI runner).
fn with_default_signals() -> Command {
    let mut cmd = Command::new("env");
    cmd.args(["--default-signal", "unshare"]);
    cmd
}

/// `unshare … ctrlinit --socket S -- ARGS` on a pty.
fn on_a_terminal(dir: &std::path::Path, args: &[&str]) -> Pty {
    let mut cmd = with_default_signals();
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child", bin()])
        .arg("--socket")
        .arg(dir.join("ctrlinit.sock"))
        .env("CTRLINIT_LOG_DIR", dir.join("log"))
        .env("CTRLINIT_CRASH_DIR", dir.join("crash"))
        .env("TERM", "dumb")
        .env("PS1", "$ ")
        .arg("--")
        .args(args);
    Pty::spawn(cmd)
}

/// `unshare … ctrlinit -- ARGS` with piped standard streams.
fn piped(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = with_default_signals();
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child", bin()])
        .arg("--socket")
        .arg(dir.join("ctrlinit.sock"))
        .env("CTRLINIT_LOG_DIR", dir.join("log"))
        .env("CTRLINIT_CRASH_DIR", dir.join("crash"))
        .arg("--")
        .args(args);
    cmd
}

/// Waits until the `sleep ARG` process is in a state `ok` accepts (S sleeping, T stopped).
fn wait_state(arg: &str, ok: impl Fn(char) -> bool) {
    let cmdline = format!("sleep\0{arg}\0");
    wait_until(
        &format!("sleep {arg} in the wanted state"),
        DEADLINE,
        || {
            let pid = std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
                let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                let c = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                (c == cmdline.as_bytes()).then_some(pid)
            })?;
            proc_state(pid).filter(|&s| ok(s))
        },
    );
}

#[test]
fn an_interactive_shell_reads_lines_gets_ctrl_c_and_job_control_and_exits_with_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = on_a_terminal(dir.path(), &[SHELL, "--norc", "--noprofile", "-i"]);
    let at = t.expect_from(0, "$ ", DEADLINE);
    // It is on a terminal, and reads what is typed.
    t.send("tty; read -r x; echo got:$x\n");
    let at = t.expect_from(at, "/dev/pts/", DEADLINE);
    t.send("hello\n");
    let at = t.expect_from(at, "got:hello", DEADLINE);
    // Ctrl-C reaches the foreground sleep through the terminal driver; the shell goes on.
    // (bash abandons a whole command line whose job Ctrl-C killed: ask for $? apart.)
    t.send("sleep 97.25\n");
    wait_state("97.25", |s| s == 'S');
    t.send("\x03");
    t.send("echo after=$?\n");
    let at = t.expect_from(at, "after=130", DEADLINE);
    // Ctrl-Z stops it, fg resumes it (job control), Ctrl-C then ends it.
    t.send("sleep 98.25\n");
    wait_state("98.25", |s| s == 'S');
    t.send("\x1a");
    let at = t.expect_from(at, "Stopped", DEADLINE);
    wait_state("98.25", |s| s == 'T');
    t.send("fg\n");
    let at = t.expect_from(at, "sleep 98.25", DEADLINE);
    wait_state("98.25", |s| s != 'T');
    t.send("\x03");
    t.send("echo back:$?\n");
    let at = t.expect_from(at, "back:130", DEADLINE);
    // A window size change reaches the foreground (the kernel signals it).
    t.resize(40, 132);
    t.send("stty size\n");
    let at = t.expect_from(at, "40 132", DEADLINE);
    // Its own lines are unprefixed: nothing says `main |`.
    assert!(!t.seen()[..at].contains("main |"), "{}", t.seen());
    t.send("exit 7\n");
    assert_eq!(t.wait_exit(DEADLINE), 7, "{}", t.seen());
}

#[test]
fn a_window_size_change_is_forwarded_without_a_terminal_foreground() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        "trap 'echo winch >> \"$0\"' WINCH; echo ready >> \"$0\"; while :; do sleep 0.05; done";
    let marks = dir.path().join("marks");
    let mut child = piped(
        dir.path(),
        &["/bin/sh", "-c", script, marks.to_str().unwrap()],
    )
    .stdin(Stdio::null())
    .spawn()
    .unwrap();
    wait_for_lines_in(&marks, 1);
    let ctrlinit = wait_until("ctrlinit in its namespace", DEADLINE, || {
        children_of(child.id() as i32).first().copied()
    });
    assert!(send_signal(ctrlinit, libc::SIGWINCH));
    assert_eq!(wait_for_lines_in(&marks, 2)[1], "winch");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn piped_stdin_and_stdout_pass_straight_through() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = piped(dir.path(), &["cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hi\n\x00binary\xff\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.stdout, b"hi\n\x00binary\xff\n",
        "byte for byte, no prefix"
    );
    assert_eq!(out.status.code(), Some(0));
}

/// Starts `script` (run by sh, with `$0` the marks file) as the `--` command; returns the
/// harness child, ctrlinit's host pid and the marks path, once the script wrote `ready`.
fn signal_target(
    dir: &std::path::Path,
    script: &str,
) -> (std::process::Child, i32, std::path::PathBuf) {
    signal_target_with(dir, script, &[])
}

/// [`signal_target`], with `env` added to ctrlinit's environment.
fn signal_target_with(
    dir: &std::path::Path,
    script: &str,
    env: &[(&str, &std::path::Path)],
) -> (std::process::Child, i32, std::path::PathBuf) {
    let marks = dir.join("marks");
    let child = piped(dir, &["/bin/sh", "-c", script, marks.to_str().unwrap()])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_lines_in(&marks, 1);
    let ctrlinit = wait_until("ctrlinit in its namespace", DEADLINE, || {
        children_of(child.id() as i32).first().copied()
    });
    (child, ctrlinit, marks)
}

fn exit_of(mut child: std::process::Child) -> i32 {
    let status = wait_until("the container's exit", DEADLINE, || {
        child.try_wait().unwrap()
    });
    status.code().unwrap_or(-1)
}

#[test]
fn a_stop_signal_reaches_the_command_as_itself_and_its_status_is_the_containers() {
    // Killed by the forwarded TERM: 143. No SIGCONT came with it.
    let dir = tempfile::tempdir().unwrap();
    let script = "trap 'echo cont >> \"$0\"' CONT; echo ready >> \"$0\"; while :; do sleep 0.05; done & wait";
    let (child, ctrlinit, marks) = signal_target(dir.path(), script);
    assert!(send_signal(ctrlinit, libc::SIGTERM));
    assert_eq!(exit_of(child), 143);
    assert_eq!(
        file_lines(&marks),
        ["ready"],
        "no SIGCONT followed the TERM"
    );

    // Traps TERM and exits 3: 3. INT and QUIT the same way.
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGINT, "INT"),
        (libc::SIGQUIT, "QUIT"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "trap 'echo {name} >> \"$0\"; exit 3' {name}; echo ready >> \"$0\"; while :; do sleep 0.05; done"
        );
        let (child, ctrlinit, marks) = signal_target(dir.path(), &script);
        assert!(send_signal(ctrlinit, sig));
        assert_eq!(exit_of(child), 3, "{name}");
        assert_eq!(file_lines(&marks), ["ready", name]);
    }
}

#[test]
fn every_other_signal_is_forwarded_not_swallowed() {
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "HUP", "USR1", "USR2", "ALRM", "URG", "CONT", "XCPU", "XFSZ", "VTALRM", "PROF", "IO",
        "PWR", "PIPE",
    ];
    let mut script = String::new();
    for n in names {
        script.push_str(&format!("trap 'echo {n} >> \"$0\"' {n}; "));
    }
    // A real-time signal too (bash knows them by number).
    script.push_str(
        "trap 'echo RTMIN+3 >> \"$0\"' 37; echo ready >> \"$0\"; while :; do sleep 0.05; done",
    );
    let marks = dir.path().join("marks");
    let child = piped(dir.path(), &[SHELL, "-c", &script, marks.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_lines_in(&marks, 1);
    let ctrlinit = wait_until("ctrlinit", DEADLINE, || {
        children_of(child.id() as i32).first().copied()
    });
    let numbers = [
        libc::SIGHUP,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGURG,
        libc::SIGCONT,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGPIPE,
    ];
    for (i, sig) in numbers.iter().enumerate() {
        assert!(send_signal(ctrlinit, *sig));
        // One at a time: a shell runs one trap per signal that arrived.
        wait_for_lines_in(&marks, i + 2);
    }
    assert!(send_signal(ctrlinit, 37));
    let lines = wait_for_lines_in(&marks, names.len() + 2);
    let mut want = vec!["ready".to_string()];
    want.extend(names.iter().map(|n| n.to_string()));
    want.push("RTMIN+3".into());
    assert_eq!(lines, want);
    // ctrlinit itself is still there (none of these stopped or killed it).
    assert!(alive(ctrlinit));
    let mut child = child;
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_command_starts_with_the_signal_mask_and_ignored_signals_ctrlinit_was_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("status");
    // Started with USR1 ignored and USR2 blocked (as a parent may leave them), ctrlinit passes
    // that on to its `--` command, as tini does.
    // The command is grep itself: a shell would reset the mask for what it runs.
    let launcher = format!(
        "import os, signal, sys\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\nsignal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGUSR2}})\nfd = os.open({out:?}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\nos.dup2(fd, 1)\nos.execvp('unshare', ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child', {bin:?}, '--socket', {sock:?}, '--', 'grep', '-E', '^Sig(Blk|Ign)', '/proc/self/status'])\n",
        bin = bin(),
        sock = dir.path().join("s.sock").to_str().unwrap(),
        out = out_file.to_str().unwrap(),
    );
    let status = Command::new("/usr/bin/python3")
        .args(["-c", &launcher])
        .env("CTRLINIT_LOG_DIR", dir.path().join("log"))
        .env("CTRLINIT_CRASH_DIR", dir.path().join("crash"))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(&out_file).unwrap();
    let mask = |field: &str| {
        let hex = text
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .unwrap()
            .trim();
        u64::from_str_radix(hex, 16).unwrap()
    };
    let bit = |sig: i32| 1u64 << (sig - 1);
    assert_ne!(
        mask("SigIgn:") & bit(libc::SIGUSR1),
        0,
        "USR1 still ignored: {text}"
    );
    assert_ne!(
        mask("SigBlk:") & bit(libc::SIGUSR2),
        0,
        "USR2 still blocked: {text}"
    );
    assert_eq!(
        mask("SigBlk:") & bit(libc::SIGTERM),
        0,
        "nothing of ctrlinit's own mask: {text}"
    );
}

#[test]
fn a_command_that_cannot_be_executed_says_so_on_stderr_every_time() {
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let out = piped(dir.path(), &["/does/not/exist"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(127));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("cannot execute \"/does/not/exist\""),
            "stderr: {err}\nstdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(out.stdout.is_empty(), "nothing of ctrlinit's own on stdout");
    }
}

#[test]
fn tstp_suspends_the_commands_group_and_cont_resumes_it_while_ctrlinit_runs_on() {
    // Job control without a terminal (`docker kill -s TSTP`, and TTIN, TTOU): the command's
    // whole group stops, ctrlinit does not, and CONT brings the group back.
    let dir = tempfile::tempdir().unwrap();
    let script = "echo ready >> \"$0\"; while :; do sleep 0.05; done";
    let (child, ctrlinit, _marks) = signal_target(dir.path(), script);
    // The shell among ctrlinit's children: its first child can be a short-lived one of its own
    // (its cgroup probe).
    let command = wait_until("the command", DEADLINE, || {
        children_of(ctrlinit).into_iter().find(|&c| {
            std::fs::read_to_string(format!("/proc/{c}/comm")).is_ok_and(|n| n.trim() == "sh")
        })
    });
    for (sig, stopped) in [
        (libc::SIGTSTP, true),
        (libc::SIGCONT, false),
        (libc::SIGTTIN, true),
        (libc::SIGCONT, false),
        (libc::SIGTTOU, true),
    ] {
        assert!(send_signal(ctrlinit, sig));
        wait_until(
            &format!("the command stopped = {stopped} after signal {sig}"),
            DEADLINE,
            || (proc_state(command).is_some_and(|s| (s == 'T') == stopped)).then_some(()),
        );
        assert_ne!(
            proc_state(ctrlinit),
            Some('T'),
            "ctrlinit itself is never stopped"
        );
    }
    assert!(send_signal(ctrlinit, libc::SIGCONT));
    assert!(send_signal(ctrlinit, libc::SIGTERM));
    assert_eq!(exit_of(child), 143);
}

#[test]
fn console_off_silences_ctrlinits_own_lines_but_not_the_command() {
    // With a config that sets console = "off" and a log level that would say things, only the
    // command's own output reaches the streams.
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf.d");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("a.toml"),
        "[init]\nconsole = \"off\"\nlog_level = \"debug\"\n",
    )
    .unwrap();
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--kill-child", bin()])
        .arg("--socket")
        .arg(dir.path().join("ctrlinit.sock"))
        .arg("--config-dir")
        .arg(&conf)
        .env("CTRLINIT_LOG_DIR", dir.path().join("log"))
        .env("CTRLINIT_CRASH_DIR", dir.path().join("crash"))
        .args(["--", "/bin/sh", "-c", "echo out; echo err >&2"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    // ctrlinit.log still has its lines.
    let log = std::fs::read_to_string(dir.path().join("log/ctrlinit.log")).unwrap();
    assert!(log.contains("main: starting -> running"), "{log}");
}

#[test]
fn a_command_that_ignores_term_is_killed_with_its_group_only_once_the_stop_budget_is_spent() {
    // tini's way: TERM is forwarded, and SIGKILL waits for `[init] stop_timeout`.
    const BUDGET: std::time::Duration = std::time::Duration::from_secs(3);
    const MARGIN: std::time::Duration = std::time::Duration::from_secs(1);
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf.d");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("a.toml"), "[init]\nstop_timeout = \"3s\"\n").unwrap();
    // The shell and its background sleep (same group) both ignore TERM (inherited SIG_IGN).
    let script = "trap '' TERM; sleep 1000 & echo started >> \"$0\"; wait";
    let (mut child, ctrlinit, _marks) =
        signal_target_with(dir.path(), script, &[("CTRLINIT_CONFIG_DIR", &conf)]);
    // The shell is the child of ctrlinit that has a child of its own (its sleep): ctrlinit's
    // first child can be a short-lived one of its own (its cgroup probe).
    let (shell, sleep) = wait_until("the command and its sleep", DEADLINE, || {
        children_of(ctrlinit)
            .into_iter()
            .find_map(|c| children_of(c).first().map(|&s| (c, s)))
    });
    let sent = std::time::Instant::now();
    assert!(send_signal(ctrlinit, libc::SIGTERM));
    // Both live on through the budget: the last time each was seen alive, after the TERM.
    let live = |pid: i32| proc_state(pid).is_some_and(|s| s != 'Z');
    let mut last_seen = [sent; 2];
    wait_until("the command and its sleep killed", DEADLINE, || {
        for (i, pid) in [shell, sleep].into_iter().enumerate() {
            if live(pid) {
                last_seen[i] = std::time::Instant::now();
            }
        }
        (!live(shell) && !live(sleep)).then_some(())
    });
    for (what, seen) in ["the command", "its sleep"].iter().zip(last_seen) {
        let lived = seen - sent;
        assert!(
            lived >= BUDGET - MARGIN,
            "{what} was killed {lived:?} after the TERM, before the {BUDGET:?} budget"
        );
    }
    let status = wait_until("the container's exit", DEADLINE, || {
        child.try_wait().unwrap()
    });
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(137), "killed by SIGKILL: {stderr}");
}

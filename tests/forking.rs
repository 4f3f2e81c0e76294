//! Legacy daemons that fork into the background (`type = "forking"` with a `pidfile`): once the
//! launcher exits 0, the pid its pid file names becomes the program's main process, if that
//! process belongs to the run. Restart, stop, crash reports and logs then work as for any
//! program. Tested with a small launcher and with Debian's redis-server (`--daemonize yes`).

mod common;

use std::net::TcpListener;
use std::process::Command;

use common::*;

/// A launcher that forks a daemon into a session of its own; the daemon writes its pid file
/// and says hello on its (inherited) stdout; the launcher exits 0 once the file is there.
const FORKER: &str = r#"
[program.legacy]
type = "forking"
command = ["/bin/sh", "-c", "setsid sh -c 'echo $$$$ > {dir}/legacy.pid; echo daemon $$$$ up; exec sleep 1000' & while [ ! -s {dir}/legacy.pid ]; do sleep 0.01; done; exit 0"]
pidfile = "{dir}/legacy.pid"
ready_timeout = "10s"
backoff = { initial = "0s" }
"#;

/// The daemon's pid in ctrlinit's namespace, as its pid file says once it differs from `old`.
fn pid_in_file(init: &Init, old: Option<i32>) -> i32 {
    let path = init.dir().join("legacy.pid");
    wait_until("the daemon's pid file", DEADLINE, || {
        let pid: i32 = std::fs::read_to_string(&path).ok()?.trim().parse().ok()?;
        (Some(pid) != old).then_some(pid)
    })
}

#[test]
fn a_forking_daemon_is_adopted_restarted_reported_and_stopped() {
    let init = init().file("a.toml", FORKER).start();
    let daemon = pid_in_file(&init, None);
    init.wait_states(&["legacy=running"]);
    assert_eq!(
        init.pid_of("legacy"),
        Some(daemon as i64),
        "the daemon is the main process"
    );
    init.wait_for_line(&format!("adopted daemon pid {daemon}"));
    // Its output reaches the log, as any program's does.
    init.wait_for_line(&format!("daemon {daemon} up"));

    // It dies of a signal nobody in ctrlinit sent: a crash report, and a new launcher run.
    assert!(send_signal(host_pid(&init, daemon).unwrap(), libc::SIGKILL));
    let report = wait_until("a crash report of legacy", DEADLINE, || {
        std::fs::read_dir(init.dir().join("crash/legacy"))
            .ok()?
            .flatten()
            .find(|e| e.path().extension().is_some_and(|x| x == "json"))
            .map(|e| e.path())
    });
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains(&format!("\"pid\": {daemon}")) || text.contains(&format!("\"pid\":{daemon}")),
        "{text}"
    );
    let second = pid_in_file(&init, Some(daemon));
    wait_until("the second daemon adopted", DEADLINE, || {
        (init.pid_of("legacy") == Some(second as i64)).then_some(())
    });

    // A stop stops the daemon (it is in no group ctrlinit started: its own session).
    let host = host_pid(&init, second).unwrap();
    let (code, out) = init.ctl(&["stop", "legacy"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["legacy=stopped"]);
    wait_until("the daemon to be gone", DEADLINE, || {
        (!alive(host) || proc_state(host) == Some('Z')).then_some(())
    });
}

#[test]
fn a_pid_file_naming_a_stranger_a_failing_launcher_or_no_pid_file_fails_the_run() {
    // Each case: one run allowed (max_restarts = 0) and on_exhausted = "stop", so the failure
    // shows as the program's end, with the reason in the log.
    let cases = [
        (
            // pid 1 is ctrlinit itself: not a process its launcher started.
            "stranger",
            r#"command = ["/bin/sh", "-c", "echo 1 > {dir}/p.pid; exit 0"]"#,
            "names pid 1 (ctrlinit), which its launcher did not start: refused",
        ),
        (
            "gone",
            r#"command = ["/bin/sh", "-c", "sh -c 'echo $$$$ > {dir}/p.pid'; exit 0"]"#,
            "which is not running",
        ),
        (
            "failing",
            r#"command = ["/bin/sh", "-c", "exit 3"]"#,
            "exit status 3",
        ),
        (
            "silent",
            r#"command = ["/bin/sh", "-c", "exit 0"]"#,
            "no pid file",
        ),
    ];
    for (name, command, said) in cases {
        let conf = format!(
            r#"
[program.p]
type = "forking"
{command}
pidfile = "{{dir}}/p.pid"
ready_timeout = "1s"
max_restarts = 0
on_exhausted = "stop"
"#
        );
        let init = init().file("a.toml", &conf).start();
        init.wait_for_line(said);
        init.wait_states(&["p=stopped"]);
        assert_eq!(init.count_lines("adopted daemon"), 0, "{name}");
        if said.ends_with("refused") {
            // The refusal is how the run ended: no readiness timeout is claimed after it.
            assert_eq!(init.count_lines("not ready within"), 0, "{name}");
            init.wait_for_line("its pid file was refused");
        }
    }
}

#[test]
fn a_pid_file_left_by_an_earlier_run_is_not_adopted() {
    // The file is there before the start (as after a crash: nobody removed it), naming pid 1.
    // The launcher writes nothing: the old file must not be read at all (were it read, the run
    // would be refused for naming a stranger); the run fails for want of a fresh pid file.
    let b = init().file(
        "a.toml",
        r#"
[program.p]
type = "forking"
command = ["/bin/sh", "-c", "exit 0"]
pidfile = "{dir}/p.pid"
ready_timeout = "1s"
max_restarts = 0
on_exhausted = "stop"
"#,
    );
    std::fs::write(b.dir().join("p.pid"), "1\n").unwrap();
    let init = b.start();
    init.wait_for_line("no pid file");
    init.wait_states(&["p=stopped"]);
    assert_eq!(init.count_lines("names pid"), 0, "{}", init.output());
}

#[test]
fn forking_needs_a_pidfile_and_a_pidfile_needs_forking() {
    let (_dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.a]
type = "forking"
command = ["/bin/true"]

[program.b]
command = ["/bin/true"]
pidfile = "/run/b.pid"
"#,
    )]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("a forking program needs a pidfile"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("a pidfile is only read for type = \"forking\""),
        "{}",
        ran.stderr
    );
}

#[test]
fn redis_server_daemonized_is_adopted_and_supervised() {
    assert!(
        std::path::Path::new("/usr/bin/redis-server").exists(),
        "this test needs Debian's redis-server (.ci/run installs it)"
    );
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let conf = format!(
        r#"
[program.redis]
type = "forking"
command = ["/usr/bin/redis-server", "--daemonize", "yes", "--pidfile", "{{dir}}/redis.pid", "--port", "{port}", "--bind", "127.0.0.1", "--dir", "{{dir}}", "--save", "", "--appendonly", "no", "--logfile", ""]
pidfile = "{{dir}}/redis.pid"
ready = {{ tcp = "127.0.0.1:{port}" }}
ready_timeout = "20s"
backoff = {{ initial = "0s" }}
"#
    );
    let init = init().file("a.toml", &conf).start();
    init.wait_states(&["redis=running"]);
    let pid = init.pid_of("redis").unwrap() as i32;
    let pong = |port: u16| {
        Command::new("redis-cli")
            .args(["-p", &port.to_string(), "ping"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    assert_eq!(pong(port), "PONG");
    let host = host_pid(&init, pid).unwrap();
    let comm = std::fs::read_to_string(format!("/proc/{host}/comm")).unwrap();
    assert!(
        comm.starts_with("redis-server"),
        "the adopted pid is redis: {comm}"
    );

    // Killed: a crash report, and a new redis (a new launcher run) answering again.
    assert!(send_signal(host, libc::SIGKILL));
    wait_until("a crash report of redis", DEADLINE, || {
        std::fs::read_dir(init.dir().join("crash/redis"))
            .ok()?
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "json"))
            .then_some(())
    });
    wait_until("a new redis adopted and ready", DEADLINE, || {
        init.pid_of("redis")
            .filter(|&p| p as i32 != pid)
            .filter(|_| init.program_json("redis")["state"] == "running")
    });
    assert_eq!(pong(port), "PONG");

    // Stopped: redis gets its stop signal and is gone; nothing is left in the namespace.
    let (code, out) = init.ctl(&["stop", "redis"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["redis=stopped"]);
    wait_until("redis gone", DEADLINE, || {
        init.namespace_pids().is_empty().then_some(())
    });
}

/// The launcher leaves two processes: the daemon, in a session of its own, and a helper in the
/// launcher's own process group. Both write down the signals they get into `got`.
const TWO_LEFT: &str = r#"
[program.legacy]
type = "forking"
command = ["/bin/sh", "-c", "sh -c 'trap \"echo helper USR1 >> {dir}/got\" USR1; trap \"echo helper USR2 >> {dir}/got\" USR2; echo $$$$ > {dir}/helper.pid; while :; do sleep 0.05; done' & setsid sh -c 'trap \"echo daemon $$$$ USR1 >> {dir}/got\" USR1; echo $$$$ > {dir}/legacy.pid; while :; do sleep 0.05; done' & while [ ! -s {dir}/legacy.pid ] || [ ! -s {dir}/helper.pid ]; do sleep 0.01; done; exit 0"]
pidfile = "{dir}/legacy.pid"
ready_timeout = "10s"
"#;

#[test]
fn signal_reaches_the_adopted_daemon_not_its_launchers_group() {
    let init = init().file("a.toml", TWO_LEFT).start();
    let daemon = pid_in_file(&init, None);
    init.wait_states(&["legacy=running"]);
    assert_eq!(init.pid_of("legacy"), Some(daemon as i64));
    let helper = init.wait_for_pid_file("helper.pid");
    let (code, out) = init.ctl(&["signal", "USR1", "legacy"]);
    assert_eq!(code, 0, "{out}");
    let got = init.dir().join("got");
    let daemon_line = format!("daemon {daemon} USR1");
    assert_eq!(
        wait_for_lines_in(&got, 1),
        std::slice::from_ref(&daemon_line)
    );
    // Then USR2 straight to the helper. Had the USR1 gone to the launcher's group too, it came
    // first, and the helper's shell (dash runs pending traps lowest signal first) says so first.
    assert!(send_signal(helper, libc::SIGUSR2));
    assert_eq!(
        wait_for_lines_in(&got, 2),
        [daemon_line, "helper USR2".to_string()],
        "USR1 reached the daemon only"
    );
}

#[test]
fn a_launcher_that_does_not_exit_within_ready_timeout_fails_the_run() {
    const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
    let init = init()
        .file(
            "a.toml",
            r#"
[program.p]
type = "forking"
command = ["/bin/sh", "-c", "echo $$$$ > {dir}/launcher.pid; exec sleep 1000"]
pidfile = "{dir}/p.pid"
ready_timeout = "2s"
max_restarts = 0
on_exhausted = "stop"
"#,
        )
        .start();
    let launcher = init.wait_for_pid_file("launcher.pid");
    // It is stopped, but not before its ready_timeout (less a second for scheduling): the last
    // time it was seen alive, counted from when it was first seen.
    let seen = std::time::Instant::now();
    let mut last_alive = seen;
    wait_until("the launcher stopped", DEADLINE, || {
        if proc_state(launcher).is_some_and(|s| s != 'Z') {
            last_alive = std::time::Instant::now();
            return None;
        }
        Some(())
    });
    let lived = last_alive - seen;
    assert!(
        lived >= READY_TIMEOUT - std::time::Duration::from_secs(1),
        "stopped {lived:?} after it was seen, before its ready_timeout"
    );
    init.wait_for_line("p: starting -> stopping: not ready within 2s");
    init.wait_states(&["p=stopped"]);
    assert_eq!(init.count_lines("exited 0; reading the daemon's pid"), 0);
    assert_eq!(init.count_lines("adopted daemon"), 0);
    assert_eq!(init.program_json("p")["last_exit"]["signal"], "SIGTERM");
}

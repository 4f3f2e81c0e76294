//! Idle memory: once quiet, ctrlinit unmaps the code its last burst used and keeps working.

mod common;

use std::time::Duration;

use common::*;

/// Resident KiB of ctrlinit's own read-only file mappings (its code and constants).
fn resident_code_kib(pid: i32) -> u64 {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let exe = exe.to_string_lossy().to_string();
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let mut ours = false;
    let mut total = 0;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() >= 5 && fields[0].contains('-') && fields[1].len() == 4 {
            ours = fields.get(5) == Some(&exe.as_str()) && !fields[1].contains('w');
        } else if ours && fields.first() == Some(&"Rss:") {
            total += fields[1].parse::<u64>().unwrap();
        }
    }
    total
}

/// `ctrlinit | idle: unmapped 1234 KiB of code …` → 1234.
fn unmapped_kib(line: &str) -> u64 {
    let after = line.split("unmapped ").nth(1).unwrap();
    after.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn quiet_init_unmaps_its_code_and_still_restarts_and_answers() {
    let init = init()
        .env("CTRLINIT_LOG", "debug")
        .file(
            "a.toml",
            r#"
[program.one]
command = ["/bin/sh", "-c", "echo $$$$ > {dir}/one.pid; exec sleep 1000"]
backoff = { initial = "0s", max = "0s" }

# Holds the init busy (a readiness deadline pending, so no release) until the test has sampled.
[program.two]
command = ["sleep", "1000"]
ready = { file = "{dir}/two.ready" }
"#,
        )
        .start();
    init.wait_for_line("one: starting -> running");
    let own_before = resident_code_kib(init.pid);
    assert!(
        !init.output().contains("idle: unmapped"),
        "released while a readiness check was pending"
    );
    std::fs::write(init.dir().join("two.ready"), "").unwrap();
    let first = init.wait_for_line("idle: unmapped");
    let unmapped = unmapped_kib(&first);
    assert!(
        unmapped >= 64,
        "start-up left only {unmapped} KiB of code mapped: {first}"
    );
    // The line is said just before the pages go; formatting it faults some code back, far
    // from all of it.
    let own_after = wait_until("the code to be released", DEADLINE, || {
        let now = resident_code_kib(init.pid);
        (now < own_before).then_some(now)
    });
    eprintln!(
        "ctrlinit's resident code: {own_before} KiB while starting, {own_after} KiB after the release"
    );

    // Cold pages come back by fault: a crash is restarted and requests are answered.
    let pid_file = init.dir().join("one.pid");
    let ns_pid: i32 = wait_until("one's pid file", DEADLINE, || {
        std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
    });
    let pid = host_pid(&init, ns_pid).expect("one's pid");
    assert!(send_signal(pid, libc::SIGKILL));
    init.wait_for_nth_line("one: starting -> running", 2, DEADLINE);
    let (code, out) = init.ctl(&["status", "--wait", "one=running", "two=running"]);
    assert_eq!(code, 0, "{out}");

    // After that work, a longer quiet hands its pages back again.
    let again = init.wait_for_nth_line("idle: unmapped", 2, DEADLINE + Duration::from_secs(5));
    assert!(unmapped_kib(&again) > 0, "{again}");
}

#[test]
fn routine_checks_have_their_pages_handed_back_after_each_one() {
    // A liveness check every 300 ms that always passes (a tcp connect to this test's
    // listener: no process, so no SIGCHLD, which is work): routine, and nothing else happens.
    // Checks hand their pages back at most once a second (idle::CHECK_RELEASE_GAP; checks
    // further apart, as soon as the loop parks after each); with a quiet of its own to wait
    // for, checks this frequent would leave one release, at start-up.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let init = init()
        .env("CTRLINIT_LOG", "debug")
        .file(
            "a.toml",
            &format!(
                r#"
[program.idle]
command = ["sleep", "1000"]

[program.idle.health]
check = {{ tcp = "127.0.0.1:{port}" }}
interval = "300ms"
timeout = "5s"
"#
            ),
        )
        .start();
    init.wait_for_line("idle: unmapped");
    // Several more, each after a check: the count grows while only checks run.
    let fifth = init.wait_for_nth_line("idle: unmapped", 5, DEADLINE);
    assert!(unmapped_kib(&fifth) > 0, "{fifth}");
    drop(listener);
}

//! Stopping the container: SIGTERM with a program that ignores it, the overall stop budget, a
//! second SIGTERM, the `--` main program's status and signal forwarding.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// `stubborn` ignores SIGTERM (so do its `sleep` children); `good` exits on it.
fn stubborn_and_good(init_stop: &str, stubborn_stop: &str) -> String {
    format!(
        r#"
[init]
stop_timeout = "{init_stop}"

[program.stubborn]
command = ["/bin/sh", "-c", "trap '' TERM; touch {{dir}}/stubborn.up; while :; do sleep 0.1; done"]
stop_timeout = "{stubborn_stop}"

[program.good]
command = ["/bin/sh", "-c", "trap 'echo stopped >> {{dir}}/good; exit 0' TERM; touch {{dir}}/good.up; while :; do sleep 0.05; done"]
"#
    )
}

fn wait_until_up(init: &Init) {
    wait_for_file(&init.dir().join("stubborn.up"));
    wait_for_file(&init.dir().join("good.up"));
}

#[test]
fn sigterm_kills_a_term_ignoring_program_after_its_stop_timeout() {
    let mut init = init()
        .file("a.toml", &stubborn_and_good("30s", "1s"))
        .start();
    wait_until_up(&init);
    let start = Instant::now();
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let took = start.elapsed();
    init.wait_for_line("exiting with status 0");
    let out = init.output();
    assert!(
        took >= Duration::from_millis(950),
        "exited after {took:?}: {out}"
    );
    // Bounded by the program's 1s, far below the 30s budget.
    assert!(
        took < Duration::from_secs(6),
        "exited after {took:?}: {out}"
    );
    assert!(
        out.contains("stubborn: still running 1s after SIGTERM; sending SIGKILL to process group"),
        "{out}"
    );
    assert!(!out.contains("stop budget"), "{out}");
    // The well-behaved program stopped on its SIGTERM.
    assert_eq!(file_lines(&init.dir().join("good")), vec!["stopped"]);
    assert!(out.contains("ended (exit status 0)"), "{out}");
    assert!(out.contains("good: stopping -> stopped: shutdown"), "{out}");
}

#[test]
fn the_init_stop_budget_bounds_the_whole_shutdown() {
    let mut init = init()
        .file("a.toml", &stubborn_and_good("1s", "30s"))
        .start();
    wait_until_up(&init);
    let start = Instant::now();
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let took = start.elapsed();
    init.wait_for_line("exiting with status 0");
    let out = init.output();
    assert!(
        took >= Duration::from_millis(950),
        "exited after {took:?}: {out}"
    );
    assert!(
        took < Duration::from_secs(6),
        "exited after {took:?}: {out}"
    );
    assert!(out.contains("stop budget of 1s spent"), "{out}");
    assert_eq!(file_lines(&init.dir().join("good")), vec!["stopped"]);
}

#[test]
fn a_second_sigterm_kills_at_once() {
    let mut init = init()
        .file("a.toml", &stubborn_and_good("60s", "30s"))
        .start();
    wait_until_up(&init);
    init.signal("TERM");
    init.wait_for_line("stubborn: running -> stopping: container stopping");
    init.wait_for_line("good: stopping -> stopped: shutdown");
    let start = Instant::now();
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "exited {took:?} after the second SIGTERM"
    );
    init.wait_for_line("second stop signal: killing everything now");
}

#[test]
fn sigint_and_sigquit_stop_gracefully() {
    for sig in ["INT", "QUIT"] {
        let mut init = init()
            .file(
                "a.toml",
                "[program.good]\ncommand = [\"/bin/sh\", \"-c\", \"trap 'echo stopped >> {dir}/good; exit 0' TERM; touch {dir}/good.up; while :; do sleep 0.05; done\"]\n",
            )
            .start();
        wait_for_file(&init.dir().join("good.up"));
        init.signal(sig);
        assert_eq!(init.wait_exit(DEADLINE), 0, "after SIG{sig}");
        assert_eq!(
            file_lines(&init.dir().join("good")),
            vec!["stopped"],
            "after SIG{sig}"
        );
        init.wait_for_line(&format!("shutting down: received SIG{sig}"));
    }
}

#[test]
fn hup_usr1_usr2_winch_are_forwarded_to_the_double_dash_program() {
    let mut init = init()
        .arg("--")
        .arg("/bin/sh")
        .arg("-c")
        .arg(
            "for s in HUP USR1 USR2 WINCH; do trap \"echo $s >> $TEST_DIR/sig\" $s; done; \
             touch $TEST_DIR/up; while :; do sleep 0.05; done",
        )
        .start();
    wait_for_file(&init.dir().join("up"));
    let sig_file = init.dir().join("sig");
    for (n, sig) in ["HUP", "USR1", "USR2", "WINCH"].into_iter().enumerate() {
        init.signal(sig);
        let got = wait_for_lines_in(&sig_file, n + 1);
        assert_eq!(got.last().unwrap(), sig);
    }
    assert_eq!(file_lines(&sig_file), vec!["HUP", "USR1", "USR2", "WINCH"]);
    // None of them stopped the program or ctrlinit.
    assert_eq!(init.count_lines("shutting down"), 0);
    // TERM ends it (no trap): the container's status is the command's, as tini gives it.
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 143);
}

#[test]
fn without_a_double_dash_program_other_signals_do_not_kill_ctrlinit() {
    // Not PID 1, so the kernel's protection of a namespace's init does not hide a signal that
    // ctrlinit left at its default action (HUP, USR1, USR2, ALRM, PIPE, PROF, VTALRM, XCPU, XFSZ,
    // IO, PWR, STKFLT and the real-time signals terminate; TTIN, TTOU, TSTP stop).
    let mut init = init()
        .without_namespace()
        .file(
            "a.toml",
            "[program.s]\ncommand = [\"/bin/sh\", \"-c\", \"echo $$$$ > {dir}/s.pid; exec sleep 1000\"]\n",
        )
        .start();
    init.wait_for_line("s: starting -> running");
    let s = init.wait_for_pid_file("s.pid");
    for sig in [
        "HUP", "USR1", "USR2", "WINCH", "ALRM", "PIPE", "TTIN", "TTOU", "TSTP", "PROF", "VTALRM",
        "XCPU", "XFSZ", "IO", "PWR", "STKFLT", "URG", "35", "50", "64",
    ] {
        init.signal(sig);
    }
    // Sent after the others: by the time it is handled, they have been.
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    init.wait_for_line("shutting down: received SIGTERM");
    assert!(
        !alive(s) || proc_state(s) == Some('Z'),
        "the program outlived ctrlinit"
    );
}

#[test]
fn double_dash_program_killed_by_a_signal_gives_128_plus_signal() {
    let mut init = init()
        .arg("--")
        .arg("/bin/sh")
        .arg("-c")
        .arg("until [ -e \"$TEST_DIR/go\" ]; do sleep 0.01; done; kill -TERM $$")
        .start();
    // Only once the harness has seen ctrlinit alive.
    std::fs::write(init.dir().join("go"), "").unwrap();
    assert_eq!(init.wait_exit(DEADLINE), 143);
    init.wait_for_line("main program main ended; stopping the container with its status 143");
}

#[test]
fn a_main_program_ending_stops_the_others_and_gives_its_status() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.side]
command = ["/bin/sh", "-c", "trap 'echo stopped >> {dir}/side; exit 0' TERM; touch {dir}/side.up; while :; do sleep 0.05; done"]

[program.job]
main = true
restart = "never"
command = ["/bin/sh", "-c", "while [ ! -e {dir}/side.up ] || [ ! -e {dir}/go ]; do sleep 0.01; done; exit 5"]
"#,
        )
        .start();
    std::fs::write(init.dir().join("go"), "").unwrap();
    assert_eq!(init.wait_exit(DEADLINE), 5);
    assert_eq!(file_lines(&init.dir().join("side")), vec!["stopped"]);
    init.wait_for_line("main program job ended; stopping the container with its status 5");
}

#[test]
fn processes_that_left_their_group_stop_with_their_program_and_are_killed_at_the_budget_end() {
    // Two daemons escape their program's process group (setsid): one stops on TERM, the other
    // ignores it. They still belong to their program: its stop reaches both, and the one that
    // ignores TERM is killed when the stop budget is spent.
    let mut init = init()
        .file(
            "a.toml",
            r#"
[init]
stop_timeout = "2s"

[program.spawner]
command = ["/bin/sh", "-c", "setsid /bin/sh -c 'trap \"echo termed > {dir}/polite; exit 0\" TERM; touch {dir}/polite.up; while :; do sleep 0.05; done' & setsid /bin/sh -c 'trap \"\" TERM; touch {dir}/stubborn.up; while :; do sleep 0.05; done' & exec sleep 1000"]
"#,
        )
        .start();
    wait_for_file(&init.dir().join("polite.up"));
    wait_for_file(&init.dir().join("stubborn.up"));
    let start = Instant::now();
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let took = start.elapsed();
    let out = init.output();
    assert!(
        out.contains("stop budget of 2s spent; killing what is left"),
        "{out}"
    );
    // Nothing was left over for the strays' sweep: the program's stop took them all.
    assert!(!out.contains("processes left over"), "{out}");
    assert_eq!(file_lines(&init.dir().join("polite")), vec!["termed"]);
    // The KILL comes at the budget's end, not before, and not much after.
    assert!(
        took >= Duration::from_millis(1900),
        "exited after {took:?}: {out}"
    );
    assert!(
        took < Duration::from_secs(8),
        "exited after {took:?}: {out}"
    );
    assert!(init.namespace_pids().is_empty());
}

#[test]
fn processes_of_no_program_get_term_then_kill_at_the_end_of_the_stop_budget() {
    // With markers (no cgroups), a daemon that leaves its group and empties its environment
    // (`env -i`) is no longer known as its program's: a stray. ctrlinit, as PID 1, stops such
    // processes after the programs: TERM, then KILL when the budget is spent.
    let mut init = init()
        .env("CTRLINIT_TRACKING", "marker")
        .file(
            "a.toml",
            r#"
[init]
stop_timeout = "2s"

[program.spawner]
command = ["/bin/sh", "-c", "setsid env -i /bin/sh -c 'trap \"echo termed > {dir}/polite; exit 0\" TERM; touch {dir}/polite.up; while :; do sleep 0.05; done' & setsid env -i /bin/sh -c 'trap \"\" TERM; touch {dir}/stubborn.up; while :; do sleep 0.05; done' & exec sleep 1000"]
"#,
        )
        .start();
    wait_for_file(&init.dir().join("polite.up"));
    wait_for_file(&init.dir().join("stubborn.up"));
    let start = Instant::now();
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let took = start.elapsed();
    let out = init.output();
    assert!(out.contains("tracked by environment marker"), "{out}");
    assert!(
        out.contains("sending SIGTERM to the processes left over"),
        "{out}"
    );
    assert!(
        out.contains("processes left over after the stop budget; sending SIGKILL"),
        "{out}"
    );
    assert_eq!(file_lines(&init.dir().join("polite")), vec!["termed"]);
    assert!(
        took >= Duration::from_millis(1900),
        "exited after {took:?}: {out}"
    );
    assert!(
        took < Duration::from_secs(8),
        "exited after {took:?}: {out}"
    );
    assert!(init.namespace_pids().is_empty());
}

#[test]
fn a_sigstopped_program_still_acts_on_its_stop_signal() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.p]
command = ["/bin/sh", "-c", "trap 'echo termed > {dir}/p.termed; exit 0' TERM; echo $$$$ > {dir}/p.pid; while :; do sleep 0.05; done"]
stop_timeout = "30s"
"#,
        )
        .start();
    let pid = init.wait_for_pid_file("p.pid");
    assert!(send_signal(pid, libc::SIGSTOP));
    wait_until("p to be stopped", DEADLINE, || {
        (proc_state(pid) == Some('T')).then_some(())
    });
    // Without a SIGCONT after the SIGTERM, p would sit stopped until the 30 s SIGKILL.
    let (code, out) = init.ctl(&["stop", "p", "--timeout", "10s"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(file_lines(&init.dir().join("p.termed")), vec!["termed"]);
    assert!(!init.output().contains("SIGKILL"), "{}", init.output());
}

/// `ctrlinit shutdown` answers 0, and an `events` client gets every event of the shutdown,
/// however quickly the init exits after deciding it (a race: several rounds).
#[test]
fn shutdown_answers_and_the_last_events_reach_their_clients() {
    for round in 0..5 {
        let mut init = init()
            .file(
                "a.toml",
                "[program.a]\ncommand = [\"/bin/sleep\", \"1000\"]\n[program.b]\ncommand = [\"/bin/sleep\", \"1000\"]\ndepends_on = [\"a\"]\n",
            )
            .start();
        let (code, out) = init.ctl(&["status", "--wait", "a=running", "b=running"]);
        assert_eq!(code, 0, "{out}");
        let (mut events, lines) = init.spawn_client(&["events", "--json"]);
        // Subscribed once a change shows up in its stream: poke until one does.
        wait_until("the events stream to show a restart of b", DEADLINE, || {
            let (code, out) = init.ctl(&["restart", "b"]);
            assert_eq!(code, 0, "{out}");
            lines.recv_timeout(Duration::from_millis(200)).ok()
        });
        let (code, out) = init.ctl(&["status", "--wait", "b=running"]);
        assert_eq!(code, 0, "{out}");
        while lines.try_recv().is_ok() {}
        let (code, out) = init.ctl(&["shutdown"]);
        assert_eq!(code, 0, "round {round}: {out}");
        assert_eq!(init.wait_exit(DEADLINE), 0);
        let status = events.wait().unwrap();
        assert!(status.success(), "round {round}: events exited {status:?}");
        let got: Vec<serde_json::Value> = lines
            .try_iter()
            .map(|l| serde_json::from_str(&l).unwrap())
            .collect();
        let has =
            |program: &str, to: &str| got.iter().any(|e| e["program"] == program && e["to"] == to);
        assert!(
            got.iter().any(|e| e["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("shutting down")),
            "round {round}: {got:#?}"
        );
        for (p, to) in [
            ("b", "stopping"),
            ("b", "stopped"),
            ("a", "stopping"),
            ("a", "stopped"),
        ] {
            assert!(has(p, to), "round {round}: no {p} -> {to} in {got:#?}");
        }
    }
}

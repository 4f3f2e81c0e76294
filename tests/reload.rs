//! Live reload against the real binary as PID 1 (issue 4): `ctrlinit reload` and SIGHUP re-read
//! the config directory; added programs start, removed ones stop, changed ones restart, unchanged
//! ones keep their pids; an invalid config keeps the old one running and every error is reported.

mod common;

use common::*;

/// Host pid of a program's process (for checking it is gone).
fn host(init: &Init, name: &str) -> i32 {
    let ns = init.pid_of(name).unwrap() as i32;
    host_pid(init, ns).unwrap()
}

const BEFORE: &str = r#"
[program.keep]
command = ["/bin/sleep", "1000"]

[program.change]
command = ["/bin/sleep", "1000"]

[program.gone]
command = ["/bin/sh", "-c", "trap 'echo term >> {dir}/gone; exit 0' TERM; touch {dir}/gone.ready; while :; do sleep 0.05; done"]
# running only once the trap is set
ready = { file = "{dir}/gone.ready", interval = "10ms" }
"#;

const AFTER: &str = r#"
[program.keep]
command = ["/bin/sleep", "1000"]

[program.change]
command = ["/bin/sleep", "1001"]

[program.added]
command = ["/bin/sleep", "1000"]
"#;

/// Two files with three problems between them.
fn break_config(init: &Init) {
    write_conf(
        init,
        "z-broken.toml",
        r#"
[program.bad1]
comand = ["/bin/true"]

[program.bad2]
command = ["/bin/true"]
depends_on = ["nowhere"]
"#,
    );
}

fn check_every_error_reported(text: &str) {
    assert!(text.contains("z-broken.toml"), "names the file: {text}");
    assert!(text.contains("comand"), "the unknown key: {text}");
    assert!(
        text.contains("bad1") && text.contains("command"),
        "the missing command: {text}"
    );
    assert!(text.contains("nowhere"), "the unknown dependency: {text}");
}

#[test]
fn reload_adds_removes_changes_and_leaves_the_unchanged_alone() {
    let init = init().file("a.toml", BEFORE).start();
    init.wait_states(&["keep=running", "change=running", "gone=running"]);
    let keep = init.pid_of("keep").unwrap();
    let change = init.pid_of("change").unwrap();
    let gone_host = host(&init, "gone");
    write_conf(&init, "a.toml", AFTER);
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("added") && out.contains("gone") && out.contains("change"),
        "{out}"
    );
    wait_until("the reload to be applied", DEADLINE, || {
        let s = init.status_json();
        let running = |n: &str| s.iter().any(|p| p["name"] == n && p["state"] == "running");
        (running("added")
            && running("change")
            && init.pid_of("change") != Some(change)
            && !s.iter().any(|p| p["name"] == "gone"))
        .then_some(())
    });
    assert_eq!(init.program_names(), vec!["added", "change", "keep"]);
    assert_eq!(init.pid_of("keep"), Some(keep), "unchanged keeps its pid");
    assert_ne!(init.pid_of("change"), Some(change), "changed restarts");
    // The removed program was stopped gracefully, and is gone.
    assert_eq!(wait_for_lines_in(&init.dir().join("gone"), 1), vec!["term"]);
    wait_until("gone's process to go", DEADLINE, || {
        (!alive(gone_host)).then_some(())
    });
    let (code, out) = init.ctl(&["status", "gone"]);
    assert_eq!(code, 2, "{out}");
    // A reload with nothing changed changes nothing.
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    let added = init.pid_of("added");
    let change2 = init.pid_of("change");
    init.wait_states(&["keep=running", "change=running", "added=running"]);
    assert_eq!(init.pid_of("keep"), Some(keep));
    assert_eq!(init.pid_of("change"), change2);
    assert_eq!(init.pid_of("added"), added);
}

#[test]
fn an_invalid_reload_keeps_the_old_config_and_reports_every_error() {
    let init = init().file("a.toml", BEFORE).start();
    init.wait_states(&["keep=running", "change=running", "gone=running"]);
    let pids: Vec<Option<i64>> = ["keep", "change", "gone"]
        .iter()
        .map(|n| init.pid_of(n))
        .collect();
    // The valid part would change things; the broken file must stop all of it.
    write_conf(&init, "a.toml", AFTER);
    break_config(&init);
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 1, "{out}");
    check_every_error_reported(&out);
    // ctrlinit's own log says it too, not only the client's answer.
    init.wait_for_line("reload (asked over the control socket) refused");
    // Nothing changed: same programs, same pids, all running.
    assert_eq!(init.program_names(), vec!["change", "gone", "keep"]);
    let now: Vec<Option<i64>> = ["keep", "change", "gone"]
        .iter()
        .map(|n| init.pid_of(n))
        .collect();
    assert_eq!(now, pids);
    let (code, out) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{out}");
    // Fixed, it applies.
    std::fs::remove_file(init.dir().join("conf.d/z-broken.toml")).unwrap();
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    // Applied once what is removed or changed has stopped.
    wait_until("added to run", DEADLINE, || {
        init.status_json()
            .iter()
            .any(|p| p["name"] == "added" && p["state"] == "running")
            .then_some(())
    });
    assert_eq!(init.pid_of("keep"), pids[0]);
}

#[test]
fn sighup_reloads_like_the_command() {
    let init = init().file("a.toml", BEFORE).start();
    init.wait_states(&["keep=running", "change=running", "gone=running"]);
    let keep = init.pid_of("keep").unwrap();
    let change = init.pid_of("change").unwrap();
    // Invalid first: refused, every error in ctrlinit's log, nothing changes.
    write_conf(&init, "a.toml", AFTER);
    break_config(&init);
    init.signal("HUP");
    init.wait_for_line("reload refused");
    let log = wait_until("the errors in ctrlinit.log", DEADLINE, || {
        let text = std::fs::read_to_string(init.dir().join("log/ctrlinit.log")).ok()?;
        text.contains("nowhere").then_some(text)
    });
    check_every_error_reported(&log);
    // On the console too (its lines are read as they come: wait for the last error).
    init.wait_for_line("nowhere");
    check_every_error_reported(&init.output());
    assert_eq!(init.program_names(), vec!["change", "gone", "keep"]);
    assert_eq!(init.pid_of("change"), Some(change));
    // Valid: applied as `reload` would.
    std::fs::remove_file(init.dir().join("conf.d/z-broken.toml")).unwrap();
    init.signal("HUP");
    wait_until("the SIGHUP reload to be applied", DEADLINE, || {
        let s = init.status_json();
        let running = |n: &str| s.iter().any(|p| p["name"] == n && p["state"] == "running");
        (running("added")
            && running("change")
            && init.pid_of("change") != Some(change)
            && !s.iter().any(|p| p["name"] == "gone"))
        .then_some(())
    });
    assert_eq!(init.program_names(), vec!["added", "change", "keep"]);
    assert_eq!(init.pid_of("keep"), Some(keep));
    assert_eq!(wait_for_lines_in(&init.dir().join("gone"), 1), vec!["term"]);
}

#[test]
fn a_changed_program_restarts_with_its_dependents_in_order() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.db]
command = ["/bin/sh", "-c", "echo db-$0 >> {dir}/order; exec sleep 1000", "v1"]

[program.api]
command = ["/bin/sh", "-c", "echo api >> {dir}/order; exec sleep 1000"]
depends_on = ["db"]

[program.other]
command = ["/bin/sleep", "1000"]
"#,
        )
        .start();
    init.wait_states(&["db=running", "api=running", "other=running"]);
    assert_eq!(
        wait_for_lines_in(&init.dir().join("order"), 2),
        vec!["db-v1", "api"]
    );
    let other = init.pid_of("other");
    write_conf(
        &init,
        "a.toml",
        r#"
[program.db]
command = ["/bin/sh", "-c", "echo db-$0 >> {dir}/order; exec sleep 1000", "v2"]

[program.api]
command = ["/bin/sh", "-c", "echo api >> {dir}/order; exec sleep 1000"]
depends_on = ["db"]

[program.other]
command = ["/bin/sleep", "1000"]
"#,
    );
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    let order = wait_for_lines_in(&init.dir().join("order"), 3);
    assert_eq!(order[2], "db-v2", "{order:?}");
    init.wait_states(&["db=running", "api=running"]);
    // Whether api restarts or not, it never runs against a stopped db: if it restarted, it
    // started after the new db.
    let order = file_lines(&init.dir().join("order"));
    assert!(
        order.len() <= 4 && (order.len() == 3 || order[3] == "api"),
        "{order:?}"
    );
    assert_eq!(init.pid_of("other"), other);
}

#[test]
fn a_reload_says_which_init_settings_wait_for_the_next_start() {
    let init = init().file("a.toml", BEFORE).start();
    init.wait_states(&["keep=running"]);
    write_conf(&init, "0-init.toml", "[init]\nsocket_group = \"root\"\n");
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("[init] socket_group changed: it takes effect at the next start"),
        "{out}"
    );
    assert!(!out.contains("log_dir"), "{out}");
}

/// A readiness check in flight belongs to its program, not to a position in a list: a reload that
/// changes another program leaves it running, and it passes once (issue 12).
#[test]
fn a_reload_of_another_program_leaves_a_readiness_check_in_flight_running() {
    // `slow`'s check counts its runs, then holds until the test says `go`.
    let slow = r#"
[program.slow]
command = ["/bin/sleep", "1000"]
ready = { exec = ["/bin/sh", "-c", "echo run >> {dir}/checks; while [ ! -e {dir}/go ]; do sleep 0.02; done"], interval = "50ms" }
ready_timeout = "60s"
"#;
    let init = init()
        .file("a.toml", slow)
        .file(
            "b.toml",
            "[program.other]\ncommand = [\"/bin/sleep\", \"1000\"]\n",
        )
        .start();
    init.wait_states(&["other=running", "slow=starting"]);
    wait_for_lines_in(&init.dir().join("checks"), 1);
    let other = init.pid_of("other").unwrap();
    write_conf(
        &init,
        "b.toml",
        "[program.other]\ncommand = [\"/bin/sleep\", \"1001\"]\n",
    );
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("changed other"), "{out}");
    wait_until("other to restart with its new command", DEADLINE, || {
        init.pid_of("other").filter(|&p| p != other)
    });
    assert_eq!(init.program_json("slow")["state"], "starting");
    std::fs::write(init.dir().join("go"), "").unwrap();
    init.wait_states(&["slow=running"]);
    assert_eq!(
        file_lines(&init.dir().join("checks")),
        vec!["run"],
        "the check in flight went on across the reload, not started again"
    );
}

/// A reload right after a successful one is not refused while the first is still being applied
/// (its changed program slow to stop): it waits its turn, and both are applied.
#[test]
fn a_reload_right_after_another_waits_its_turn() {
    let slow = |n: u32| {
        format!(
            r#"
[program.slow]
command = ["/bin/sh", "-c", "trap 'sleep 2; exit 0' TERM; touch {{dir}}/slow.ready; while :; do sleep 0.05; done; # {n}"]
ready = {{ file = "{{dir}}/slow.ready", interval = "10ms" }}
stop_timeout = "20s"
"#
        )
    };
    let init = init().file("a.toml", &slow(1)).start();
    init.wait_states(&["slow=running"]);
    write_conf(&init, "a.toml", &slow(2));
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    // slow takes about 2 s to stop: the first reload is still being applied.
    write_conf(
        &init,
        "a.toml",
        &format!(
            "{}\n[program.added]\ncommand = [\"sleep\", \"1000\"]\n",
            slow(2)
        ),
    );
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "the second reload was refused: {out}");
    assert!(out.contains("added"), "{out}");
    init.wait_states(&["slow=running", "added=running"]);
}

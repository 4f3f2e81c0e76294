//! `instances = N` (issue 16, part 2) against the real binary as PID 1: one table runs as
//! `NAME-0` … `NAME-<N-1>`, each with its own `${INSTANCE}`, state, logs and budget; the table's
//! name stands for all of them in `start`, `stop`, `restart`, `status`, `logs` and `depends_on`;
//! a reload changes the count; a mistake in the table is reported once.

mod common;

use common::*;

/// Each instance writes its own INSTANCE and INSTANCES, then stays up.
const WORKERS: &str = r#"
[program.worker]
instances = 3
command = ["/bin/sh", "-c", "echo ${INSTANCE} of ${INSTANCES} > {dir}/out-${INSTANCE}; echo hello from ${INSTANCE}; exec sleep 1000"]
env = { SLOT = "slot-${INSTANCE}" }
"#;

fn pids(init: &Init, names: &[&str]) -> Vec<Option<i64>> {
    names.iter().map(|n| init.pid_of(n)).collect()
}

#[test]
fn instances_start_with_their_own_instance_values() {
    let init = init().file("a.toml", WORKERS).start();
    init.wait_states(&["worker-0=running", "worker-1=running", "worker-2=running"]);
    for i in 0..3 {
        // A whole line: the shell creates the file before echo writes it.
        let out = wait_for_lines_in(&init.dir().join(format!("out-{i}")), 1);
        assert_eq!(out, [format!("{i} of 3")], "instance {i}");
    }
    assert_eq!(
        init.program_names(),
        vec!["worker-0", "worker-1", "worker-2"]
    );
    // Separate programs: separate processes and separate log files.
    let p = pids(&init, &["worker-0", "worker-1", "worker-2"]);
    assert!(p.iter().all(Option::is_some), "{p:?}");
    assert!(p[0] != p[1] && p[1] != p[2] && p[0] != p[2], "{p:?}");
    for i in 0..3 {
        let log = init.dir().join("log").join(format!("worker-{i}.log"));
        let lines = wait_for_lines_in(&log, 1);
        assert_eq!(lines, vec![format!("hello from {i}")], "{}", log.display());
    }
    // `status NAME` and `logs NAME` show every instance.
    let (code, out) = init.ctl(&["status", "worker"]);
    assert_eq!(code, 0, "{out}");
    for i in 0..3 {
        assert!(out.contains(&format!("worker-{i}")), "{out}");
    }
    let (code, out) = init.ctl(&["logs", "worker"]);
    assert_eq!(code, 0, "{out}");
    for i in 0..3 {
        assert!(out.contains(&format!("hello from {i}")), "{out}");
    }
    // `status --wait NAME=STATE` holds for all of them.
    init.wait_states(&["worker=running"]);
    let (code, out) = init.ctl(&["status", "worker-3"]);
    assert_eq!(code, 2, "no fourth instance: {out}");
}

#[test]
fn start_stop_and_restart_take_the_whole_group_or_one_instance() {
    let init = init().file("a.toml", WORKERS).start();
    init.wait_states(&["worker=running"]);
    let before = pids(&init, &["worker-0", "worker-1", "worker-2"]);

    // One instance by its own name: the others are left alone.
    let (code, out) = init.ctl(&["stop", "worker-1"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["worker-1=stopped", "worker-0=running", "worker-2=running"]);
    assert_eq!(init.pid_of("worker-0"), before[0]);
    assert_eq!(init.pid_of("worker-2"), before[2]);

    // The group's name: all of them.
    let (code, out) = init.ctl(&["stop", "worker"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["worker-0=stopped", "worker-1=stopped", "worker-2=stopped"]);
    let (code, out) = init.ctl(&["start", "worker-2"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["worker-2=running", "worker-0=stopped", "worker-1=stopped"]);
    let (code, out) = init.ctl(&["start", "worker"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["worker=running"]);

    let up = pids(&init, &["worker-0", "worker-1", "worker-2"]);
    let (code, out) = init.ctl(&["restart", "worker"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("worker-0") && out.contains("worker-2"),
        "{out}"
    );
    init.wait_states(&["worker=running"]);
    let restarted = pids(&init, &["worker-0", "worker-1", "worker-2"]);
    for i in 0..3 {
        assert_ne!(restarted[i], up[i], "worker-{i} was restarted");
    }
    let (code, out) = init.ctl(&["restart", "worker-0"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["worker=running"]);
    let after = pids(&init, &["worker-0", "worker-1", "worker-2"]);
    assert_ne!(after[0], restarted[0], "worker-0 was restarted");
    assert_eq!(after[1..], restarted[1..], "the others were not");

    let (code, out) = init.ctl(&["stop", "workers"]);
    assert_eq!(code, 2, "an unknown name is refused: {out}");
    assert!(
        out.contains("known programs: worker-0, worker-1, worker-2, worker"),
        "the group is among the known names: {out}"
    );
}

#[test]
fn a_dependency_on_a_group_waits_for_every_instance() {
    let conf = r#"
[program.db]
instances = 3
command = ["/bin/sleep", "1000"]
ready = { file = "{dir}/ready-${INSTANCE}", interval = "10ms" }

[program.front]
command = ["/bin/sh", "-c", "touch {dir}/front-started; exec sleep 1000"]
depends_on = ["db"]
"#;
    let init = init().file("a.toml", conf).start();
    init.wait_states(&["db=starting", "front=waiting"]);
    std::fs::write(init.dir().join("ready-0"), "").unwrap();
    std::fs::write(init.dir().join("ready-2"), "").unwrap();
    init.wait_states(&["db-0=running", "db-2=running", "db-1=starting"]);
    let front = init.program_json("front");
    assert_eq!(front["state"], "waiting", "{front}");
    let waiting = front["waiting_for"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        waiting.contains("db-1"),
        "waits for the one not ready: {front}"
    );
    assert!(!init.dir().join("front-started").exists());
    std::fs::write(init.dir().join("ready-1"), "").unwrap();
    init.wait_states(&["front=running"]);
    wait_for_file(&init.dir().join("front-started"));
    // The state holds before its line is necessarily read from ctrlinit's output.
    init.wait_for_line("front: waiting -> starting");
    let lines = init.lines();
    let ready_1 = index_of_line(&lines, "db-1: starting -> running").expect("db-1 ready line");
    let front_starts =
        index_of_line(&lines, "front: waiting -> starting").expect("front start line");
    assert!(
        ready_1 < front_starts,
        "front started after the last instance was ready"
    );
}

/// Without `${INSTANCES}`, so that a change of the count changes no existing instance (one that
/// uses it changes with the count, and is restarted by the reload).
const STEADY: &str = r#"
[program.worker]
instances = 3
command = ["/bin/sh", "-c", "echo ${INSTANCE} > {dir}/out-${INSTANCE}; exec sleep 1000"]
"#;

#[test]
fn a_reload_changes_the_number_of_instances() {
    let two = STEADY.replace("instances = 3", "instances = 2");
    let init = init().file("a.toml", &two).start();
    init.wait_states(&["worker=running"]);
    assert_eq!(init.program_names(), vec!["worker-0", "worker-1"]);
    let kept = pids(&init, &["worker-0", "worker-1"]);

    // Up: the new instances start, the existing ones keep running as they were.
    write_conf(
        &init,
        "a.toml",
        &STEADY.replace("instances = 3", "instances = 4"),
    );
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    wait_until("four instances", DEADLINE, || {
        (init.program_names().len() == 4).then_some(())
    });
    init.wait_states(&["worker=running"]);
    assert_eq!(pids(&init, &["worker-0", "worker-1"]), kept);
    assert_eq!(
        wait_for_file(&init.dir().join("out-3")).trim(),
        "3",
        "a new instance has its INSTANCE"
    );

    // Down: the instances from the top are stopped and gone; worker-0 is left alone.
    let gone: Vec<i32> = ["worker-1", "worker-2", "worker-3"]
        .iter()
        .map(|n| host_pid(&init, init.pid_of(n).unwrap() as i32).unwrap())
        .collect();
    write_conf(
        &init,
        "a.toml",
        &STEADY.replace("instances = 3", "instances = 1"),
    );
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("worker-3") && !out.contains("worker-0"),
        "{out}"
    );
    wait_until("one instance left", DEADLINE, || {
        (init.program_names() == vec!["worker-0"]).then_some(())
    });
    for pid in gone {
        wait_until("a removed instance's process to go", DEADLINE, || {
            (!alive(pid)).then_some(())
        });
    }
    assert_eq!(init.pid_of("worker-0"), kept[0]);
    init.wait_states(&["worker=running"]);
}

#[test]
fn a_mistake_in_an_instanced_table_is_reported_once() {
    let (_dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.worker]
instances = 8
command = ["/bin/sleep", "${CTRLINIT_TEST_UNSET_VAR}"]
stop_timeout = "5 parsecs"
depends_on = ["ghost"]

[program.front]
command = ["/bin/true"]
depends_on = ["wroker"]

[program.none]
instances = 0
command = ["/bin/true"]

[program.fleet]
instances = 1001
command = ["/bin/true"]
"#,
    )]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{}", ran.all());
    let errors: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    for (says, line) in [
        ("CTRLINIT_TEST_UNSET_VAR is not set", 4),
        ("unknown unit `parsecs`", 5),
        ("`worker` depends on `ghost`, which is not defined", 6),
        ("`front` depends on `wroker`", 10),
        ("instances = 0 runs nothing", 13),
        ("instances = 1001 is more than 1000", 17),
    ] {
        let found: Vec<&&str> = errors.iter().filter(|e| e.contains(says)).collect();
        assert_eq!(found.len(), 1, "{says:?} once, in:\n{}", ran.stderr);
        assert!(
            found[0].contains(&format!("a.toml:{line}:")),
            "{says:?} on line {line}: {}",
            found[0]
        );
    }
    assert_eq!(errors.len(), 6, "nothing else:\n{}", ran.stderr);
    assert!(
        ran.stderr.contains("did you mean `worker`?"),
        "the group's name is offered, not an instance's:\n{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("fix: use 1 to 1000"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("fix: use at most 1000"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stdout.is_empty(),
        "nothing started or listed: {}",
        ran.stdout
    );
}

#[test]
fn an_instance_name_cannot_be_taken_twice() {
    let (_dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.worker]
instances = 2
command = ["/bin/true"]

[program.worker-1]
command = ["/bin/true"]
"#,
    )]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr.contains(
            "program `worker-1` is defined twice (first as an instance of [program.worker]"
        ),
        "{}",
        ran.stderr
    );
}

#[test]
fn one_instance_exhausts_its_own_budget_and_the_others_keep_running() {
    // worker-1 fails at once on every run once `go` exists; the others just run.
    let conf = r#"
[program.worker]
instances = 3
command = ["/bin/sh", "-c", "if [ ${INSTANCE} = 1 ]; then until [ -e {dir}/go ]; do sleep 0.01; done; echo run >> {dir}/runs-1; exit 3; fi; exec sleep 1000"]
max_restarts = 2
backoff = { initial = "50ms" }
on_exhausted = "stop"
"#;
    let init = init().file("a.toml", conf).start();
    init.wait_states(&["worker=running"]);
    let before = pids(&init, &["worker-0", "worker-2"]);
    std::fs::write(init.dir().join("go"), "").unwrap();
    init.wait_states(&["worker-1=stopped"]);
    // Its own budget: max_restarts = 2 allows three runs, then it is left down.
    assert_eq!(file_lines(&init.dir().join("runs-1")).len(), 3);
    let one = init.program_json("worker-1");
    assert_eq!(one["down_reason"], "restart budget exhausted", "{one}");
    assert_eq!(one["restarts"], 2, "{one}");
    // The others never noticed: same processes, no restarts, the container is up.
    init.wait_states(&["worker-0=running", "worker-2=running"]);
    assert_eq!(pids(&init, &["worker-0", "worker-2"]), before);
    for name in ["worker-0", "worker-2"] {
        assert_eq!(init.program_json(name)["restarts"], 0, "{name}");
    }
    init.wait_for_line("leaving it stopped (on_exhausted = \"stop\")");
    let out = init.output();
    assert!(out.contains("worker-1 exhausted: 2 restarts"), "{out}");
    assert!(
        !out.contains("worker-0: running ->") && !out.contains("worker-2: running ->"),
        "{out}"
    );
}

#[test]
fn a_sigkill_of_one_instance_writes_its_crash_report_under_its_own_name() {
    let init = init().file("a.toml", WORKERS).start();
    init.wait_states(&["worker=running"]);
    let ns_pid = init.pid_of("worker-2").expect("worker-2 runs") as i32;
    let pid = host_pid(&init, ns_pid).expect("worker-2's host pid");
    // Killed from outside: a signal ctrlinit did not send is a crash.
    assert!(send_signal(pid, 9));
    let dir = init.dir().join("crash").join("worker-2");
    let report = wait_until("worker-2's crash report", DEADLINE, || {
        std::fs::read_dir(&dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
    });
    let name = report.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with(&format!("-{ns_pid}-SIGKILL.json")), "{name}");
    let v: serde_json::Value = wait_until("a complete report", DEADLINE, || {
        serde_json::from_slice(&std::fs::read(&report).ok()?).ok()
    });
    assert_eq!(v["program"], "worker-2", "{v}");
    assert_eq!(v["signal"], "SIGKILL", "{v}");
    assert!(
        v["last_lines"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x.as_str() == Some("| hello from 2"))),
        "its own last lines: {v}"
    );
    // Only its own directory: the other instances have none.
    for other in ["worker-0", "worker-1", "worker"] {
        assert!(
            !init.dir().join("crash").join(other).exists(),
            "no report under {other}"
        );
    }
    // It is restarted like any crash.
    init.wait_states(&["worker-2=running"]);
}

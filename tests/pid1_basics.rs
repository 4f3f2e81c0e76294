//! PID-1 basics against the real binary: start order, SIGTERM, the `--` main program, reaping.

mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn chain_with_oneshot_first_starts_in_order_and_sigterm_exits_zero() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.prov]
type = "oneshot"
command = ["/bin/sh", "-c", "echo prov >> {dir}/order"]

[program.db]
command = ["/bin/sh", "-c", "echo db >> {dir}/order; touch {dir}/db.ready; exec sleep 1000"]
depends_on = ["prov"]
ready = { file = "{dir}/db.ready", interval = "10ms" }

[program.api]
command = ["/bin/sh", "-c", "echo api >> {dir}/order; exec sleep 1000"]
depends_on = ["db"]
"#,
        )
        .start();
    let order = wait_for_lines_in(&init.dir().join("order"), 3);
    assert_eq!(order, vec!["prov", "db", "api"]);
    init.wait_for_line("api: starting -> running");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    assert!(init.namespace_pids().is_empty());
}

#[test]
fn double_dash_program_exit_status_becomes_ctrlinit_status() {
    let mut init = init()
        .arg("--")
        .arg("/bin/sh")
        .arg("-c")
        .arg("exit 7")
        .start();
    assert_eq!(init.wait_exit(DEADLINE), 7);
    let mut init = common::init()
        .arg("--")
        .arg("/bin/sh")
        .arg("-c")
        .arg("kill -9 $$")
        .start();
    assert_eq!(init.wait_exit(DEADLINE), 137);
}

#[test]
fn children_start_with_an_empty_signal_mask_and_default_dispositions() {
    let init = init()
        .file(
            "a.toml",
            "[program.s]\ncommand = [\"/bin/sleep\", \"1000\"]\n",
        )
        .start();
    init.wait_for_line("s: starting -> running");
    let pid = wait_until("the sleep process", DEADLINE, || {
        init.namespace_pids()
            .into_iter()
            .find(|&p| proc_status_field(p, "Name").as_deref() == Some("sleep"))
    });
    assert_eq!(
        proc_status_field(pid, "SigBlk").unwrap(),
        "0000000000000000"
    );
    assert_eq!(
        proc_status_field(pid, "SigIgn").unwrap(),
        "0000000000000000"
    );
    // Its own session and process group.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let (pgrp, session) = (fields[2], fields[3]);
    // /proc shows ids as the reader's namespace sees them: the host pid here.
    assert_eq!(pgrp, pid.to_string());
    assert_eq!(session, pid.to_string());
    // Only stdio: no ctrlinit descriptor leaked. The kernel renames a process (its Name turns
    // `sleep`) a moment before it closes the close-on-exec descriptors, so this is waited for.
    let fds = || {
        let mut fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        fds.sort();
        fds
    };
    let only_stdio = wait_until_soft(DEADLINE, || (fds() == ["0", "1", "2"]).then_some(()));
    assert!(
        only_stdio.is_some(),
        "descriptors beyond stdio: {:?}",
        fds()
    );
    let stdin = std::fs::read_link(format!("/proc/{pid}/fd/0")).unwrap();
    assert_eq!(stdin, std::path::Path::new("/dev/null"));
}

#[test]
fn a_diamond_after_a_oneshot_starts_each_program_once_its_dependencies_are_met() {
    // prov (oneshot) -> base -> {left, right} -> top: left and right both wait for base, and top
    // for both of them; left is slow to become ready, so top must wait for it.
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.prov]
type = "oneshot"
command = ["/bin/sh", "-c", "echo prov >> {dir}/order"]

# Ready once it has written its line, so the order file shows the order of readiness.
[program.base]
command = ["/bin/sh", "-c", "echo base >> {dir}/order; touch {dir}/base.ready; exec sleep 1000"]
depends_on = ["prov"]
ready = { file = "{dir}/base.ready", interval = "10ms" }

[program.left]
command = ["/bin/sh", "-c", "echo left >> {dir}/order; exec sleep 1000"]
depends_on = ["base"]
ready = { file = "{dir}/left.ready", interval = "10ms" }

[program.right]
command = ["/bin/sh", "-c", "echo right >> {dir}/order; exec sleep 1000"]
depends_on = ["base"]

[program.top]
command = ["/bin/sh", "-c", "echo top >> {dir}/order; exec sleep 1000"]
depends_on = ["left", "right"]
"#,
        )
        .start();
    let order = wait_for_lines_in(&init.dir().join("order"), 4);
    assert_eq!(&order[..2], ["prov", "base"]);
    let mut middle = order[2..4].to_vec();
    middle.sort();
    assert_eq!(middle, ["left", "right"]);
    // right is running, left is not ready: top waits.
    let (code, out) = init.ctl(&["status", "--wait", "right=running", "left=starting"]);
    assert_eq!(code, 0, "{out}");
    let (_, out) = init.ctl(&["status", "top"]);
    assert!(out.contains("waiting"), "top should wait for left: {out}");
    assert_eq!(file_lines(&init.dir().join("order")).len(), 4);
    std::fs::write(init.dir().join("left.ready"), "").unwrap();
    let order = wait_for_lines_in(&init.dir().join("order"), 5);
    assert_eq!(order[4], "top");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn a_missing_config_directory_is_fine_with_a_double_dash_program() {
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child"])
        .arg(bin())
        .args([
            "--config-dir",
            "/nonexistent/conf.d",
            "--",
            "/bin/sh",
            "-c",
            "exit 3",
        ]);
    let dir = tempfile::tempdir().unwrap();
    cmd.env("CTRLINIT_SOCKET", dir.path().join("sock"))
        .env("CTRLINIT_LOG_DIR", dir.path().join("log"))
        .env("CTRLINIT_CRASH_DIR", dir.path().join("crash"));
    let ran = run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 3, "{}", ran.all());
}

#[test]
fn a_thousand_orphans_are_reaped() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.spawner]
type = "oneshot"
command = ["/bin/sh", "-c", "i=0; while [ $i -lt 1000 ]; do (sleep 0.2 &) ; i=$((i+1)); done; touch {dir}/spawned"]
"#,
        )
        .start();
    wait_for_file(&init.dir().join("spawned"));
    let start = Instant::now();
    wait_until("every orphan to be reaped", Duration::from_secs(30), || {
        let pids = init.namespace_pids();
        (pids.is_empty()).then_some(())
    });
    assert!(init.zombies().is_empty());
    eprintln!(
        "1000 orphans gone {:?} after the spawner finished",
        start.elapsed()
    );
}

#[test]
fn exec_failures_report_the_os_error_and_shell_statuses() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.ghost]
command = ["/nonexistent/ghost"]
max_restarts = 0
on_exhausted = "stop"

[program.noexec]
command = ["{dir}/conf.d/a.toml"]
max_restarts = 0
on_exhausted = "stop"

[program.viapath]
command = ["no-such-program-anywhere"]
max_restarts = 0
on_exhausted = "stop"
"#,
        )
        .start();
    init.wait_for_line(r#"ghost: cannot execute "/nonexistent/ghost": No such file or directory (os error 2) (exit status 127)"#);
    init.wait_for_line("Permission denied (os error 13) (exit status 126)");
    init.wait_for_line(
        r#"viapath: cannot execute "no-such-program-anywhere": No such file or directory"#,
    );
    for (name, code) in [("ghost", 127), ("noexec", 126), ("viapath", 127)] {
        let (rc, out) = init.ctl(&[
            "status",
            "--wait",
            &format!("{name}=stopped"),
            "--timeout",
            "10s",
        ]);
        assert_eq!(rc, 0, "{out}");
        let (_, json) = init.ctl(&["status", "--json", name]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v[0]["last_exit"]["code"], code, "{json}");
    }
}

#[test]
fn a_missing_double_dash_program_exits_127() {
    let mut init = init().arg("--").arg("/no/such/binary").start();
    assert_eq!(init.wait_exit(DEADLINE), 127);
}

#[test]
fn remap_exit_and_tinis_e_turn_a_status_into_another() {
    // Killed by SIGTERM: 143, which `-e 143` (tini's flag) counts as success.
    let mut init = init()
        .arg("-e")
        .arg("143")
        .arg("--")
        .arg("/bin/sh")
        .arg("-c")
        .arg("kill -TERM $$")
        .start();
    assert_eq!(init.wait_exit(DEADLINE), 0, "{}", init.output());
    let mut init = init_with_remap("3=9", "exit 3");
    assert_eq!(init.wait_exit(DEADLINE), 9, "{}", init.output());
    // Other statuses pass as they are.
    let mut init = init_with_remap("3=9", "exit 4");
    assert_eq!(init.wait_exit(DEADLINE), 4, "{}", init.output());
}

fn init_with_remap(remap: &str, script: &str) -> common::Init {
    init()
        .arg("--remap-exit")
        .arg(remap)
        .arg("--")
        .arg("/bin/sh")
        .arg("-c")
        .arg(script)
        .start()
}

#[test]
fn a_first_word_that_is_no_command_says_how_to_run_it_as_the_main_process() {
    let mut cmd = std::process::Command::new(common::bin());
    cmd.arg("sh");
    let ran = common::run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr.contains("`sh` is not a ctrlinit command"),
        "{}",
        ran.all()
    );
    assert!(ran.stderr.contains("ctrlinit -- sh"), "{}", ran.all());
    assert!(
        !ran.stderr.contains("similar"),
        "no look-alike command suggested: {}",
        ran.all()
    );
    // `--help` shows the `--` form first.
    let mut cmd = std::process::Command::new(common::bin());
    cmd.arg("--help");
    let ran = common::run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 0, "{}", ran.all());
    let usage = ran
        .stdout
        .lines()
        .find(|l| l.starts_with("Usage:"))
        .unwrap_or("");
    assert!(usage.contains("-- CMD [ARGS]..."), "{}", ran.stdout);
}

#[test]
fn a_double_dash_run_says_nothing_of_its_own_unless_something_goes_wrong() {
    let mut init = init()
        .env("CTRLINIT_LOG", "")
        .arg("--")
        .arg("/bin/sh")
        .arg("-c")
        .arg("echo hello")
        .start();
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let out = init.output();
    assert!(out.contains("hello"), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("ctrlinit")),
        "ctrlinit's own lines at the default level: {out}"
    );
    // Something going wrong is still said.
    let mut failing = common::init()
        .env("CTRLINIT_LOG", "")
        .arg("--")
        .arg("/no/such/program")
        .start();
    assert_eq!(failing.wait_exit(DEADLINE), 127);
    let out = failing.output();
    assert!(out.contains("cannot execute \"/no/such/program\""), "{out}");
    // The fix names what the user wrote, not a key they never wrote.
    assert!(
        out.contains("or correct the command given after --"),
        "{out}"
    );
    assert!(!out.contains("program.main"), "{out}");
    // And so does `check`.
    let ran = common::run_with_deadline(
        {
            let mut c = std::process::Command::new(common::bin());
            c.args([
                "--config-dir",
                "/nonexistent-dir",
                "check",
                "--",
                "/no/such/program",
            ]);
            c
        },
        DEADLINE,
    );
    assert!(
        ran.stdout.contains("the command given after --"),
        "{}",
        ran.all()
    );
    assert!(!ran.all().contains("program.main"), "{}", ran.all());
}

#[test]
fn the_core_pattern_is_explained_only_when_a_program_collects_cores() {
    let quiet = "[program.a]\ncommand = [\"/bin/sleep\", \"1000\"]\n";
    let without = init().env("CTRLINIT_LOG", "").file("a.toml", quiet).start();
    without.wait_for_line("a: starting -> running");
    assert!(
        !without.output().contains("core_pattern"),
        "{}",
        without.output()
    );
    let cores = "[program.a]\ncommand = [\"/bin/sleep\", \"1000\"]\ncore_dumps = true\n";
    let with = init().env("CTRLINIT_LOG", "").file("a.toml", cores).start();
    with.wait_for_line("core_pattern");
}

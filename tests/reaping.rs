//! Reaping orphans: the subreaper path (ctrlinit not PID 1), and a control showing that the
//! zombie check used by these tests does catch a PID 1 that never reaps.

mod common;

use std::process::{Command, Stdio};

use common::*;

/// Orphans that escape their program's process group (a daemonising double fork) and wait for
/// `{dir}/go` before exiting. `$$$$` is `$$` after ctrlinit's interpolation. Their parents exit at
/// once, so they are reparented to ctrlinit; the spawner itself stays (its run's end would stop
/// them, as it stops everything a run started).
const DAEMONS: &str = r#"
[program.spawner]
command = ["/bin/sh", "-c", "for i in 1 2 3 4 5; do (setsid /bin/sh -c 'echo $$$$ >> {dir}/orphans; while [ ! -e {dir}/go ]; do sleep 0.02; done' &); done; exec sleep 1000"]
"#;

#[test]
fn not_pid1_registers_as_subreaper_and_reaps_orphans() {
    let mut init = init().without_namespace().file("a.toml", DAEMONS).start();
    init.wait_for_line("registered as child subreaper");
    init.wait_for_line("spawner: starting -> running");
    let orphans: Vec<i32> = wait_for_lines_in(&init.dir().join("orphans"), 5)
        .iter()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    // Their parents exited: they were reparented to ctrlinit, not to the machine's init.
    for &pid in &orphans {
        wait_until(
            &format!("orphan {pid} to be reparented to ctrlinit {}", init.pid),
            DEADLINE,
            || (ppid_of(pid)? == init.pid).then_some(()),
        );
    }
    std::fs::write(init.dir().join("go"), "").unwrap();
    // Every orphan exits; ctrlinit reaps each (a zombie stays in its parent's children list):
    // the spawner is its only child left.
    let spawner = init.pid_of("spawner").expect("the spawner runs") as i32;
    wait_until(
        "ctrlinit's children to be the spawner alone",
        DEADLINE,
        || (children_of(init.pid) == [spawner]).then_some(()),
    );
    for &pid in &orphans {
        let reaped = !alive(pid) || ppid_of(pid) != Some(init.pid);
        assert!(reaped, "orphan {pid} is still ctrlinit's child");
    }
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn control_a_pid1_that_never_waits_leaves_zombies() {
    // Same orphans, but PID 1 of the namespace is `sleep`, which never reaps: the zombie check
    // the other tests rely on must see them.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let script = format!(
        "for i in 1 2 3; do (/bin/sh -c 'while [ ! -e {d}/go ]; do sleep 0.02; done; exit 0' &); done; \
         touch {d}/spawned; exec sleep 60"
    );
    let mut unshare = Command::new("unshare")
        .args([
            "--pid",
            "--fork",
            "--mount-proc",
            "--kill-child",
            "/bin/sh",
            "-c",
        ])
        .arg(&script)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let unshare_pid = unshare.id();
    let pid1: i32 = wait_until("the namespace's PID 1", DEADLINE, || {
        let text =
            std::fs::read_to_string(format!("/proc/{unshare_pid}/task/{unshare_pid}/children"))
                .ok()?;
        text.split_whitespace().next()?.parse().ok()
    });
    wait_for_file(&dir.path().join("spawned"));
    wait_until("PID 1 to be sleep", DEADLINE, || {
        (proc_status_field(pid1, "Name")? == "sleep").then_some(())
    });
    std::fs::write(dir.path().join("go"), "").unwrap();
    // Zombies of PID 1 (a `sleep 0.02` of an orphan can be a zombie for a moment too, until its
    // own parent reaps it: those do not count).
    let zombies = wait_until("PID 1's zombies to appear", DEADLINE, || {
        let z: Vec<i32> = pids_in_namespace_of(pid1)
            .into_iter()
            .filter(|&p| proc_state(p) == Some('Z') && ppid_of(p) == Some(pid1))
            .collect();
        (z.len() == 3).then_some(z)
    });
    // They stay: PID 1 never waits (a reaping PID 1 would make this fail within the deadline).
    assert!(zombies.iter().all(|&z| proc_state(z) == Some('Z')));
    send_signal(pid1, libc::SIGKILL);
    let _ = unshare.wait();
}

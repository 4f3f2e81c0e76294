//! No escaped processes: whatever a program's processes do with sessions and process groups
//! (`setsid`, a double fork, `nohup … &`), they stay its own until they exit. Stopping or
//! restarting the program stops all of them, so restarts leak nothing; `status` counts them.
//! Each test runs in both tracking modes: cgroup (a cgroup v2 group per program, where ctrlinit
//! can make one) and marker (the fallback: an inherited environment marker, as in a default
//! Docker container). Processes that belong to no program are reaped, and with
//! `[init] orphans = "kill"` also stopped after a grace period.

mod common;

use std::time::Duration;

use common::*;

/// A service that leaves three processes behind outside its process group (setsid, a double
/// fork into a new session, nohup in the background of a subshell), each writing its namespace
/// pid to `{dir}/escaped`, then waits. `$$$$` is `$$` after ctrlinit's interpolation.
const LEAKER: &str = r#"
[program.leaker]
command = ["/bin/sh", "-c", "setsid sh -c 'echo $$$$ >> {dir}/escaped; exec sleep 1001' & (setsid sh -c 'echo $$$$ >> {dir}/escaped; exec sleep 1002' &) ; (nohup setsid sh -c 'echo $$$$ >> {dir}/escaped; exec sleep 1003' >/dev/null 2>&1 &) ; exec sleep 1000"]
stop_timeout = "2s"
backoff = { initial = "0s" }
"#;

/// The tracking modes to run each test in: "cgroup" only where this machine lets ctrlinit make
/// cgroups (the test says so when it cannot), "marker" always.
fn modes() -> Vec<&'static str> {
    vec!["cgroup", "marker"]
}

fn start(mode: &str, conf: &str) -> Init {
    let mut b = init().file("a.toml", conf);
    if mode == "marker" {
        b = b.env("CTRLINIT_TRACKING", "marker");
    }
    let init = b.start();
    let tracked = init.wait_for_line("programs' processes are tracked by");
    if mode == "cgroup" && !tracked.contains("by cgroup") {
        eprintln!("cgroup tracking is not available here: {tracked}");
    }
    init
}

/// The host pids of the escaped processes of the current run (`n` of them written so far).
fn escaped(init: &Init, n: usize) -> Vec<i32> {
    let lines = wait_for_lines_in(&init.dir().join("escaped"), n);
    lines[n - 3..n]
        .iter()
        .map(|l| {
            let ns: i32 = l.trim().parse().unwrap();
            wait_until("the escaped pid's host pid", DEADLINE, || {
                host_pid(init, ns)
            })
        })
        .collect()
}

/// Waits until none of `pids` is alive (zombies count as gone: ctrlinit reaps them).
fn wait_gone(pids: &[i32], what: &str) {
    wait_until(what, DEADLINE, || {
        pids.iter()
            .all(|&p| !alive(p) || proc_state(p) == Some('Z'))
            .then_some(())
    });
}

#[test]
fn stopping_a_program_stops_the_processes_that_left_its_group() {
    for mode in modes() {
        let init = start(mode, LEAKER);
        let pids = escaped(&init, 3);
        // They did leave the group, and still count as the program's.
        let leaker = init.program_json("leaker");
        let group = leaker["pgid"].as_i64().unwrap();
        let listed: Vec<i64> = leaker["pids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_i64().unwrap())
            .collect();
        assert_eq!(leaker["processes"], 4, "{mode}: {leaker}");
        assert_eq!(listed.len(), 4, "{mode}: {leaker}");
        assert_eq!(leaker["tracking"], mode_shown(&init, mode), "{mode}");
        if leaker["tracking"] == "cgroup" {
            // Its group says what it used, when asked: a plain `status` reads no usage (a few
            // files a program, issue 21).
            assert!(leaker["cpu_usec"].is_null(), "{mode}: {leaker}");
            let used = init.program_usage_json("leaker");
            assert!(used["cpu_usec"].is_u64(), "{mode}: {used}");
            assert_eq!(used["processes"], 4, "{mode}: {used}");
        }
        let (code, table) = init.ctl(&["status"]);
        assert_eq!(code, 0, "{table}");
        assert!(table.contains("PROCS"), "{table}");
        for &p in &pids {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap();
            let pgrp: i64 = stat
                .rsplit(") ")
                .next()
                .unwrap()
                .split(' ')
                .nth(2)
                .unwrap()
                .parse()
                .unwrap();
            assert_ne!(
                pgrp as i32,
                host_pid(&init, group as i32).unwrap(),
                "{mode}: pid {p} is still in the group"
            );
        }
        let (code, out) = init.ctl(&["stop", "leaker"]);
        assert_eq!(code, 0, "{mode}: {out}");
        wait_gone(
            &pids,
            &format!("{mode}: the escaped processes to be stopped"),
        );
        init.wait_states(&["leaker=stopped"]);
        // Nothing of the program is left in the namespace.
        assert!(
            init.namespace_pids().is_empty(),
            "{mode}: {:?}",
            init.namespace_pids()
        );
    }
}

/// How `status --json` names the mode this init chose.
fn mode_shown(init: &Init, mode: &str) -> &'static str {
    let line = init.wait_for_line("programs' processes are tracked by");
    if mode == "cgroup" && line.contains("by cgroup") {
        "cgroup"
    } else {
        "marker"
    }
}

#[test]
fn restarts_leak_nothing() {
    for mode in modes() {
        let init = start(mode, LEAKER);
        let mut runs = Vec::new();
        for k in 1..=4 {
            let pids = escaped(&init, 3 * k);
            runs.push(pids.clone());
            let main = init.pid_of("leaker").unwrap() as i32;
            // A crash (its main process killed) and a restart by hand, in turn.
            if k % 2 == 1 {
                assert!(send_signal(host_pid(&init, main).unwrap(), libc::SIGKILL));
            } else {
                let (code, out) = init.ctl(&["restart", "leaker"]);
                assert_eq!(code, 0, "{mode}: {out}");
            }
            wait_gone(
                &pids,
                &format!("{mode}: run {k}'s escaped processes to end"),
            );
        }
        escaped(&init, 15);
        // The fifth run's main process and its three escapees: nothing more.
        wait_until(
            &format!("{mode}: 4 processes in the namespace"),
            DEADLINE,
            || (init.namespace_pids().len() == 4).then_some(()),
        );
        // (`status` looks at processes at most once a second while nothing changes state.)
        wait_until(
            &format!("{mode}: status counts 4 processes"),
            DEADLINE,
            || (init.program_json("leaker")["processes"] == 4).then_some(()),
        );
    }
}

#[test]
fn a_oneshot_run_ends_with_what_it_left_behind_stopped() {
    // A provisioning step that starts a daemon in the background and exits: the daemon is part
    // of the run, so it is stopped when the run ends (as systemd does for a oneshot's cgroup),
    // instead of living on unsupervised.
    for mode in modes() {
        let init = start(
            mode,
            r#"
[program.provision]
type = "oneshot"
command = ["/bin/sh", "-c", "setsid sh -c 'echo $$$$ > {dir}/daemon; exec sleep 1000' & while [ ! -s {dir}/daemon ]; do sleep 0.01; done; exit 0"]
"#,
        );
        // The daemon was there (it wrote its pid); once the run is over, nothing is left.
        wait_for_lines_in(&init.dir().join("daemon"), 1);
        init.wait_states(&["provision=completed"]);
        init.wait_for_line("provision: stopping -> completed");
        wait_until(&format!("{mode}: an empty namespace"), DEADLINE, || {
            init.namespace_pids().is_empty().then_some(())
        });
    }
}

#[test]
fn strays_of_no_program_are_reaped_and_killed_only_when_asked() {
    // A process that escapes the tracking (markers only, no cgroups: it left its group and
    // emptied its environment) is a stray. With orphans = "kill" it is stopped once it has
    // been one for orphan_grace; by default it is left alone (and reaped when it exits).
    for (policy, killed) in [("kill", true), ("reap", false)] {
        let conf = format!(
            r#"
[init]
orphans = "{policy}"
orphan_grace = "300ms"

[program.spawner]
command = ["/bin/sh", "-c", "(setsid env -i /bin/sh -c 'echo $$$$ > {{dir}}/stray; exec sleep 1000' &); exec sleep 1000"]
"#
        );
        let init = init()
            .env("CTRLINIT_TRACKING", "marker")
            .file("a.toml", &conf)
            .start();
        let stray = init.wait_for_pid_file("stray");
        if killed {
            init.wait_for_line("stopping stray pid");
            wait_gone(&[stray], "the stray to be stopped");
            assert!(alive(
                host_pid(&init, init.pid_of("spawner").unwrap() as i32).unwrap()
            ));
        } else {
            // Long past the grace, it lives (what other programs do is not ctrlinit's to undo).
            let spawner = init.pid_of("spawner").unwrap() as i32;
            let (code, out) = init.ctl(&["restart", "spawner"]);
            assert_eq!(code, 0, "{out}");
            wait_until("the spawner's new run", DEADLINE, || {
                init.pid_of("spawner").filter(|&p| p as i32 != spawner)
            });
            std::thread::sleep(Duration::from_millis(600));
            assert!(alive(stray), "the stray lives with orphans = \"reap\"");
            assert_eq!(init.count_lines("stopping stray pid"), 0);
        }
    }
}

#[test]
fn cgroup_mode_reports_what_each_program_uses() {
    // A shell that builds a 16 MB variable (CPU for `tr`, memory it keeps) and holds it.
    const HOG: &str = r#"
[program.hog]
command = ["/bin/sh", "-c", "x=$(head -c 16000000 /dev/zero | tr '\\0' a); touch {dir}/held; while :; do sleep 600; done"]
"#;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    for mode in modes() {
        let started = std::time::Instant::now();
        let init = start(mode, HOG);
        wait_for_file(&init.dir().join("held"));
        if mode_shown(&init, mode) == "marker" {
            let hog = init.program_usage_json("hog");
            assert!(hog["cpu_usec"].is_null(), "{mode}: {hog}");
            assert!(hog["memory_bytes"].is_null(), "{mode}: {hog}");
            continue;
        }
        // Claimed: the numbers must be there. (`status` looks at most once a second while
        // nothing changes state, so an early look may predate the work.)
        let line = init.wait_for_line("programs' processes are tracked by cgroup (");
        let base = line.split("cgroup (").nth(1).unwrap().trim_end_matches(')');
        let has_memory = std::path::Path::new(base)
            .join("hog/memory.current")
            .exists();
        let seen = wait_until_soft(DEADLINE, || {
            let hog = init.program_usage_json("hog");
            let memory_ok = !has_memory || hog["memory_bytes"].as_u64() > Some(8_000_000);
            (hog["cpu_usec"].as_u64() >= Some(1000) && memory_ok).then_some(hog)
        });
        let hog = seen.unwrap_or_else(|| {
            panic!(
                "cgroup mode without its numbers (memory controller: {has_memory}): {}",
                init.program_usage_json("hog")
            )
        });
        let cpu = hog["cpu_usec"].as_u64().unwrap();
        let most = started.elapsed().as_micros() as u64 * cpus;
        assert!(cpu <= most, "{cpu} µs of CPU in {most} µs × CPUs: {hog}");
        if has_memory {
            let bytes = hog["memory_bytes"].as_u64().unwrap();
            assert!(bytes < 1 << 30, "{bytes} bytes: {hog}");
        } else {
            assert!(hog["memory_bytes"].is_null(), "{hog}");
            eprintln!("no memory controller in {base}: memory_bytes not checked");
        }
    }
}

/// A program that makes a cgroup below its own and moves a process there (in a session of its
/// own, so out of the program's process group too), as a container runtime or another init
/// does. `$$` is `$` after ctrlinit's interpolation.
/// Makes a sub-group two deep below its own and starts a process in a session of its own
/// there. That process moves itself before it writes its pid, so a pid in the file is one in
/// place: moved by its parent (`echo $! > cgroup.procs`) it was not, when `setsid` forked (as
/// it does when it leads its process group) and the parent moved the one that exits.
const NESTER: &str = r#"
[program.nester]
command = ["/bin/sh", "-c", "m=$$(grep ' - cgroup2 ' /proc/self/mountinfo | head -n1 | cut -d' ' -f5); g=$$m$$(sed -n 's/^0:://p' /proc/self/cgroup); mkdir -p $$g/inner/deeper; echo $$g > {dir}/group; export g; setsid sh -c 'echo $$$$ > $$g/inner/deeper/cgroup.procs; echo $$$$ >> {dir}/inner.pid; exec sleep 1001' & exec sleep 1000"]
stop_timeout = "2s"
"#;

#[test]
fn cgroup_mode_stops_and_removes_the_groups_a_program_made_below_its_own() {
    let init = start("cgroup", NESTER);
    if mode_shown(&init, "cgroup") != "cgroup" {
        return;
    }
    // The namespace's mounts, as ctrlinit sees them.
    let root = format!("/proc/{}/root", init.pid);
    for k in 1..=3 {
        let inner = wait_until("the nested process", DEADLINE, || {
            let lines = file_lines(&init.dir().join("inner.pid"));
            let ns: i32 = lines.get(k - 1)?.trim().parse().ok()?;
            host_pid(&init, ns)
        });
        let group = wait_for_text(&init.dir().join("group"));
        let deeper = std::path::PathBuf::from(format!("{root}{}/inner/deeper", group.trim()));
        wait_until("the nested process in its sub-group", DEADLINE, || {
            std::fs::read_to_string(deeper.join("cgroup.procs"))
                .ok()
                .filter(|procs| procs.split_whitespace().any(|p| p == inner.to_string()))
        });
        // It counts as the program's (`status` looks again at most once a second).
        wait_until("status to list the nested process", DEADLINE, || {
            let listed = init.program_json("nester")["pids"].clone();
            (listed.as_array().map(Vec::len) == Some(2)).then_some(())
        });
        let (code, out) = init.ctl(&["stop", "nester"]);
        assert_eq!(code, 0, "{out}");
        init.wait_states(&["nester=stopped"]);
        wait_gone(&[inner], "the process in the sub-group to be stopped");
        // Its folders went with it, deepest first.
        wait_until("the sub-groups to be removed", DEADLINE, || {
            (!deeper.exists() && !deeper.parent().unwrap().exists()).then_some(())
        });
        assert!(
            init.namespace_pids().is_empty(),
            "run {k} leaked: {:?}",
            init.namespace_pids()
        );
        std::fs::remove_file(init.dir().join("group")).unwrap();
        let (code, out) = init.ctl(&["start", "nester"]);
        assert_eq!(code, 0, "{out}");
    }
}

/// Checks and hooks that start a background job: readiness (`sleep 1003`), liveness every
/// 100 ms (`sleep 1001`), `pre_stop` (`sleep 1002`) and `finish` (`sleep 1004`); the first
/// liveness check and `pre_stop` also one in a session of its own (`sleep 1005`, `sleep 1006`),
/// which only their own marker can find (each waits until its job has its own session).
/// `$$$$` is `$$` after ctrlinit's interpolation.
const JOBBER: &str = r#"
[program.jobber]
command = ["sleep", "1000"]
ready = { exec = ["/bin/sh", "-c", "sleep 1003 & echo r >> {dir}/ready.runs; exit 0"], interval = "50ms" }
pre_stop = ["/bin/sh", "-c", "setsid sh -c 'echo $$$$ > {dir}/s1006; exec sleep 1006' & until [ -s {dir}/s1006 ]; do sleep 0.01; done; sleep 1002 & echo p >> {dir}/hooks; exit 0"]
finish = ["/bin/sh", "-c", "sleep 1004 & echo f >> {dir}/hooks; exit 0"]
stop_timeout = "2s"
[program.jobber.health]
check = { exec = ["/bin/sh", "-c", "[ -e {dir}/once ] || { touch {dir}/once; setsid sh -c 'echo $$$$ > {dir}/s1005; exec sleep 1005' & until [ -s {dir}/s1005 ]; do sleep 0.01; done; }; sleep 1001 & echo c >> {dir}/checks; exit 0"] }
interval = "100ms"
"#;

/// How many `sleep SECONDS` processes run in `init`'s namespace (zombies not counted).
fn sleeps(init: &Init, seconds: &str) -> usize {
    init.namespace_pids()
        .into_iter()
        .filter(|&p| proc_state(p).is_some_and(|s| s != 'Z'))
        .filter(|&p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c == format!("sleep\0{seconds}\0").as_bytes())
        })
        .count()
}

#[test]
fn checks_and_hooks_leave_nothing_behind() {
    for mode in modes() {
        let init = start(mode, JOBBER);
        init.wait_states(&["jobber=running"]);
        // Five liveness checks have run: what each left ended with it (one may be between its
        // check's end and its reaping).
        wait_for_lines_in(&init.dir().join("checks"), 5);
        wait_until(
            &format!("{mode}: the checks' jobs to end with them"),
            DEADLINE,
            || {
                (sleeps(&init, "1001") <= 1
                    && sleeps(&init, "1003") == 0
                    && sleeps(&init, "1005") == 0)
                    .then_some(())
            },
        );
        let (code, out) = init.ctl(&["stop", "jobber"]);
        assert_eq!(code, 0, "{mode}: {out}");
        init.wait_states(&["jobber=stopped"]);
        wait_for_lines_in(&init.dir().join("hooks"), 2);
        wait_until(
            &format!("{mode}: nothing of the program, its checks or hooks left"),
            DEADLINE,
            || {
                let left = init.namespace_pids();
                left.is_empty().then_some(())
            },
        );
    }
}

/// Every liveness check (each 200 ms), `pre_stop` and `finish` start a job in a session of its
/// own (`setsid sleep … &`), and the program is restarted by hand a few times.
const SESSION_JOBS: &str = r#"
[program.sj]
command = ["sleep", "1000"]
pre_stop = ["/bin/sh", "-c", "setsid sleep 1012 & echo p >> {dir}/hooks; exit 0"]
finish = ["/bin/sh", "-c", "setsid sleep 1013 & echo f >> {dir}/hooks; exit 0"]
stop_timeout = "2s"
[program.sj.health]
check = { exec = ["/bin/sh", "-c", "setsid sleep 1011 & echo c >> {dir}/checks; exit 0"] }
interval = "200ms"
"#;

#[test]
fn a_check_or_hook_that_starts_a_job_in_its_own_session_ends_it_when_it_ends() {
    for mode in modes() {
        let init = start(mode, SESSION_JOBS);
        init.wait_states(&["sj=running"]);
        // Ten checks ran: at most the last one's job is left (between its end and its reaping),
        // not one a check.
        wait_for_lines_in(&init.dir().join("checks"), 10);
        wait_until(
            &format!("{mode}: each check's job to end with it"),
            DEADLINE,
            || (sleeps(&init, "1011") <= 1).then_some(()),
        );
        for k in 1..=3 {
            let (code, out) = init.ctl(&["restart", "sj"]);
            assert_eq!(code, 0, "{mode}: {out}");
            wait_for_lines_in(&init.dir().join("hooks"), 2 * k);
            init.wait_states(&["sj=running"]);
        }
        wait_until(
            &format!("{mode}: the hooks' jobs to end with them"),
            DEADLINE,
            || (sleeps(&init, "1012") == 0 && sleeps(&init, "1013") == 0).then_some(()),
        );
        assert!(sleeps(&init, "1011") <= 1, "{mode}");
    }
}

//! The descriptor limit (issue 21, item 13): a configuration that cannot fit under ctrlinit's
//! `RLIMIT_NOFILE` is refused before any program starts (exit 2, with the count, the limit and
//! the fix), one that fits exactly runs every program (the soft limit raised to the hard one
//! first), and a reload that would not fit is refused and changes nothing.
//!
//! The figures: a default program costs 3 descriptors (two output pipes and its log file; its
//! cgroup's `cgroup.events` is open only while an ended run drains), one with
//! `stderr = "stdout"` 2; ctrlinit keeps 160 for itself.

mod common;

use std::time::Duration;

use common::*;

/// `n` programs named `p0…`, each leaving `{dir}/started/NAME` as it starts, then sleeping;
/// `log`: their `[program.NAME.log]` table's lines, if any.
fn programs(first: usize, n: usize, log: &str) -> String {
    (first..first + n)
        .map(|i| {
            let log = if log.is_empty() {
                String::new()
            } else {
                format!("[program.p{i}.log]\n{log}\n")
            };
            format!(
                "[program.p{i}]\ncommand = [\"/bin/sh\", \"-c\", \"touch {{dir}}/started/p{i}; exec sleep 1000\"]\n{log}\n"
            )
        })
        .collect()
}

fn started(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("started")).map_or(0, |d| d.count())
}

#[test]
fn a_config_that_cannot_fit_is_refused_before_anything_starts() {
    let builder = init()
        .prlimit("--nofile=400:400")
        .file("a.toml", &programs(0, 100, ""));
    std::fs::create_dir_all(builder.dir().join("started")).unwrap();
    let mut init = builder.start();
    let code = init.wait_exit(DEADLINE);
    let out = init.output();
    assert_eq!(code, 2, "{out}");
    // 100 × 3 + 160: how many, the limit, and the fix.
    assert!(
        out.contains("100 programs need up to 460 open descriptors"),
        "{out}"
    );
    assert!(out.contains("(RLIMIT_NOFILE) is 400"), "{out}");
    assert!(out.contains("--ulimit nofile=460"), "{out}");
    assert!(out.contains("not starting anything"), "{out}");
    assert_eq!(started(init.dir()), 0, "no program may start: {out}");
}

#[test]
fn a_config_that_fits_exactly_runs_every_program_and_a_reload_past_it_is_refused() {
    // The soft limit is far too low; the hard one is exactly what 100 programs need: ctrlinit
    // raises its soft limit and every program runs, without one EMFILE.
    let builder = init()
        .prlimit("--nofile=256:460")
        .file("a.toml", &programs(0, 100, ""));
    std::fs::create_dir_all(builder.dir().join("started")).unwrap();
    let init = builder.start();
    wait_until("the control socket", DEADLINE, || {
        init.socket.exists().then_some(())
    });
    wait_until("100 programs running", Duration::from_secs(60), || {
        let all = init.status_json();
        (all.len() == 100 && all.iter().all(|p| p["state"] == "running")).then_some(())
    });
    // `running` is said once the exec succeeded; each shell's `touch` may come a moment later
    // (seen with both cores busy: 33 of 100 at the first look).
    wait_until(
        "100 programs' first command",
        Duration::from_secs(60),
        || (started(init.dir()) == 100).then_some(()),
    );
    let out = init.output();
    assert!(
        !out.contains("EMFILE") && !out.contains("Too many open files"),
        "{out}"
    );

    // One more program would need 463: refused, nothing changes.
    write_conf(&init, "b.toml", &programs(100, 1, ""));
    let (code, answer) = init.ctl(&["reload"]);
    assert_ne!(code, 0, "{answer}");
    assert!(
        answer.contains("101 programs need up to 463 open descriptors"),
        "{answer}"
    );
    assert!(answer.contains("(RLIMIT_NOFILE) is 460"), "{answer}");
    assert_eq!(init.status_json().len(), 100);
    assert!(!init.dir().join("started/p100").exists());

    // The same program on one pipe for both streams costs 2: 462 is still too many. Once the
    // 100 have no log files (2 each), the 101 fit.
    write_conf(&init, "b.toml", &programs(100, 1, "stderr = \"stdout\""));
    let (code, answer) = init.ctl(&["reload"]);
    assert_ne!(code, 0, "{answer}");
    assert!(answer.contains("need up to 462"), "{answer}");
    write_conf(&init, "a.toml", &programs(0, 100, "file = false"));
    let (code, answer) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{answer}");
    wait_for_file(&init.dir().join("started/p100"));
}

#[test]
fn stderr_on_stdout_shares_one_pipe_and_keeps_the_order() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.both]
command = ["/bin/sh", "-c", "echo one; echo two >&2; echo three; exec sleep 1000"]
[program.both.log]
stderr = "stdout"
"#,
        )
        .start();
    init.wait_for_line("both");
    let log = init.dir().join("log/both.log");
    let lines = wait_for_lines_in(&log, 3);
    assert_eq!(lines, vec!["one", "two", "three"], "in the order written");
    // Every line is stdout's on the console: no `!` mark.
    init.wait_for_line("| two");
    assert_eq!(init.count_lines("! two"), 0, "{}", init.output());
    // The program's fds 1 and 2 are one pipe.
    let pid = init.pid_of("both").unwrap();
    let host = host_pid(&init, pid as i32).unwrap();
    let one = std::fs::read_link(format!("/proc/{host}/fd/1")).unwrap();
    let two = std::fs::read_link(format!("/proc/{host}/fd/2")).unwrap();
    assert_eq!(one, two);
    assert!(one.to_string_lossy().starts_with("pipe:"), "{one:?}");
}

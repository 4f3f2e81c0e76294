//! Crash artifacts against the real binary as PID 1 (issue 3): a program killed by SIGSEGV or
//! SIGABRT gets a JSON report (and, with `core_dumps = true`, its core moved next to it) in
//! `<crash_dir>/<program>/`, and retention caps hold in a crash loop.
//!
//! This machine's core_pattern is `core` (relative): cores land in the program's working
//! directory, so every crashing program here gets its own `workdir`.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Files of `dir` ending with `.ext`, sorted by name (names start with a UTC stamp: age order).
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Waits for the one report of `program` and returns its path and contents.
fn wait_report(init: &Init, program: &str) -> (PathBuf, serde_json::Value) {
    let dir = init.dir().join("crash").join(program);
    let path = wait_until(&format!("a crash report of {program}"), DEADLINE, || {
        files(&dir, "json").into_iter().next()
    });
    // The file is written in one go; parse it once it is complete.
    let v = wait_until("a complete report", DEADLINE, || {
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(&path).ok()?).ok()
    });
    (path, v)
}

/// `<UTC stamp>-<pid>-<SIGNAME>.json`: returns (stamp, pid, signal).
fn parse_name(path: &Path) -> (String, i64, String) {
    let name = path.file_stem().unwrap().to_str().unwrap().to_string();
    let mut parts = name.rsplitn(3, '-');
    let sig = parts.next().unwrap().to_string();
    let pid = parts.next().unwrap().parse().unwrap();
    let stamp = parts.next().unwrap().to_string();
    (stamp, pid, sig)
}

fn check_report(path: &Path, v: &serde_json::Value, program: &str, signal: &str, core: bool) {
    let (stamp, pid, sig) = parse_name(path);
    assert_eq!(sig, signal, "{}", path.display());
    assert!(
        stamp.starts_with("20") && stamp.ends_with('Z'),
        "UTC stamp: {stamp}"
    );
    assert_eq!(v["program"], program, "{v}");
    assert_eq!(v["pid"], pid, "{v}");
    assert_eq!(v["signal"], signal, "{v}");
    assert_eq!(v["core_dumped"], core, "{v}");
    assert!(
        v["command"].as_array().is_some_and(|c| !c.is_empty()),
        "{v}"
    );
    assert!(v["uptime_ms"].is_u64(), "{v}");
    assert!(v["restarts"].is_u64(), "{v}");
    assert!(v["last_lines"].is_array(), "{v}");
}

fn last_lines(v: &serde_json::Value) -> Vec<String> {
    v["last_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_segfault_with_core_dumps_on_gives_a_report_and_the_core() {
    let b = init();
    let work = b.dir().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let init = b
        .file(
            "a.toml",
            r#"
[program.seg]
command = ["/bin/sh", "-c", "echo last words; echo on stderr >&2; kill -SEGV $$$$"]
core_dumps = true
workdir = "{dir}/work"
restart = "never"
"#,
        )
        .start();
    let (path, v) = wait_report(&init, "seg");
    check_report(&path, &v, "seg", "SIGSEGV", true);
    let lines = last_lines(&v);
    assert!(lines.iter().any(|l| l.ends_with("last words")), "{v}");
    assert!(lines.iter().any(|l| l.ends_with("on stderr")), "{v}");
    // The core sits next to the report, with the same name.
    let core = path.with_extension("core");
    wait_until("the core next to the report", DEADLINE, || {
        core.is_file().then_some(())
    });
    assert!(std::fs::metadata(&core).unwrap().len() > 0);
    assert_eq!(
        core_pid(&core),
        Some(parse_name(&path).1),
        "the core is the crashed process's"
    );
    assert_eq!(v["core"], core.display().to_string(), "{v}");
    assert_eq!(files(&init.dir().join("crash/seg"), "core"), vec![core]);
    // It was moved, not copied: nothing is left in the working directory.
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in workdir: {left:?}");
    // The status shows it.
    let (_, out) = init.ctl(&["status", "--json", "seg"]);
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s[0]["last_exit"]["signal"], "SIGSEGV", "{out}");
    assert_eq!(s[0]["last_exit"]["core_dumped"], true, "{out}");
}

#[test]
fn an_abort_with_core_dumps_on_gives_a_report_and_the_core() {
    let b = init();
    std::fs::create_dir_all(b.dir().join("work")).unwrap();
    let init = b
        .file(
            "a.toml",
            r#"
[program.ab]
command = ["/usr/bin/python3", "-c", "import os; print('about to abort', flush=True); os.abort()"]
core_dumps = true
workdir = "{dir}/work"
restart = "never"
"#,
        )
        .start();
    let (path, v) = wait_report(&init, "ab");
    check_report(&path, &v, "ab", "SIGABRT", true);
    assert!(
        last_lines(&v).iter().any(|l| l.ends_with("about to abort")),
        "{v}"
    );
    let core = path.with_extension("core");
    wait_until("the core next to the report", DEADLINE, || {
        core.is_file().then_some(())
    });
    assert_eq!(v["core"], core.display().to_string(), "{v}");
}

#[test]
fn with_cores_off_a_segfault_gives_the_report_only() {
    let b = init();
    let work = b.dir().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let init = b
        .file(
            "a.toml",
            r#"
[program.seg]
command = ["/bin/sh", "-c", "echo goodbye; kill -SEGV $$$$"]
workdir = "{dir}/work"
restart = "never"

[program.ab]
command = ["/usr/bin/python3", "-c", "import os; print('adieu', flush=True); os.abort()"]
workdir = "{dir}/work"
restart = "never"
"#,
        )
        .start();
    for (name, sig, word) in [("seg", "SIGSEGV", "goodbye"), ("ab", "SIGABRT", "adieu")] {
        let (path, v) = wait_report(&init, name);
        check_report(&path, &v, name, sig, false);
        assert!(v["core"].is_null(), "{v}");
        assert!(last_lines(&v).iter().any(|l| l.ends_with(word)), "{v}");
        assert!(files(&init.dir().join("crash").join(name), "core").is_empty());
    }
    // RLIMIT_CORE was 0: no core anywhere.
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in workdir: {left:?}");
}

#[test]
fn a_report_carries_the_last_fifty_lines() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.talk]
command = ["/bin/sh", "-c", "seq 1 500; kill -SEGV $$$$"]
restart = "never"
"#,
        )
        .start();
    let (path, v) = wait_report(&init, "talk");
    check_report(&path, &v, "talk", "SIGSEGV", false);
    let lines = last_lines(&v);
    assert_eq!(lines.len(), 50, "{v}");
    let numbers: Vec<String> = lines
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect();
    let expected: Vec<String> = (451..=500).map(|i| i.to_string()).collect();
    assert_eq!(numbers, expected, "{v}");
}

/// The pid recorded inside an ELF core file (NT_PRPSINFO's `pr_pid`, as the dumping process saw
/// itself: its pid in ctrlinit's namespace). x86_64/aarch64 layout of `struct elf_prpsinfo`.
fn core_pid(path: &Path) -> Option<i64> {
    let data = std::fs::read(path).ok()?;
    let u16_at = |o: usize| Some(u16::from_le_bytes(data.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(data.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(data.get(o..o + 8)?.try_into().ok()?));
    if data.get(..5)? != b"\x7fELF\x02" {
        return None;
    }
    let (phoff, phentsize, phnum) = (
        u64_at(0x20)? as usize,
        u16_at(0x36)? as usize,
        u16_at(0x38)?,
    );
    for i in 0..phnum as usize {
        let ph = phoff + i * phentsize;
        if u32_at(ph)? != 4 {
            continue; // not PT_NOTE
        }
        let (off, size) = (u64_at(ph + 8)? as usize, u64_at(ph + 32)? as usize);
        let mut at = off;
        while at + 12 <= off + size {
            let (namesz, descsz, kind) = (
                u32_at(at)? as usize,
                u32_at(at + 4)? as usize,
                u32_at(at + 8)?,
            );
            let desc = at + 12 + namesz.div_ceil(4) * 4;
            if kind == 3 {
                // NT_PRPSINFO: 4 chars, pad, u64 pr_flag, u32 uid, u32 gid, then i32 pr_pid.
                return Some(
                    i32::from_le_bytes(data.get(desc + 24..desc + 28)?.try_into().ok()?) as i64,
                );
            }
            at = desc + descsz.div_ceil(4) * 4;
        }
    }
    None
}

/// A crash loop (`max_restarts = 5`: six runs, no backoff); each run writes its pid to `runs`
/// and says `run PID` before it segfaults. Returns the init, the runs' pids and the crash dir
/// once the last run's report is written and the program is stopped.
fn crash_loop(
    init_table: &str,
    program_extra: &str,
    before_crash: &str,
) -> (Init, Vec<i64>, PathBuf) {
    let b = init();
    std::fs::create_dir_all(b.dir().join("work")).unwrap();
    let init = b
        .file(
            "a.toml",
            &format!(
                r#"
{init_table}
[program.loop]
command = ["/bin/sh", "-c", "echo $$$$ >> {{dir}}/runs; echo run $$$$; {before_crash} kill -SEGV $$$$"]
core_dumps = true
workdir = "{{dir}}/work"
backoff = {{ initial = "0s", max = "0s" }}
max_restarts = 5
on_exhausted = "stop"
{program_extra}
"#
            ),
        )
        .start();
    // on_exhausted = "stop" leaves it stopped after the sixth run.
    let (code, out) = init.ctl(&["status", "--wait", "loop=stopped", "--timeout", "20s"]);
    assert_eq!(code, 0, "{out}");
    let runs: Vec<i64> = file_lines(&init.dir().join("runs"))
        .iter()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(runs.len(), 6, "max_restarts = 5 allows six runs");
    let dir = init.dir().join("crash/loop");
    let last = runs[5];
    wait_until("the last run's report", DEADLINE, || {
        files(&dir, "json")
            .iter()
            .any(|p| parse_name(p).1 == last)
            .then_some(())
    });
    (init, runs, dir)
}

fn retention(init_table: &str, program_extra: &str) {
    let (init, runs, dir) = crash_loop(init_table, program_extra, "");
    // Retention runs right after each report is written: wait for the last one's to settle
    // (for a moment a new file stands next to those it will push out).
    let deadline = std::time::Instant::now() + DEADLINE;
    let (reports, cores) = loop {
        let (reports, cores) = (files(&dir, "json"), files(&dir, "core"));
        let pids: Vec<i64> = reports.iter().map(|p| parse_name(p).1).collect();
        if pids == runs[4..] && cores.len() <= 1 {
            break (reports, cores);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "max_reports = 2 (the two newest, runs {:?}) and max_cores = 1 do not hold: \
             reports {reports:?}, cores {cores:?}",
            &runs[4..]
        );
        std::thread::park_timeout(std::time::Duration::from_millis(10));
    };
    assert_eq!(reports.len(), 2);
    assert!(cores.len() <= 1);
    // Cores that were not kept are not left lying around in the working directory either.
    let left: Vec<_> = std::fs::read_dir(init.dir().join("work"))
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "left in workdir: {left:?}");
    // Each kept report is about its own run.
    for r in &reports {
        let v = json(r);
        assert_eq!(v["signal"], "SIGSEGV");
        let pid = parse_name(r).1;
        assert!(
            last_lines(&v)
                .iter()
                .any(|l| l.ends_with(&format!("run {pid}"))),
            "{v}"
        );
    }
}

#[test]
fn retention_caps_per_program_hold_in_a_crash_loop() {
    retention("", "max_reports = 2\nmax_cores = 1");
}

#[test]
fn retention_caps_from_init_hold_in_a_crash_loop() {
    retention("[init]\nmax_reports = 2\nmax_cores = 1", "");
}

#[test]
fn in_a_crash_loop_each_report_gets_its_own_core() {
    // With room for every artifact, every run dumped core (the kernel says so), so every report
    // must have the core of *its* process next to it: the pid inside the core file is the pid
    // in the report's name. Each run leaves a grandchild (in its own session, so it outlives the
    // process group) holding its pipes for a while: reports wait (bounded) for the pipes to drain
    // while restarts go on without waiting, so run N+1 dumps its core before run N's report is
    // written. With core_pattern "core", every run dumps to the same `<workdir>/core`.
    let (_init, runs, dir) = crash_loop(
        "",
        "max_reports = 10\nmax_cores = 10",
        // The grandchild marks its escape from the process group before the run crashes.
        "setsid sh -c 'touch {dir}/held.$1; exec sleep 2' x $$$$ & \
         while [ ! -e {dir}/held.$$$$ ]; do :; done;",
    );
    let reports = wait_until("six reports", DEADLINE, || {
        let reports = files(&dir, "json");
        (reports.len() == 6).then_some(reports)
    });
    let mut problems = Vec::new();
    for (r, run) in reports.iter().zip(&runs) {
        let v = json(r);
        let pid = parse_name(r).1;
        assert_eq!(pid, *run);
        assert_eq!(v["core_dumped"], true, "{v}");
        let core = r.with_extension("core");
        match core_pid(&core) {
            Some(p) if p == pid && v["core"] == core.display().to_string() => {}
            found => problems.push(format!(
                "report of pid {pid}: core field {}, note {}, core file holds pid {found:?}",
                v["core"], v["core_note"]
            )),
        }
    }
    assert!(
        problems.is_empty(),
        "cores attributed wrongly:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_core_over_the_limits_is_not_kept_and_its_report_says_so() {
    // max_cores = 0: every core is removed at once; so is one that alone passes the total cap
    // (a shell's core is larger than 64 KiB; six reports are not).
    for (init_table, program_extra) in [
        ("", "max_cores = 0"),
        ("[init]\ncrash_max_size = \"64KiB\"", ""),
    ] {
        let (_init, runs, dir) = crash_loop(init_table, program_extra, "");
        let last = runs[5];
        let report = files(&dir, "json")
            .into_iter()
            .find(|p| parse_name(p).1 == last)
            .expect("the last run's report");
        let v = json(&report);
        assert!(v["core_dumped"].as_bool().unwrap(), "{v}");
        assert!(
            v["core"].is_null(),
            "the report points at a removed core: {v}"
        );
        assert!(
            v["core_note"].as_str().unwrap().contains("removed at once"),
            "{v}"
        );
        assert!(
            files(&dir, "core").is_empty(),
            "{init_table}{program_extra}"
        );
    }
}

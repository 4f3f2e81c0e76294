//! The run ledger (issue 25): `ledger.jsonl` in the log directory, written by the real binary
//! as PID 1 of a fresh PID namespace, read back by the next boot and by `ctrlinit history`; and
//! hostile ledger files, at the init's side and at history's.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;

fn ledger_lines(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("ledger.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn count_kind(lines: &[serde_json::Value], kind: &str) -> usize {
    lines.iter().filter(|v| v["kind"] == kind).count()
}

fn history(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .arg("history")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const CRASHER: &str = r#"
[program.flaky]
command = ["/bin/sh", "-c", "sleep 0.1; exit 3"]
max_restarts = 1000
backoff = { initial = "50ms", max = "50ms" }
"#;

#[test]
fn a_crash_loop_then_a_clean_stop_is_in_the_ledger_and_in_history() {
    let mut init = init().file("a.toml", CRASHER).start();
    let log = init.dir().join("log");
    wait_until("three crashes in the ledger", DEADLINE, || {
        let l = ledger_lines(&log);
        (l.iter()
            .filter(|v| v["kind"] == "exit" && v["cause"] == "crash")
            .count()
            >= 3)
            .then_some(())
    });
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let lines = ledger_lines(&log);
    assert_eq!(lines[0]["kind"], "boot", "{lines:?}");
    assert!(count_kind(&lines, "start") >= 3);
    assert!(count_kind(&lines, "restart") >= 3, "{lines:#?}");
    let exit = lines.iter().find(|v| v["kind"] == "exit").unwrap();
    assert_eq!(exit["code"], 3);
    assert_eq!(exit["program"], "flaky");
    let end = lines.last().unwrap();
    assert_eq!(end["kind"], "end", "{lines:?}");
    assert_eq!(end["exit_status"], 0);
    let mode = std::fs::metadata(log.join("ledger.jsonl"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0o040 & 0o077 & mode, "private mode: {mode:o}");

    let ledger = log.join("ledger.jsonl");
    let (code, out, err) = history(&["--ledger", ledger.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let h: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(h["boots"][0]["ended"], "clean", "{out}");
    let flaky = &h["programs"][0];
    assert_eq!(flaky["program"], "flaky");
    assert!(flaky["exits"]["crash"].as_u64().unwrap() >= 3, "{out}");
    assert!(flaky["mtbf_ms"].as_u64().is_some(), "{out}");
    let (code, text, _) = history(&["--ledger", ledger.to_str().unwrap(), "--program", "flaky"]);
    assert_eq!(code, 0);
    assert!(text.contains("clean, status 0"), "{text}");
    assert!(text.contains("crash="), "{text}");
}

#[test]
fn after_a_sigkill_the_next_boot_says_unclean_to_the_log_status_and_oneshots() {
    let mut first = init()
        .file("a.toml", "[program.svc]\ncommand = [\"sleep\", \"1000\"]\n")
        .start();
    let log = first.dir().join("log");
    wait_until("svc started in the ledger", DEADLINE, || {
        (count_kind(&ledger_lines(&log), "start") >= 1).then_some(())
    });
    first.signal("KILL");
    first.wait_exit(DEADLINE);

    let second = init()
        .env("CTRLINIT_LOG_DIR", log.to_str().unwrap())
        .file(
            "a.toml",
            r#"
[program.prov]
type = "oneshot"
command = ["/bin/sh", "-c", "echo \"$CTRLINIT_PREVIOUS_BOOT ${CTRLINIT_PREVIOUS_EXIT_STATUS:-none}\" > {dir}/prev"]
"#,
        )
        .start();
    second.wait_for_line("ended uncleanly");
    let prev = wait_for_text(&second.dir().join("prev"));
    assert_eq!(prev.trim(), "unclean none");
    let (code, status) = second.ctl(&["status"]);
    assert!(
        status.contains("previous boot: ended UNCLEANLY"),
        "status exited {code}: {status}"
    );
    let ledger = log.join("ledger.jsonl");
    let (_, out, _) = history(&["--ledger", ledger.to_str().unwrap(), "--json"]);
    let h: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(h["boots"][0]["ended"], "unclean", "{out}");
    assert_eq!(h["boots"][1]["ended"], "open", "{out}");
    let (_, only_last, _) = history(&[
        "--ledger",
        ledger.to_str().unwrap(),
        "--json",
        "--boots",
        "1",
    ]);
    let h: serde_json::Value = serde_json::from_str(&only_last).unwrap();
    assert_eq!(h["boots"].as_array().unwrap().len(), 1);
}

#[test]
fn a_clean_end_is_told_to_the_next_boot_with_its_status() {
    let mut first = init()
        .file("a.toml", "[program.svc]\ncommand = [\"sleep\", \"1000\"]\n")
        .start();
    let log = first.dir().join("log");
    first.wait_for_line("svc: starting -> running");
    first.signal("TERM");
    first.wait_exit(DEADLINE);
    let second = init()
        .env("CTRLINIT_LOG_DIR", log.to_str().unwrap())
        .file(
            "a.toml",
            "[program.prov]\ntype = \"oneshot\"\ncommand = [\"/bin/sh\", \"-c\", \"echo $CTRLINIT_PREVIOUS_BOOT $CTRLINIT_PREVIOUS_EXIT_STATUS > {dir}/prev\"]\n",
        )
        .start();
    assert_eq!(wait_for_text(&second.dir().join("prev")).trim(), "clean 0");
}

#[test]
fn the_ledger_rotates_by_size_and_history_reads_every_file() {
    let conf = format!("[init]\nledger_max_size = \"4KiB\"\n{CRASHER}");
    let mut init = init().file("a.toml", &conf).start();
    let log = init.dir().join("log");
    wait_until("the ledger to rotate twice", DEADLINE * 3, || {
        log.join("ledger.jsonl.2").exists().then_some(())
    });
    init.signal("TERM");
    init.wait_exit(DEADLINE);
    for f in ["ledger.jsonl", "ledger.jsonl.1", "ledger.jsonl.2"] {
        let len = std::fs::metadata(log.join(f)).unwrap().len();
        assert!(len <= 4096, "{f}: {len}");
    }
    let ledger = log.join("ledger.jsonl");
    let (code, out, err) = history(&["--ledger", ledger.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let h: serde_json::Value = serde_json::from_str(&out).unwrap();
    let in_current = count_kind(&ledger_lines(&log), "start") as u64;
    assert!(
        h["programs"][0]["starts"].as_u64().unwrap() > in_current,
        "{out}"
    );
    assert_eq!(h["skipped_lines"], 0);
}

/// A ledger planted where the init would write: a link, a FIFO, another user's file; `after`
/// looks at the log directory once the init has stopped.
fn hostile_init(plant: impl FnOnce(&Path), says: &str, after: impl FnOnce(&Path)) {
    let b = init().file("a.toml", "[program.svc]\ncommand = [\"sleep\", \"1000\"]\n");
    let log = b.dir().join("log");
    std::fs::create_dir_all(&log).unwrap();
    plant(&log.join("ledger.jsonl"));
    let mut init = b.start();
    init.wait_for_line(says);
    init.wait_for_line("svc: starting -> running");
    let (code, status) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{status}");
    assert!(!status.contains("previous boot"), "{status}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    after(&log);
}

#[test]
fn the_init_never_writes_through_a_planted_link_fifo_or_foreign_file() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("precious");
    std::fs::write(&target, "keep").unwrap();
    let t = target.clone();
    hostile_init(
        move |p| std::os::unix::fs::symlink(&t, p).unwrap(),
        "symbolic link, which ctrlinit does not follow",
        |_| {},
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");

    hostile_init(
        |p| nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap(),
        "it is a FIFO, not a regular file; no ledger for this boot",
        |_| {},
    );
    hostile_init(
        |p| {
            std::fs::write(p, "theirs\n").unwrap();
            std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
        },
        "owned by uid 65534",
        |log| {
            let left = std::fs::read_to_string(log.join("ledger.jsonl")).unwrap();
            assert_eq!(left, "theirs\n");
        },
    );
}

#[test]
fn a_ledger_full_of_garbage_is_appended_to_after_a_line_of_its_own() {
    let b = init().file("a.toml", CRASHER);
    let log = b.dir().join("log");
    std::fs::create_dir_all(&log).unwrap();
    std::fs::write(log.join("ledger.jsonl"), "garbage\n\u{0}\u{1}{\"torn\":").unwrap();
    let mut init = b.start();
    init.wait_for_line("how the previous boot ended is unknown");
    wait_until("a start in the ledger", DEADLINE, || {
        (count_kind(&ledger_lines(&log), "start") >= 1).then_some(())
    });
    init.signal("TERM");
    init.wait_exit(DEADLINE);
    let (code, out, _) = history(&[
        "--ledger",
        log.join("ledger.jsonl").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0);
    let h: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(h["skipped_lines"], 2, "{out}");
    assert_eq!(h["boots"][0]["ended"], "clean", "{out}");
}

#[test]
fn history_refuses_a_fifo_a_link_a_foreign_or_huge_file_and_counts_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let run = |path: &Path| history(&["--ledger", path.to_str().unwrap()]);

    nix::unistd::mkfifo(&p("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let (code, _, err) = run(&p("fifo"));
    assert_eq!(code, 1);
    assert!(err.contains("it is a FIFO, not a regular file"), "{err}");

    std::fs::write(p("real"), "").unwrap();
    std::os::unix::fs::symlink(p("real"), p("link")).unwrap();
    let (code, _, err) = run(&p("link"));
    assert_eq!(code, 1);
    assert!(err.contains("symbolic link"), "{err}");

    std::fs::write(p("theirs"), "").unwrap();
    std::os::unix::fs::chown(p("theirs"), Some(65534), Some(65534)).unwrap();
    let (code, _, err) = run(&p("theirs"));
    assert_eq!(code, 1);
    assert!(err.contains("owned by uid 65534"), "{err}");

    let huge = std::fs::File::create(p("huge")).unwrap();
    huge.set_len(300 << 20).unwrap();
    let (code, _, err) = run(&p("huge"));
    assert_eq!(code, 1);
    assert!(err.contains("over the limit"), "{err}");

    let (code, _, err) = run(&p("missing"));
    assert_eq!(code, 1);
    assert!(err.contains("cannot read the run ledger"), "{err}");

    // A rotated copy that cannot be read is skipped and said; garbage lines are counted.
    let good = r#"{"t":"2026-12-03T13:00:00.000Z","boot":"b1","kind":"start","program":"a","run":1,"pid":7}"#;
    std::fs::write(p("l.jsonl"), format!("junk\n{good}\n{{\"t\":1}}\n")).unwrap();
    nix::unistd::mkfifo(
        &p("l.jsonl.1"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let (code, out, err) = run(&p("l.jsonl"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 lines skipped"), "{out}");
    assert!(err.contains("skipped") && err.contains("FIFO"), "{err}");
    let _ = Duration::ZERO;
}

/// A oneshot that writes what it is told of the previous boot to `{dir}/prev`.
const PREV: &str = r#"
[program.prov]
type = "oneshot"
command = ["/bin/sh", "-c", "echo \"B$CTRLINIT_PREVIOUS_BOOT S$CTRLINIT_PREVIOUS_EXIT_STATUS\" > {dir}/prev"]
"#;

/// Starts a boot on the ledger in `log` and returns what its oneshot was told.
fn next_boot_says(log: &Path) -> String {
    let next = init()
        .env("CTRLINIT_LOG_DIR", log.to_str().unwrap())
        .file("a.toml", PREV)
        .start();
    wait_for_text(&next.dir().join("prev")).trim().to_string()
}

#[test]
fn a_crash_moments_before_the_stop_comes_before_the_end_and_the_next_boot_says_clean() {
    // The program asks for the stop and aborts at once: its crash report is still being
    // written when the way down ends.
    let mut first = init()
        .file(
            "a.toml",
            "[program.ab]\ncommand = [\"/bin/sh\", \"-c\", \"trap '' TERM; sleep 0.3; kill -TERM 1; kill -ABRT $$$$\"]\nrestart = \"never\"\n",
        )
        .start();
    let log = first.dir().join("log");
    first.wait_exit(DEADLINE);
    let lines = ledger_lines(&log);
    assert_eq!(count_kind(&lines, "crash"), 1, "{lines:#?}");
    assert_eq!(lines.last().unwrap()["kind"], "end", "{lines:#?}");
    assert_eq!(next_boot_says(&log), "Bclean S0");
}

#[test]
fn a_spent_budget_then_exit_75_is_a_clean_end_with_its_status() {
    let mut first = init()
        .file(
            "a.toml",
            "[program.ab]\ncommand = [\"/bin/sh\", \"-c\", \"kill -ABRT $$$$\"]\nmax_restarts = 1\nbackoff = { initial = \"10ms\", max = \"10ms\" }\n",
        )
        .start();
    let log = first.dir().join("log");
    assert_eq!(first.wait_exit(DEADLINE), 75);
    let lines = ledger_lines(&log);
    assert_eq!(lines.last().unwrap()["kind"], "end", "{lines:#?}");
    assert_eq!(next_boot_says(&log), "Bclean S75");
}

#[test]
fn a_tail_that_cannot_be_read_is_unknown_never_an_older_copys_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    std::fs::create_dir_all(&log).unwrap();
    let end = r#"{"t":"2026-12-03T13:00:00.000Z","boot":"b0","kind":"end","reason":"SIGTERM","exit_status":0,"shutdown_ms":1}"#;
    std::fs::write(log.join("ledger.jsonl.1"), format!("{end}\n")).unwrap();
    // A host crash left the newest file's end as zeros.
    std::fs::write(log.join("ledger.jsonl"), vec![0u8; 8192]).unwrap();
    assert_eq!(next_boot_says(&log), "Bunknown S");
    // An empty newest file beside a rotated copy: unknown too, not the copy's clean end.
    let log2 = dir.path().join("log2");
    std::fs::create_dir_all(&log2).unwrap();
    std::fs::write(log2.join("ledger.jsonl.1"), format!("{end}\n")).unwrap();
    std::fs::write(log2.join("ledger.jsonl"), "").unwrap();
    assert_eq!(next_boot_says(&log2), "Bunknown S");
}

#[test]
fn a_refused_ledger_tells_oneshots_unknown() {
    let b = init().file("a.toml", PREV);
    let log = b.dir().join("log");
    std::fs::create_dir_all(&log).unwrap();
    nix::unistd::mkfifo(
        &log.join("ledger.jsonl"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let init = b.start();
    init.wait_for_line("no ledger for this boot");
    assert_eq!(wait_for_text(&init.dir().join("prev")).trim(), "Bunknown S");
}

/// Unmounts the tmpfs at its path when the test ends, however it ends.
struct Tmpfs(std::path::PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_record_cut_by_a_full_disk_does_not_take_the_next_one_with_it() {
    let b = init().file("a.toml", CRASHER);
    let log = b.dir().join("log");
    std::fs::create_dir_all(&log).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&log)
        .status()
        .unwrap();
    assert!(mounted.success());
    let _umount = Tmpfs(log.clone());
    let mut init = b.start();
    wait_until("records in the ledger", DEADLINE, || {
        (count_kind(&ledger_lines(&log), "start") >= 2).then_some(())
    });
    // Fill the disk: the ledger's next record that passes its last page is cut short.
    let filler = log.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        while f.write_all(&[b'x'; 1024]).is_ok() {}
    }
    init.wait_for_line("ledger.jsonl: No space left");
    std::fs::remove_file(&filler).unwrap();
    init.wait_for_line("ledger.jsonl: writing works again");
    let before = count_kind(&ledger_lines(&log), "exit");
    wait_until("more records after the disk had room", DEADLINE, || {
        (count_kind(&ledger_lines(&log), "exit") >= before + 2).then_some(())
    });
    init.signal("TERM");
    init.wait_exit(DEADLINE);
    let text = std::fs::read_to_string(log.join("ledger.jsonl")).unwrap();
    for line in text.lines() {
        assert!(
            line.matches("{\"t\":").count() <= 1,
            "a cut record took the next one with it: {line}"
        );
    }
    assert_eq!(ledger_lines(&log).last().unwrap()["kind"], "end");
}

#[test]
fn history_shows_each_programs_last_failures_and_escapes_what_records_say() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let esc = "\\u001b]0;pwned\\u0007\\u001b[2J";
    let rec = |t: &str, rest: &str| {
        format!(r#"{{"t":"2026-12-03T13:00:0{t}.000Z","boot":"b1{esc}",{rest}}}"#)
    };
    let lines = [
        rec(
            "0",
            &format!(
                r#""kind":"boot","version":"1","config_hash":"0","hostname":"h{esc}","pid1":true,"previous":"first""#
            ),
        ),
        rec(
            "1",
            r#""kind":"exit","program":"crasher","run":1,"signal":"SIGSEGV","cause":"crash","uptime_ms":5"#,
        ),
        rec(
            "2",
            r#""kind":"exit","program":"crasher","run":2,"code":3,"cause":"crash","uptime_ms":5"#,
        ),
        rec(
            "3",
            &format!(
                r#""kind":"exit","program":"evil{esc}","run":1,"signal":"SIG{esc}","cause":"crash","uptime_ms":5"#
            ),
        ),
        rec(
            "4",
            &format!(r#""kind":"end","reason":"bye{esc}","exit_status":0,"shutdown_ms":1"#),
        ),
    ];
    std::fs::write(&ledger, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = history(&["--ledger", ledger.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("\\e]0;pwned\\x07\\e[2J"), "{out}");
    assert!(out.contains("LAST FAILURES"), "{out}");
    assert!(
        out.contains("2026-12-03T13:00:01.000Z killed by SIGSEGV (crash); 2026-12-03T13:00:02.000Z exit status 3 (crash)"),
        "{out}"
    );
}

#[test]
fn history_reads_the_ledger_of_the_init_at_the_socket_named_and_says_which_file() {
    let init = init()
        .file("a.toml", "[program.svc]\ncommand = [\"sleep\", \"1000\"]\n")
        .start();
    init.wait_for_line("svc: starting -> running");
    // Another run's ledger at the default path.
    let other = tempfile::tempdir().unwrap();
    let rec = r#"{"t":"2026-12-03T13:00:00.000Z","boot":"another-run","kind":"start","program":"x","run":1,"pid":7}"#;
    std::fs::write(other.path().join("ledger.jsonl"), format!("{rec}\n")).unwrap();
    let run = |socket: &Path, json: bool| {
        let mut cmd = Command::new(bin());
        cmd.arg("--socket").arg(socket).arg("history");
        if json {
            cmd.arg("--json");
        }
        let out = cmd.env("CTRLINIT_LOG_DIR", other.path()).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let h: serde_json::Value = serde_json::from_str(&run(&init.socket, true)).unwrap();
    let mine = init.dir().join("log").join("ledger.jsonl");
    assert_eq!(h["ledger"], mine.to_str().unwrap(), "{h}");
    assert_ne!(h["boots"][0]["boot"], "another-run", "{h}");
    assert_eq!(h["programs"][0]["program"], "svc", "{h}");
    // No init answers: the default path, and the first line says so.
    let text = run(&init.dir().join("nobody.sock"), false);
    let first = text.lines().next().unwrap();
    assert!(
        first.contains(other.path().join("ledger.jsonl").to_str().unwrap())
            && first.contains("no init answered"),
        "{text}"
    );
}

#[test]
fn history_streams_the_ledger_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    // About 60 MiB of records over two files: read whole (and every record kept), more than
    // the address space allowed below; streamed, a few MiB.
    let pad = "p".repeat(200);
    let mut text = String::new();
    for i in 0..150_000u64 {
        text.push_str(&format!(
            "{{\"t\":\"2026-12-03T13:00:00.000Z\",\"boot\":\"b1\",\"kind\":\"exit\",\"program\":\"p{}\",\"run\":{i},\"signal\":\"SIG{pad}\",\"cause\":\"crash\",\"uptime_ms\":1}}\n",
            i % 7
        ));
    }
    std::fs::write(dir.path().join("ledger.jsonl.1"), &text).unwrap();
    std::fs::write(&ledger, &text).unwrap();
    let out = Command::new("prlimit")
        .arg("--as=134217728")
        .arg(bin())
        .args(["history", "--json", "--ledger"])
        .arg(&ledger)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let h: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(h["records"], 300_000, "{stdout}");
    assert_eq!(h["programs"].as_array().unwrap().len(), 7);
}

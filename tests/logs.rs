//! Program output against the real binary as PID 1 (issue 3): console prefixing and JSON framing
//! with programs writing at once, nothing lost when a writer is SIGKILLed, size rotation, partial
//! and over-long lines, separate stderr files, a blocked console that must not stall the
//! supervisor, and SIGUSR1 reopening.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Console prefix of a program: its name padded to the common width (the longest configured
/// name, at least "ctrlinit"), then `|` for stdout or `!` for stderr.
fn prefix(name: &str, width: usize, stderr: bool) -> String {
    format!("{name:<width$} {} ", if stderr { '!' } else { '|' })
}

/// Writes an executable script into `dir` and returns its path.
fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Bytes of a file (empty when missing).
fn read_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

/// The state of `name` from `status --json`.
fn state_of(init: &Init, name: &str) -> Option<serde_json::Value> {
    let (code, out) = init.ctl(&["status", "--json", name]);
    if code != 0 && code != 3 {
        return None;
    }
    let list: serde_json::Value = serde_json::from_str(&out).ok()?;
    list.as_array()?.first().cloned()
}

const FILLER: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

#[test]
fn prefixed_console_lines_of_two_programs_never_interleave() {
    // Two programs write 20,000 lines each at the same time, one to stdout, one to stderr.
    let n = 20_000;
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.alpha]
command = ["/usr/bin/seq", "-f", "alpha-%06g-{FILLER}", "1", "{n}"]
restart = "never"

[program.b]
command = ["/bin/sh", "-c", "seq -f 'b-%06g-{FILLER}' 1 {n} >&2"]
restart = "never"
"#
            ),
        )
        .start();
    let width = 8; // "ctrlinit" is the longest name
    let pa = prefix("alpha", width, false);
    let pb = prefix("b", width, true);
    let last_a = format!("{pa}alpha-{n:06}-{FILLER}");
    let last_b = format!("{pb}b-{n:06}-{FILLER}");
    wait_until("both programs' last console lines", DEADLINE, || {
        (init.count_lines(&last_a) == 1 && init.count_lines(&last_b) == 1).then_some(())
    });
    let lines = init.lines();
    let (mut next_a, mut next_b) = (1, 1);
    for line in &lines {
        if line.starts_with("ctrlinit | ") || line.starts_with("ctrlinit: ") {
            // ctrlinit's own lines carry exactly one prefix and no program output.
            assert!(
                !line.contains(FILLER),
                "program output inside an own line: {line:?}"
            );
            continue;
        }
        if let Some(rest) = line.strip_prefix(&pa) {
            assert_eq!(
                rest,
                format!("alpha-{next_a:06}-{FILLER}"),
                "alpha line broken"
            );
            next_a += 1;
        } else if let Some(rest) = line.strip_prefix(&pb) {
            assert_eq!(rest, format!("b-{next_b:06}-{FILLER}"), "b line broken");
            next_b += 1;
        } else {
            panic!("a console line without a known prefix: {line:?}");
        }
    }
    assert_eq!(
        (next_a - 1, next_b - 1),
        (n, n),
        "every line once, in order"
    );
}

#[test]
fn json_console_lines_of_two_programs_each_parse() {
    let n = 20_000;
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[init]
console = "json"

[program.alpha]
command = ["/usr/bin/seq", "-f", "alpha-%06g-\"quoted\"-\\-{FILLER}", "1", "{n}"]
restart = "never"

[program.b]
command = ["/bin/sh", "-c", "seq -f 'b-%06g-{FILLER}' 1 {n} >&2"]
restart = "never"
"#
            ),
        )
        .start();
    let last_a = format!("alpha-{n:06}-");
    let last_b = format!("b-{n:06}-");
    wait_until("both programs' last console lines", DEADLINE, || {
        (init.count_lines(&last_a) == 1 && init.count_lines(&last_b) == 1).then_some(())
    });
    let lines = init.lines();
    let (mut next_a, mut next_b, mut own) = (1, 1, 0);
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("console line is not one JSON object ({e}): {line:?}"));
        assert!(
            v["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
        let text = v["line"]
            .as_str()
            .unwrap_or_else(|| panic!("no line: {line}"));
        match v["program"].as_str() {
            Some("alpha") => {
                assert_eq!(v["stream"], "stdout", "{line}");
                assert_eq!(text, format!("alpha-{next_a:06}-\"quoted\"-\\-{FILLER}"));
                next_a += 1;
            }
            Some("b") => {
                assert_eq!(v["stream"], "stderr", "{line}");
                assert_eq!(text, format!("b-{next_b:06}-{FILLER}"));
                next_b += 1;
            }
            Some("ctrlinit") => own += 1,
            other => panic!("unexpected program {other:?} in {line}"),
        }
    }
    assert_eq!(
        (next_a - 1, next_b - 1),
        (n, n),
        "every line once, in order"
    );
    assert!(own > 0, "ctrlinit's own lines are JSON too");
}

#[test]
fn two_hundred_thousand_lines_survive_a_sigkill_right_after_writing() {
    let n = 200_000;
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.burst]
command = ["/bin/sh", "-c", "seq 1 {n}; kill -9 $$$$"]
restart = "never"
"#
            ),
        )
        .start();
    let log = init.dir().join("log/burst.log");
    wait_until("burst to be killed", DEADLINE, || {
        let s = state_of(&init, "burst")?;
        (s["state"] == "exited").then_some(s)
    });
    let s = state_of(&init, "burst").unwrap();
    assert_eq!(s["last_exit"]["signal"], "SIGKILL", "{s}");
    let expected: String = (1..=n).map(|i| format!("{i}\n")).collect();
    let text = wait_until("every line in burst.log", DEADLINE, || {
        let text = String::from_utf8(read_bytes(&log)).unwrap();
        (text.len() >= expected.len()).then_some(text)
    });
    // Exactly once and in order: the file is the sequence, byte for byte.
    if text != expected {
        let got: Vec<&str> = text.lines().collect();
        let first_bad = got
            .iter()
            .enumerate()
            .find(|(i, l)| **l != (i + 1).to_string())
            .map(|(i, l)| format!("line {} is {l:?}", i + 1));
        panic!(
            "burst.log differs: {} lines, first difference: {first_bad:?}",
            got.len()
        );
    }
    // The console got every line too (and the last one last).
    let p = prefix("burst", 8, false);
    let last = format!("{p}{n}");
    wait_until("the last line on the console", DEADLINE, || {
        (init.count_lines(&last) == 1).then_some(())
    });
    let console: Vec<String> = init
        .lines()
        .into_iter()
        .filter_map(|l| l.strip_prefix(&p).map(str::to_string))
        .collect();
    assert_eq!(console.len(), n, "console lines");
    assert!(
        console
            .iter()
            .enumerate()
            .all(|(i, l)| *l == (i + 1).to_string()),
        "console lines out of order or duplicated"
    );
}

#[test]
fn rotation_at_the_size_bound_keeps_the_configured_backups() {
    // 1,000 lines of exactly 100 bytes; files of 4 KiB hold 40 of them.
    let init = init()
        .file(
            "a.toml",
            &format!(
                r#"
[program.rot]
type = "oneshot"
command = ["/usr/bin/seq", "-f", "line-%05g-{}", "1", "1000"]

[program.rot.log]
max_size = "4KiB"
keep = 2
"#,
                "x".repeat(88)
            ),
        )
        .start();
    let line = |i: usize| format!("line-{i:05}-{}\n", "x".repeat(88));
    assert_eq!(line(1).len(), 100);
    let dir = init.dir().join("log");
    let current = dir.join("rot.log");
    wait_until("the last line in rot.log", DEADLINE, || {
        String::from_utf8(read_bytes(&current))
            .ok()?
            .ends_with(&line(1000))
            .then_some(())
    });
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("rot."))
        .collect();
    names.sort();
    assert_eq!(names, vec!["rot.log", "rot.log.1", "rot.log.2"], "keep = 2");
    let files: Vec<String> = ["rot.log.2", "rot.log.1", "rot.log"]
        .iter()
        .map(|n| String::from_utf8(read_bytes(&dir.join(n))).unwrap())
        .collect();
    for (name, text) in ["rot.log.2", "rot.log.1", "rot.log"].iter().zip(&files) {
        assert!(
            text.len() <= 4096,
            "{name} is {} bytes, over 4 KiB",
            text.len()
        );
        assert!(
            text.ends_with('\n'),
            "{name} does not end at a line boundary"
        );
        assert_eq!(text.len() % 100, 0, "{name} holds a broken line");
    }
    // Rotated files were filled up to the bound: one more line would have passed it.
    assert_eq!(files[0].len(), 4000, "rot.log.2");
    assert_eq!(files[1].len(), 4000, "rot.log.1");
    // Together they are the newest lines, contiguous, ending with the last.
    let all: String = files.concat();
    let count = all.len() / 100;
    let expected: String = (1001 - count..=1000).map(line).collect();
    assert_eq!(
        all, expected,
        "the backups and the file are the last {count} lines"
    );
}

#[test]
fn a_final_line_without_newline_is_flushed_at_eof() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.partial]
type = "oneshot"
command = ["/usr/bin/printf", "first\nno newline at the end"]
"#,
        )
        .start();
    let log = init.dir().join("log/partial.log");
    wait_until("the partial line in partial.log", DEADLINE, || {
        (read_bytes(&log) == b"first\nno newline at the end\n").then_some(())
    });
    let p = prefix("partial", 8, false);
    init.wait_for_line(&format!("{p}no newline at the end"));
    assert_eq!(init.count_lines(&format!("{p}first")), 1);
    // The ring has it too.
    let (code, out) = init.ctl(&["logs", "partial", "-n", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, format!("{p}no newline at the end\n"));
}

#[test]
fn an_over_long_line_is_split_without_losing_a_byte() {
    let b = init();
    let dir = b.dir();
    // 200,000 bytes without a newline, then "after".
    let writer = script(
        &dir,
        "long.py",
        "#!/usr/bin/python3\nimport sys\n\
         sys.stdout.write(''.join(chr(97 + i % 26) for i in range(200000)) + '\\nafter\\n')\n",
    );
    let init = b
        .file(
            "a.toml",
            &format!(
                "[program.long]\ntype = \"oneshot\"\ncommand = [\"{}\"]\n",
                writer.display()
            ),
        )
        .start();
    let original: String = (0..200_000)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let log = init.dir().join("log/long.log");
    let text = wait_until("'after' in long.log", DEADLINE, || {
        let text = String::from_utf8(read_bytes(&log)).ok()?;
        text.ends_with("\nafter\n").then_some(text)
    });
    let lines: Vec<&str> = text.lines().collect();
    let (pieces, last) = lines.split_at(lines.len() - 1);
    assert_eq!(last, ["after"]);
    assert!(
        pieces.len() >= 4,
        "200,000 bytes in pieces of at most 64 KiB"
    );
    for p in pieces {
        assert!(p.len() <= 64 * 1024, "a piece of {} bytes", p.len());
    }
    assert_eq!(
        pieces.concat(),
        original,
        "the pieces are the line, every byte"
    );
    // The console got the same pieces.
    let p = prefix("long", 8, false);
    init.wait_for_line(&format!("{p}after"));
    let console: String = init
        .lines()
        .iter()
        .filter_map(|l| l.strip_prefix(&p))
        .filter(|l| *l != "after")
        .collect();
    assert_eq!(console, original, "console pieces");
}

#[test]
fn stderr_separate_goes_to_its_own_file_and_merge_shares_one() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.sep]
type = "oneshot"
command = ["/bin/sh", "-c", "echo out-1; echo err-1 >&2; echo out-2; echo err-2 >&2"]

[program.sep.log]
stderr = "separate"

[program.mrg]
type = "oneshot"
command = ["/bin/sh", "-c", "echo out-1; echo err-1 >&2"]
"#,
        )
        .start();
    let dir = init.dir().join("log");
    let out = wait_for_lines_in(&dir.join("sep.log"), 2);
    let err = wait_for_lines_in(&dir.join("sep.err.log"), 2);
    let mrg = wait_for_lines_in(&dir.join("mrg.log"), 2);
    assert_eq!(out, vec!["out-1", "out-2"]);
    assert_eq!(err, vec!["err-1", "err-2"]);
    let mut mrg = mrg;
    mrg.sort();
    assert_eq!(mrg, vec!["err-1", "out-1"]);
    assert!(
        !dir.join("mrg.err.log").exists(),
        "merge writes no .err.log"
    );
    // On the console stderr lines are marked.
    init.wait_for_line(&format!("{}err-2", prefix("sep", 8, true)));
    init.wait_for_line(&format!("{}out-2", prefix("sep", 8, false)));
}

/// A ctrlinit (PID 1 of its own namespace) whose stdout is a pipe that nobody reads.
struct Stalled {
    child: Child,
    _stdout: ChildStdout,
    dir: tempfile::TempDir,
    socket: PathBuf,
    pid: i32,
}

impl Stalled {
    fn start(config: &str) -> Stalled {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("conf.d");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(
            conf.join("a.toml"),
            config.replace("{dir}", dir.path().to_str().unwrap()),
        )
        .unwrap();
        let socket = dir.path().join("ctrlinit.sock");
        let stderr = std::fs::File::create(dir.path().join("stderr")).unwrap();
        let mut child = Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc", "--kill-child"])
            .arg(bin())
            .arg("--config-dir")
            .arg(&conf)
            .env("CTRLINIT_SOCKET", &socket)
            .env("CTRLINIT_LOG", "debug")
            .env("CTRLINIT_LOG_DIR", dir.path().join("log"))
            .env("CTRLINIT_CRASH_DIR", dir.path().join("crash"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let unshare = child.id();
        let pid = wait_until("ctrlinit in its namespace", DEADLINE, || {
            std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"))
                .ok()?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        });
        Stalled {
            child,
            _stdout: stdout,
            dir,
            socket,
            pid,
        }
    }

    /// Bytes waiting in the unread console pipe.
    fn unread(&self) -> i32 {
        use std::os::fd::AsRawFd;
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int.
        unsafe { libc::ioctl(self._stdout.as_raw_fd(), libc::FIONREAD, &mut n) };
        n
    }

    /// Whether the console is stalled: the unread pipe holds a good part of its 64 KiB and one of
    /// ctrlinit's threads sleeps in a pipe write.
    fn console_blocked(&self) -> bool {
        self.unread() >= 32 * 1024
            && thread_states(self.pid)
                .iter()
                .any(|t| t.contains("pipe_write") && t.ends_with(" S"))
    }

    /// Runs a client command with a deadline; returns (code, stdout).
    fn ctl(&self, args: &[&str]) -> (i32, String, Duration) {
        let mut cmd = Command::new(bin());
        cmd.args(args).env("CTRLINIT_SOCKET", &self.socket);
        let t = Instant::now();
        let ran = run_with_deadline(cmd, Duration::from_secs(15));
        (ran.code, ran.all(), t.elapsed())
    }

    fn restarts(&self, name: &str) -> u64 {
        let (_, out, _) = self.ctl(&["status", "--json", name]);
        let v: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("status --json unreadable ({e}): {out}"));
        v[0]["restarts"].as_u64().unwrap()
    }
}

/// Name, wait channel and state of each thread of `pid` (for diagnostics).
fn thread_states(pid: i32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .map(|t| {
            let read = |f: &str| std::fs::read_to_string(t.path().join(f)).unwrap_or_default();
            let stat = read("stat");
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("");
            format!("{} {} {state}", read("comm").trim(), read("wchan"))
        })
        .collect()
}

impl Drop for Stalled {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let err = std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default();
            let own = std::fs::read_to_string(self.dir.path().join("log/ctrlinit.log"))
                .unwrap_or_default();
            let tail: Vec<&str> = own.lines().rev().take(60).collect();
            eprintln!(
                "---- ctrlinit stderr ----\n{err}\n---- ctrlinit.log (last lines, newest first) ----\n{}",
                tail.join("\n")
            );
        }
    }
}

#[test]
fn a_blocked_console_stalls_neither_restarts_nor_the_control_socket_nor_the_exit() {
    let mut init = Stalled::start(
        r#"
[program.chatty]
command = ["/usr/bin/yes", "chatty chatty chatty chatty chatty chatty chatty chatty"]

[program.crashy]
command = ["/bin/sh", "-c", "echo run >> {dir}/runs; echo crashy says hi; exit 1"]
backoff = { initial = "0s", max = "0s" }
max_restarts = 999999
"#,
    );
    // The console pipe fills up and stays full: a thread of ctrlinit is blocked writing to it.
    let deadline = Instant::now() + DEADLINE;
    while !init.console_blocked() {
        if Instant::now() > deadline {
            panic!(
                "the console never blocked: the pipe holds {} bytes after {DEADLINE:?}; \
                 ctrlinit's threads: {:?}",
                init.unread(),
                thread_states(init.pid)
            );
        }
        std::thread::park_timeout(Duration::from_millis(10));
    }
    // The chatty program itself is held up too (its lines wait for the console, then its pipe
    // fills): its log file stops growing. crashy's one line per run cannot reach the console
    // either.
    let chatty_log = init.dir.path().join("log/chatty.log");
    let mut last = 0;
    let mut steady = 0;
    wait_until(
        "chatty to be blocked (its log file stops growing)",
        DEADLINE,
        || {
            let len = std::fs::metadata(&chatty_log).map(|m| m.len()).unwrap_or(0);
            if len == last && len > 0 {
                steady += 1;
            } else {
                steady = 0;
                last = len;
            }
            (steady >= 10).then_some(())
        },
    );
    // Restarts go on.
    let runs_before = file_lines(&init.dir.path().join("runs")).len();
    let before = init.restarts("crashy");
    wait_until(
        "crashy to restart 20 more times",
        Duration::from_secs(10),
        || (init.restarts("crashy") >= before + 20).then_some(()),
    );
    assert!(file_lines(&init.dir.path().join("runs")).len() >= runs_before + 19);
    // The control socket answers, promptly.
    let (code, out, took) = init.ctl(&["status"]);
    assert!(code == 0 || code == 3, "status exit {code}: {out}");
    assert!(out.contains("chatty") && out.contains("crashy"), "{out}");
    assert!(took < Duration::from_secs(3), "status took {took:?}");
    let (code, out, _) = init.ctl(&["status", "--wait", "chatty=running", "--timeout", "5s"]);
    assert_eq!(code, 0, "{out}");
    // And the console really was blocked throughout.
    assert!(init.console_blocked(), "{:?}", thread_states(init.pid));
    assert!(common::alive(init.pid));
    // Nor does it keep the container from stopping.
    assert!(send_signal(init.pid, libc::SIGTERM));
    let status = wait_until(
        "ctrlinit to exit with its console blocked",
        DEADLINE,
        || init.child.try_wait().unwrap(),
    );
    assert_eq!(status.code(), Some(0), "{:?}", thread_states(init.pid));
}

#[test]
fn a_burst_of_ctrlinits_own_lines_reaches_the_console_whole() {
    // 150 programs start at once: 300 state lines in a burst while 150 children exec, then 300
    // more on the way down. A console thread that is merely behind (not blocked) gets every
    // one of them: none is dropped for want of room in its queue.
    const N: usize = 150;
    let mut text = String::new();
    for i in 0..N {
        text.push_str(&format!(
            "[program.p{i:03}]\ncommand = [\"/bin/sleep\", \"1000\"]\n"
        ));
    }
    let mut init = init().file("a.toml", &text).start();
    // `status` answers 0 once every program is up (the socket may not be there at first).
    wait_until("every program running", DEADLINE, || {
        (init.ctl(&["status"]).0 == 0).then_some(())
    });
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let out = init.output();
    assert!(!out.contains("were dropped"), "{out}");
    for transition in [
        "stopped -> starting",
        "starting -> running",
        "running -> stopping",
    ] {
        assert_eq!(init.count_lines(transition), N, "{transition}: {out}");
    }
    assert!(out.contains("exiting with status 0"), "{out}");
}

#[test]
fn sigusr1_reopens_a_log_file_that_was_moved_away() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.tick]
command = ["/bin/sh", "-c", "i=0; while :; do i=$((i+1)); echo tick-$i; sleep 0.01; done"]
"#,
        )
        .start();
    let dir = init.dir().join("log");
    let log = dir.join("tick.log");
    let moved = dir.join("tick.log.moved");
    wait_for_lines_in(&log, 5);
    std::fs::rename(&log, &moved).unwrap();
    init.signal("USR1");
    init.wait_for_line("reopened the log files");
    let fresh = wait_for_lines_in(&log, 5);
    let old = file_lines(&moved);
    // Together the two files hold the sequence: nothing lost, nothing twice.
    let all: Vec<String> = old.iter().chain(fresh.iter()).cloned().collect();
    let expected: Vec<String> = (1..=all.len()).map(|i| format!("tick-{i}")).collect();
    assert_eq!(all, expected);
    // ctrlinit's own log was reopened as well: it still exists at its path.
    assert!(dir.join("ctrlinit.log").exists());
}

#[test]
fn every_console_line_of_a_multi_line_own_message_is_prefixed() {
    // A refused reload logs every configuration error: several lines in one message. On the
    // console (what `docker logs` shows) each of them must still say who is talking.
    let init = init()
        .file(
            "a.toml",
            "[program.svc]\ncommand = [\"/bin/sleep\", \"1000\"]\n",
        )
        .start();
    init.wait_for_line("svc: starting -> running");
    std::fs::write(
        init.dir().join("conf.d/z.toml"),
        "[program.bad]\ncomand = [\"/bin/true\"]\n",
    )
    .unwrap();
    init.signal("HUP");
    init.wait_for_line("reload refused");
    init.wait_for_line("a program needs a command");
    let unprefixed: Vec<String> = init
        .lines()
        .into_iter()
        .filter(|l| !l.starts_with("ctrlinit | ") && !l.starts_with("svc      | "))
        .collect();
    assert!(
        unprefixed.is_empty(),
        "console lines without a prefix:\n{}",
        unprefixed.join("\n")
    );
}

#[test]
fn invalid_utf8_passes_through_to_the_file_and_is_escaped_in_json() {
    let init = init()
        .file(
            "a.toml",
            r#"
[init]
console = "json"

[program.bin]
type = "oneshot"
command = ["/usr/bin/printf", "\\377\\376raw\\n"]
"#,
        )
        .start();
    let log = init.dir().join("log/bin.log");
    wait_until("the line in bin.log", DEADLINE, || {
        (read_bytes(&log) == b"\xff\xferaw\n").then_some(())
    });
    let line = init.wait_for_line("raw");
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["program"], "bin");
    let text = v["line"].as_str().unwrap();
    assert!(
        text.ends_with("raw") && text.len() > 3,
        "the bytes are kept visible: {text:?}"
    );
    assert!(
        !text.contains('\u{fffd}'),
        "not silently replaced: {text:?}"
    );
}

#[test]
fn file_timestamps_are_an_option() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.ts]
type = "oneshot"
command = ["/bin/sh", "-c", "echo one; echo two"]

[program.ts.log]
timestamps = true

[program.plain]
type = "oneshot"
command = ["/bin/sh", "-c", "echo one; echo two"]
"#,
        )
        .start();
    let dir = init.dir().join("log");
    let ts = wait_for_lines_in(&dir.join("ts.log"), 2);
    for (line, word) in ts.iter().zip(["one", "two"]) {
        let (stamp, rest) = line.split_once(' ').unwrap();
        assert_eq!(rest, word);
        assert!(
            stamp.starts_with("20") && stamp.ends_with('Z') && stamp.contains('T'),
            "{line}"
        );
    }
    // Raw lines by default.
    assert_eq!(
        wait_for_lines_in(&dir.join("plain.log"), 2),
        vec!["one", "two"]
    );
}

#[test]
fn a_configured_log_dir_that_cannot_be_created_is_an_error_before_anything_starts() {
    let mut init = init()
        // The harness points the logs at the test directory; this test needs the config's own.
        .env("CTRLINIT_LOG_DIR", "")
        .file(
            "a.toml",
            r#"
[init]
log_dir = "/proc/no-such-dir/log"

[program.a]
command = ["/bin/sh", "-c", "touch {dir}/started; exec sleep 1000"]
"#,
        )
        .start();
    let code = init.wait_exit(DEADLINE);
    assert_ne!(code, 0, "{}", init.output());
    let out = init.output();
    assert!(
        out.contains("cannot use [init] log_dir /proc/no-such-dir/log") && out.contains("fix:"),
        "{out}"
    );
    assert!(!init.dir().join("started").exists(), "a program started");
}

//! Hostile input cannot take PID 1 down (issue 13): each config that once killed or hung ctrlinit
//! is now a clear error, both from `ctrlinit check` (exit 2, naming file, line and fix) and from
//! `ctrlinit reload` on a running container (refused; the programs keep their pids; the owner
//! loop keeps reaping and answers `status` promptly while the reload reads the files).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;

/// One hostile config: files for conf.d (`{dir}` is the test directory), what to make before
/// (FIFOs, sparse files), and what the error must say.
struct Case {
    name: &'static str,
    files: Vec<(&'static str, String)>,
    setup: fn(&Path),
    says: &'static [&'static str],
}

fn nothing(_: &Path) {}

/// Every hostile config, each run by `check` and by `reload`.
fn cases() -> Vec<Case> {
    [exec_cases(), file_cases(), value_cases(), name_cases()]
        .into_iter()
        .flatten()
        .collect()
}

/// What `execve` or a start would refuse: too long a string, too large an environment, an
/// env_file line that is not a variable.
fn exec_cases() -> Vec<Case> {
    vec![
        Case {
            name: "an env value of 200 KB",
            files: vec![(
                "z.toml",
                format!(
                    "[program.bigenv]\ncommand = [\"/bin/true\"]\n\n[program.bigenv.env]\nSMALL = \"1\"\nBIG = \"{}\"\n",
                    "v".repeat(200_000)
                ),
            )],
            setup: nothing,
            says: &[
                "z.toml:6: program.bigenv.env.BIG: the variable is 195 KiB long, over the kernel's limit of 128 KiB",
                "fix: put data this large in a file the program reads",
            ],
        },
        Case {
            name: "a command argument of 200 KB",
            files: vec![(
                "z.toml",
                format!(
                    "[program.bigarg]\ncommand = [\n  \"/bin/echo\",\n  \"{}\",\n]\n",
                    "a".repeat(200_000)
                ),
            )],
            setup: nothing,
            says: &[
                "z.toml:4: program.bigarg.command[1]: the argument is 195 KiB long, over the kernel's limit of 128 KiB",
                "fix: put data this large in a file the program reads",
            ],
        },
        Case {
            name: "150,000 small env keys (over the total the kernel allows)",
            files: vec![("z.toml", {
                let mut text = String::from(
                    "[program.wide]\ncommand = [\"/bin/true\"]\n\n[program.wide.env]\n",
                );
                for i in 0..150_000 {
                    text.push_str(&format!("K{i}=\"1\"\n"));
                }
                text
            })],
            setup: nothing,
            says: &[
                "z.toml:4: program.wide.env: its command line and environment take 2.5 MiB",
                "150000 variables), over the 1.5 MiB ctrlinit allows a program",
                "fix: set fewer or shorter variables",
            ],
        },
        Case {
            name: "an env_file with a line that is not KEY=VALUE",
            files: vec![(
                "z.toml",
                "[program.envf]\ncommand = [\"/bin/true\"]\nenv_file = \"{dir}/bad.env\"\n"
                    .to_string(),
            )],
            setup: |dir| std::fs::write(dir.join("bad.env"), "A=1\nnot a pair\n").unwrap(),
            says: &[
                "z.toml:3: program.envf.env_file: env_file ",
                "bad.env:2: expected KEY=VALUE, found \"not a pair\"",
                "fix: write each line as KEY=VALUE",
            ],
        },
        Case {
            name: "an env_file with a NUL byte",
            files: vec![(
                "z.toml",
                "[program.envnul]\ncommand = [\"/bin/true\"]\nenv_file = \"{dir}/nul.env\"\n"
                    .to_string(),
            )],
            setup: |dir| std::fs::write(dir.join("nul.env"), "A=x\0y\n").unwrap(),
            says: &[
                "z.toml:3: program.envnul.env_file: env_file ",
                "nul.env:1: not a variable a program can be given (an empty name or a NUL byte)",
                "fix: write each line as KEY=VALUE",
            ],
        },
    ]
}

/// Files that are not what they claim to be.
fn file_cases() -> Vec<Case> {
    vec![
        Case {
            name: "a 4 GiB sparse config file",
            files: vec![],
            setup: |dir| {
                let f = std::fs::File::create(dir.join("conf.d/z-huge.toml")).unwrap();
                f.set_len(4 << 30).unwrap();
            },
            says: &[
                "z-huge.toml",
                "over the limit of 4.0 MiB",
                "fix: a config file is read up to 4 MiB",
            ],
        },
        Case {
            name: "config files each under 4 MiB, over 16 MiB together",
            files: vec![],
            setup: |dir| {
                // One file of 3.5 MiB of comments under five names (hard links): 17.5 MiB to
                // read, 3.5 MiB on disk. After four of them, 2 MiB is left; the fifth is over.
                let first = dir.join("conf.d/z-0.toml");
                let line = format!("# {}\n", "x".repeat(1021));
                std::fs::write(&first, line.repeat(3584)).unwrap();
                for i in 1..5 {
                    std::fs::hard_link(&first, dir.join(format!("conf.d/z-{i}.toml"))).unwrap();
                }
            },
            says: &[
                "z-4.toml: cannot read the file: it is 3.5 MiB large, over the limit of 2.0 MiB",
                "fix: the files of a config directory are read up to 16 MiB in all",
            ],
        },
        Case {
            name: "an env_file that is a FIFO",
            files: vec![(
                "z.toml",
                "[program.fifo]\ncommand = [\"/bin/true\"]\nenv_file = \"{dir}/fifo.env\"\n"
                    .to_string(),
            )],
            setup: |dir| {
                nix::unistd::mkfifo(
                    &dir.join("fifo.env"),
                    nix::sys::stat::Mode::from_bits_truncate(0o600),
                )
                .unwrap();
            },
            says: &[
                "program.fifo.env_file",
                "is a FIFO, not a regular file",
                "fix:",
            ],
        },
        Case {
            name: "env_file = /dev/zero",
            files: vec![(
                "z.toml",
                "[program.zero]\ncommand = [\"/bin/true\"]\nenv_file = \"/dev/zero\"\n".to_string(),
            )],
            setup: nothing,
            says: &["program.zero.env_file", "a character device", "fix:"],
        },
        Case {
            name: "a config file that is a FIFO",
            files: vec![],
            setup: |dir| {
                nix::unistd::mkfifo(
                    &dir.join("conf.d/z-pipe.toml"),
                    nix::sys::stat::Mode::from_bits_truncate(0o600),
                )
                .unwrap();
            },
            says: &["z-pipe.toml", "a FIFO, not a regular file"],
        },
    ]
}

/// Values no start can take.
fn value_cases() -> Vec<Case> {
    vec![
        Case {
            name: "NUL bytes in command, env and workdir",
            files: vec![(
                "z.toml",
                r#"
[program.nul1]
command = ["/bin/echo", "a\u0000b"]

[program.nul2]
command = ["/bin/true"]
env = { A = "x\u0000" }

[program.nul3]
command = ["/bin/true"]
workdir = "/tmp\u0000/x"
"#
                .to_string(),
            )],
            setup: nothing,
            says: &[
                "program.nul1.command[1]: the value holds a NUL byte",
                "program.nul2.env.A: the value holds a NUL byte",
                "program.nul3.workdir: the value holds a NUL byte",
            ],
        },
        Case {
            name: "an unterminated ${",
            files: vec![(
                "z.toml",
                "[program.open]\ncommand = [\"/bin/echo\", \"port ${API_PORT\"]\n".to_string(),
            )],
            setup: nothing,
            says: &["the `${` at column 6 of the value is never closed"],
        },
        Case {
            name: "a numeric user with no passwd entry and no group",
            files: vec![(
                "z.toml",
                "[program.uid]\ncommand = [\"/bin/true\"]\nuser = \"4242\"\n".to_string(),
            )],
            setup: nothing,
            says: &[
                "user \"4242\" has no /etc/passwd entry",
                "fix: set group as well",
            ],
        },
    ]
}

/// Names ctrlinit keeps or cannot use.
fn name_cases() -> Vec<Case> {
    vec![
        Case {
            name: "a program name of 65,536 characters",
            files: vec![(
                "z.toml",
                format!(
                    "[program.{}]\ncommand = [\"/bin/true\"]\n",
                    "x".repeat(65_536)
                ),
            )],
            setup: nothing,
            says: &[
                "is 65536 characters long",
                "fix: use at most 64 characters",
                // The key is cut as the message is.
                "z.toml:1: program.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…: ",
            ],
        },
        Case {
            name: "programs named . and ..",
            files: vec![(
                "z.toml",
                "[program.\".\"]\ncommand = [\"/bin/true\"]\n[program.\"..\"]\ncommand = [\"/bin/true\"]\n"
                    .to_string(),
            )],
            setup: nothing,
            says: &["\"..\" is not a valid program name: it names a directory"],
        },
        Case {
            name: "a program named ctrlinit",
            files: vec![(
                "z.toml",
                "[program.ctrlinit]\ncommand = [\"/bin/true\"]\n".to_string(),
            )],
            setup: nothing,
            says: &["ctrlinit's own name", "fix: choose another name"],
        },
    ]
}

/// A healthy role: one program that must keep its pid, one that restarts all the time (so the
/// owner loop is seen reaping and restarting during a reload).
const HEALTHY: &str = r#"
[program.keep]
command = ["/bin/sleep", "1000"]

[program.beat]
command = ["/bin/sh", "-c", "exit 1"]
backoff = { initial = "20ms", max = "20ms" }
max_restarts = 999999
"#;

#[test]
fn check_reports_each_hostile_config_with_file_line_and_fix() {
    for case in cases() {
        let (dir, conf) = config_dir(&[("a.toml", "[program.ok]\ncommand = [\"/bin/true\"]\n")]);
        for (name, text) in &case.files {
            let text = text.replace("{dir}", dir.path().to_str().unwrap());
            std::fs::write(conf.join(name), text).unwrap();
        }
        (case.setup)(dir.path());
        let ran = check_config(&conf);
        assert_eq!(ran.code, 2, "{}: {ran:?}", case.name);
        for says in case.says {
            assert!(
                ran.stderr.contains(says),
                "{}: {says:?} not in:\n{}",
                case.name,
                ran.stderr
            );
        }
        // Every error line names its file and (but for whole-file problems) its line, and
        // quotes no value or name whole however long it is.
        for line in ran.stderr.lines().filter(|l| l.starts_with("error: ")) {
            assert!(line.contains(".toml"), "{}: {line}", case.name);
            assert!(
                line.len() < 1_000,
                "{}: {} characters",
                case.name,
                line.len()
            );
        }
        assert!(ran.stderr.contains("fix:"), "{}: {}", case.name, ran.stderr);
    }
}

/// Sends raw `status` requests until told to stop (at least one); their round trips.
fn sample_status(socket: std::path::PathBuf, stop: Arc<AtomicBool>) -> Vec<Duration> {
    let mut took = Vec::new();
    while took.is_empty() || !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let mut s = UnixStream::connect(&socket).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        s.write_all(b"{\"v\":1,\"cmd\":\"status\"}\n").unwrap();
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line).unwrap();
        assert!(line.contains("\"type\":\"status\""), "{line}");
        took.push(t.elapsed());
    }
    took
}

fn restarts_of(init: &Init, name: &str) -> u64 {
    init.program_json(name)["restarts"].as_u64().unwrap()
}

#[test]
fn reload_refuses_each_hostile_config_and_harms_nothing_running() {
    let init = init().file("a.toml", HEALTHY).start();
    init.wait_states(&["keep=running"]);
    let keep = init.pid_of("keep").unwrap();
    let conf = init.dir().join("conf.d");
    let mut samples = Vec::new();
    for case in cases() {
        for (name, text) in &case.files {
            let text = text.replace("{dir}", init.dir().to_str().unwrap());
            std::fs::write(conf.join(name), text).unwrap();
        }
        (case.setup)(init.dir());
        let beats = restarts_of(&init, "beat");
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (socket, stop) = (init.socket.clone(), Arc::clone(&stop));
            std::thread::spawn(move || sample_status(socket, stop))
        };
        let (code, out) = init.ctl(&["reload"]);
        stop.store(true, Ordering::Relaxed);
        let took = sampler.join().unwrap();
        assert_eq!(code, 1, "{}: reload accepted:\n{out}", case.name);
        for says in case.says {
            assert!(out.contains(says), "{}: {says:?} not in:\n{out}", case.name);
        }
        assert_eq!(
            init.pid_of("keep"),
            Some(keep),
            "{}: keep was touched",
            case.name
        );
        wait_until(
            &format!("{}: beat to go on restarting", case.name),
            DEADLINE,
            || (restarts_of(&init, "beat") > beats).then_some(()),
        );
        let slowest = took.iter().max().copied().unwrap_or_default();
        assert!(
            slowest < Duration::from_secs(1),
            "{}: status took {slowest:?} during the reload",
            case.name
        );
        samples.extend(took);
        // Clean up for the next case.
        for e in std::fs::read_dir(&conf).unwrap().flatten() {
            if e.file_name() != "a.toml" {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
    }
    // Answered promptly all along (a loaded machine may delay one; the 95th percentile may not).
    samples.sort();
    let p95 = samples[samples.len() * 95 / 100];
    assert!(
        p95 < Duration::from_millis(100),
        "status took {p95:?} (95th percentile of {}) during the reloads",
        samples.len()
    );
    assert!(alive(init.pid));
}

/// 40,000 `env` keys once made every spawn take seconds (setting them was quadratic) and a
/// reload parse on the owner's thread: now the program starts at once, and `status` is answered
/// within 100 ms while the reload reads the file.
#[test]
fn a_program_with_forty_thousand_env_keys_starts_at_once_and_reload_does_not_stall() {
    let mut text = String::from(
        "[program.wide]\ncommand = [\"/bin/sh\", \"-c\", \"echo $K39999 > {dir}/seen; exec sleep 1000\"]\n[program.wide.env]\n",
    );
    for i in 0..40_000 {
        text.push_str(&format!("K{i} = \"value-{i}\"\n"));
    }
    let init = init().file("a.toml", HEALTHY).file("b.toml", &text).start();
    assert_eq!(
        wait_for_text(&init.dir().join("seen")).trim(),
        "value-39999"
    );
    // A reload that changes one key: the parse is on a thread of its own.
    std::fs::write(
        init.dir().join("conf.d/b.toml"),
        text.replace("value-39999", "changed")
            .replace("{dir}", init.dir().to_str().unwrap()),
    )
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (socket, stop) = (init.socket.clone(), Arc::clone(&stop));
        std::thread::spawn(move || sample_status(socket, stop))
    };
    let (code, out) = init.ctl(&["reload"]);
    stop.store(true, Ordering::Relaxed);
    let mut took = sampler.join().unwrap();
    assert_eq!(code, 0, "{out}");
    took.sort();
    let p95 = took[took.len() * 95 / 100];
    assert!(
        p95 < Duration::from_millis(100),
        "status took {p95:?} (95th percentile of {} requests) during the reload",
        took.len()
    );
    wait_until("the changed program to start", DEADLINE, || {
        std::fs::read_to_string(init.dir().join("seen"))
            .ok()
            .filter(|s| s.trim() == "changed")
    });
}

/// An env_file that becomes a FIFO after the config was checked: the start fails at once with
/// the reason (it is never waited on), and the init goes on (SIGTERM still stops it).
#[test]
fn an_env_file_turned_into_a_fifo_fails_the_start_without_hanging_the_init() {
    let mut init = init()
        .file(
            "a.toml",
            "[program.late]\ncommand = [\"/bin/sleep\", \"1000\"]\nenv_file = \"{dir}/late.env\"\nautostart = false\n",
        )
        .start();
    init.wait_states(&["late=stopped"]);
    nix::unistd::mkfifo(
        &init.dir().join("late.env"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let (code, out) = init.ctl(&["start", "late", "--timeout", "10s"]);
    assert_eq!(code, 1, "{out}");
    init.wait_for_line("is a FIFO, not a regular file");
    let (code, out) = init.ctl(&["status"]);
    assert!(code == 0 || code == 3, "{out}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

/// `*.toml` links that lead nowhere: one dangling, one looping.
fn broken_links(conf: &Path) {
    std::os::unix::fs::symlink(conf.join("missing.toml.target"), conf.join("dangling.toml"))
        .unwrap();
    std::os::unix::fs::symlink(conf.join("loop-b.toml"), conf.join("loop-a.toml")).unwrap();
    std::os::unix::fs::symlink(conf.join("loop-a.toml"), conf.join("loop-b.toml")).unwrap();
}

const DANGLING: &str = "dangling.toml is a symbolic link to";
const LOOPING: &str = "loop-a.toml is a symbolic link that loops; skipped";

/// `check` says what it skipped even when there are errors to report.
#[test]
fn check_prints_the_skipped_links_with_the_errors() {
    let (_dir, conf) = config_dir(&[("a.toml", "[program.ok]\ncommand = [\"/bin/true\"]\n")]);
    broken_links(&conf);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(
        ran.stdout.contains(DANGLING) && ran.stdout.contains(LOOPING),
        "{ran:?}"
    );
    std::fs::write(
        conf.join("b.toml"),
        "[program.bad]\nrestart = \"sometimes\"\n",
    )
    .unwrap();
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{ran:?}");
    assert!(ran.stderr.contains("error: "), "{}", ran.stderr);
    for says in [DANGLING, LOOPING] {
        assert!(
            ran.stderr
                .lines()
                .any(|l| l.starts_with("warning: ") && l.contains(says)),
            "{says:?} not in:\n{}",
            ran.stderr
        );
    }
}

/// A reload says what it skipped, in its answer and in ctrlinit's log, whether it is applied or
/// refused.
#[test]
fn reload_tells_the_skipped_links_in_its_answer_and_the_log() {
    let init = init().file("a.toml", HEALTHY).start();
    init.wait_states(&["keep=running"]);
    let conf = init.dir().join("conf.d");
    broken_links(&conf);
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(DANGLING) && out.contains(LOOPING), "{out}");
    init.wait_for_line(&format!("reload: {}", conf.join(DANGLING).display()));
    init.wait_for_line(LOOPING);
    std::fs::write(
        conf.join("b.toml"),
        "[program.bad]\nrestart = \"sometimes\"\n",
    )
    .unwrap();
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error: ") && out.contains("warning: "),
        "{out}"
    );
    assert!(out.contains(DANGLING) && out.contains(LOOPING), "{out}");
    // Logged again by the refused reload (the log reaches the test through the console).
    init.wait_for_nth_line(LOOPING, 2, DEADLINE);
}

/// `ctrlinit reload` waits for the answer as long as reading a large config takes (the init
/// answers once it is applied or refused): here an init that takes 7 s, longer than the
/// client once waited, to read its files.
#[test]
fn the_reload_client_waits_for_a_slow_read() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("slow.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut request = String::new();
        BufReader::new(&stream).read_line(&mut request).unwrap();
        assert!(request.contains("\"cmd\":\"reload\""), "{request}");
        std::thread::sleep(Duration::from_secs(7));
        (&stream)
            .write_all(b"{\"v\":1,\"type\":\"done\",\"message\":\"reloaded after a slow read\"}\n")
            .unwrap();
    });
    let t = Instant::now();
    let (code, out) = ctl_at(&socket, &["reload"]);
    assert_eq!(code, 0, "after {:?}: {out}", t.elapsed());
    assert!(out.contains("reloaded after a slow read"), "{out}");
    server.join().unwrap();
}

/// A reload of the largest config ctrlinit reads (4 files of nearly 4 MiB, 16 MiB being the
/// cap) is answered, applied, and the running programs keep their pids.
#[test]
fn a_sixteen_mib_reload_is_answered_and_applied() {
    let init = init().file("a.toml", HEALTHY).start();
    init.wait_states(&["keep=running"]);
    let keep = init.pid_of("keep").unwrap();
    let conf = init.dir().join("conf.d");
    for f in 0..4 {
        let mut text = String::new();
        for p in 0..3 {
            text.push_str(&format!(
                "[program.big{f}x{p}]\ncommand = [\"/bin/sleep\", \"1000\"]\nautostart = false\n\n[program.big{f}x{p}.env]\n"
            ));
            for i in 0..27_000 {
                text.push_str(&format!(
                    "K{i} = \"value-{i:06}-abcdefghijklmnopqrstuvwxyz\"\n"
                ));
            }
        }
        assert!(
            text.len() < 4 << 20 && text.len() > 3 << 20,
            "{}",
            text.len()
        );
        std::fs::write(conf.join(format!("big{f}.toml")), text).unwrap();
    }
    let (code, out) = init.ctl(&["reload"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("big3x2"), "{out}");
    init.wait_states(&["big3x2=stopped"]);
    assert_eq!(init.pid_of("keep"), Some(keep));
}

//! dumb-init's and tini's own tests, ported: ctrlinit run as they are (`ctrlinit -- CMD`), both
//! as PID 1 of a fresh PID namespace and as a plain child of the test (not PID 1: the subreaper
//! path, which dumb-init's and tini's suites run in). Each test names the upstream test it comes
//! from (github.com/Yelp/dumb-init `tests/`, github.com/krallin/tini `test/`). Where ctrlinit
//! differs on purpose, "Differences from tini and dumb-init" in docs/src/guide/tini.md says why.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;

/// Where ctrlinit runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// PID 1 of a fresh PID namespace (`unshare --pid --fork --mount-proc`).
    Pid1,
    /// A child of the test, not PID 1 (a subreaper).
    Child,
}

const MODES: [Mode; 2] = [Mode::Pid1, Mode::Child];

/// `[unshare …] ctrlinit --socket S -- ARGV`, with its directories in `dir`.
fn command(mode: Mode, dir: &Path, argv: &[&str]) -> Command {
    let mut cmd = match mode {
        Mode::Pid1 => {
            let mut c = Command::new("unshare");
            c.args(["--pid", "--fork", "--mount-proc", "--kill-child", bin()]);
            c
        }
        Mode::Child => Command::new(bin()),
    };
    cmd.arg("--socket")
        .arg(dir.join("ctrlinit.sock"))
        .env("CTRLINIT_LOG_DIR", dir.join("log"))
        .env("CTRLINIT_CRASH_DIR", dir.join("crash"))
        .env_remove("CTRLINIT_CONFIG_DIR")
        .arg("--")
        .args(argv)
        .stdin(Stdio::null());
    cmd
}

/// A running `ctrlinit -- CMD`; killed with its command when dropped.
struct Running {
    child: Child,
    /// ctrlinit's pid (as the test sees it).
    ctrlinit: i32,
    /// The command's pid, once known.
    command: i32,
    /// The file the command writes what it got to.
    marks: PathBuf,
}

impl Running {
    /// Starts ctrlinit with the `--` command `argv` (whose last argument is the marks file) and
    /// waits for the command's first line there (`ready PID`).
    fn start(mode: Mode, dir: &Path, argv: &[&str]) -> Running {
        let marks = dir.join("marks");
        let mut full: Vec<&str> = argv.to_vec();
        full.push(marks.to_str().unwrap());
        let child = command(mode, dir, &full)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let ctrlinit = match mode {
            Mode::Child => child.id() as i32,
            Mode::Pid1 => wait_until("ctrlinit in its namespace", DEADLINE, || {
                children_of(child.id() as i32).first().copied()
            }),
        };
        let mut running = Running {
            child,
            ctrlinit,
            command: 0,
            marks,
        };
        running.command = command_pid(ctrlinit, &running.marks);
        running
    }

    /// Sends `sig` to ctrlinit.
    fn signal(&self, sig: i32) {
        assert!(send_signal(self.ctrlinit, sig), "ctrlinit is gone");
    }

    /// Waits until the marks file has `n` lines; returns the last one.
    fn nth_mark(&self, n: usize) -> String {
        wait_for_lines_in(&self.marks, n).pop().unwrap()
    }

    /// The exit status of the test's child (128+n for a signal).
    fn exit(&mut self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        let status = wait_until("ctrlinit's exit", DEADLINE, || {
            self.child.try_wait().unwrap()
        });
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
    }
}

/// The command's pid as this test sees it: the child of `ctrlinit` whose pid in its own
/// namespace is the one its first line in `marks` says (`ready PID`; the same number as a
/// child, another one as PID 1 of a namespace). Not simply ctrlinit's first child: that can be
/// a short-lived helper of ctrlinit's own (its cgroup probe), and a test that took it for the
/// command left the command running after the test.
fn command_pid(ctrlinit: i32, marks: &Path) -> i32 {
    let first = wait_for_lines_in(marks, 1).remove(0);
    let said: i32 = first
        .strip_prefix("ready ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the command's first line is not `ready PID`: {first:?}"));
    let innermost = |pid: i32| -> Option<i32> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
        line.split_whitespace().last()?.parse().ok()
    };
    wait_until("the command among ctrlinit's children", DEADLINE, || {
        children_of(ctrlinit)
            .into_iter()
            .find(|&c| innermost(c) == Some(said))
    })
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.command > 0 {
            // Its own process group: the command and whatever it started.
            send_signal(-self.command, libc::SIGKILL);
        }
        send_signal(self.ctrlinit, libc::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// dumb-init's `testing/print_signals.py`: catches every signal it can (1-31 but KILL, STOP and
/// CHLD, and the real-time ones) and writes each one's number on a line of its own.
const PRINT_SIGNALS: &str = r#"
import os, signal, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
def got(n, _):
    os.write(fd, b"%d\n" % n)
caught = set(range(1, 32)) - {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD}
caught |= set(range(signal.SIGRTMIN, signal.SIGRTMAX + 1))
for n in caught:
    signal.signal(n, got)
os.write(fd, b"ready %d\n" % os.getpid())
while True:
    signal.pause()
"#;

fn print_signals(mode: Mode, dir: &Path) -> Running {
    Running::start(mode, dir, &["/usr/bin/python3", "-c", PRINT_SIGNALS])
}

/// dumb-init `tests/proxies_signals_test.py::test_proxies_signals` (NORMAL_SIGNALS: 1-31 but
/// KILL, STOP, CHLD and the three job-control ones), with the fault signals (ABRT, BUS, FPE,
/// ILL, SEGV, SYS, TRAP) among them, plus real-time signals; TERM, INT and QUIT last (they start
/// ctrlinit's way down, and are forwarded as they came).
#[test]
fn every_signal_dumb_init_proxies_reaches_the_command_as_pid1_and_as_a_child() {
    let stop = [libc::SIGTERM, libc::SIGINT, libc::SIGQUIT];
    let skip = [
        libc::SIGKILL,
        libc::SIGSTOP,
        libc::SIGCHLD,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
    ];
    let mut order: Vec<i32> = (1..32)
        .filter(|n| !skip.contains(n) && !stop.contains(n))
        .collect();
    // Real-time signals: the first and last the C library leaves to programs, and one between.
    order.extend([libc::SIGRTMIN(), libc::SIGRTMIN() + 3, libc::SIGRTMAX()]);
    order.extend(stop);
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let run = print_signals(mode, dir.path());
        for (i, &sig) in order.iter().enumerate() {
            run.signal(sig);
            // One at a time, as upstream's test reads one line per signal.
            let got = run.nth_mark(i + 2);
            assert_eq!(got, sig.to_string(), "{mode:?}: signal {sig}");
        }
        assert!(alive(run.ctrlinit), "{mode:?}: none of them ended ctrlinit");
    }
}

/// Sets the instruction pointer of thread `tid` to 0 and lets it run: a real fault (SIGSEGV
/// raised by the kernel in that thread), from outside, with no help from ctrlinit.
/// PTRACE_SEIZE + PTRACE_INTERRUPT stop that one thread without a SIGSTOP to the process.
const FAULT_THREAD: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long
SEIZE, INTERRUPT, GETREGS, SETREGS, DETACH = 0x4206, 0x4207, 12, 13, 17
tid = int(sys.argv[1])
def call(req, addr=None, data=None):
    if libc.ptrace(req, tid, addr, data) != 0:
        sys.exit("ptrace %#x: %s" % (req, os.strerror(ctypes.get_errno())))
call(SEIZE)
call(INTERRUPT)
os.waitpid(tid, 0x40000000)  # __WALL
regs = (ctypes.c_ulonglong * 27)()  # x86_64 user_regs_struct
call(GETREGS, None, ctypes.byref(regs))
regs[15] = 2**64 - 1  # orig_rax = -1: no system call to restart
regs[16] = 0          # rip
call(SETREGS, None, ctypes.byref(regs))
call(DETACH)
"#;

/// Threads of `pid` with their names (`comm`).
fn threads(pid: i32) -> Vec<(i32, String)> {
    let mut out: Vec<(i32, String)> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let tid: i32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            Some((tid, comm.trim().to_string()))
        })
        .collect();
    out.sort();
    out
}

/// Not an upstream test: forwarding SEGV, BUS, FPE, ILL, TRAP, SYS and ABRT (above) means
/// blocking them, and a real fault must still end ctrlinit, in whichever thread it happens
/// (the kernel unblocks a fault's signal and restores its default action: see
/// `sys::signals::forwardable`). Each thread of a running ctrlinit is faulted in turn.
#[test]
fn a_real_fault_in_any_thread_of_ctrlinit_still_ends_it() {
    if std::env::consts::ARCH != "x86_64" {
        eprintln!("skipped: the fault is set up with x86_64's registers");
        return;
    }
    let sleeper = "echo ready $$ >> \"$0\"; exec sleep 1000";
    let count = {
        let dir = tempfile::tempdir().unwrap();
        let run = Running::start(Mode::Pid1, dir.path(), &["/bin/sh", "-c", sleeper]);
        threads(run.ctrlinit).len()
    };
    assert!(count >= 2, "ctrlinit runs more than one thread");
    for index in 0..count {
        for mode in MODES {
            let dir = tempfile::tempdir().unwrap();
            let mut cmd = command(mode, dir.path(), &["/bin/sh", "-c", sleeper]);
            cmd.arg(dir.path().join("marks"));
            // No core file of ctrlinit's left behind.
            let mut full = Command::new("prlimit");
            full.arg("--core=0")
                .arg(cmd.get_program())
                .args(cmd.get_args());
            full.envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))));
            let child = full
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let mut run = Running {
                ctrlinit: 0,
                child,
                command: 0,
                marks: dir.path().join("marks"),
            };
            wait_for_lines_in(&run.marks, 1);
            run.ctrlinit = match mode {
                Mode::Child => run.child.id() as i32,
                Mode::Pid1 => children_of(run.child.id() as i32)[0],
            };
            run.command = command_pid(run.ctrlinit, &run.marks);
            let all = threads(run.ctrlinit);
            let Some((tid, name)) = all.get(index).cloned() else {
                continue;
            };
            let out = Command::new("/usr/bin/python3")
                .args(["-c", FAULT_THREAD, &tid.to_string()])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            // As PID 1, unshare passes its child's end on (it kills itself with the signal).
            assert_eq!(
                run.exit(),
                128 + libc::SIGSEGV,
                "{mode:?}: a fault in thread {name} ({tid}) ends ctrlinit by SIGSEGV"
            );
        }
    }
}

/// dumb-init `tests/shell_background_test.py::test_shell_background_support_setsid`: TSTP, TTOU
/// and TTIN stop the command and ctrlinit; CONT resumes both. As a child only: PID 1 is never
/// stopped (`tests/terminal.rs` has what it does then).
#[test]
fn as_a_child_job_control_signals_stop_the_command_and_then_ctrlinit_and_cont_resumes_both() {
    let dir = tempfile::tempdir().unwrap();
    let script = "echo ready $$ >> \"$0\"; while :; do sleep 0.05; done";
    let run = Running::start(Mode::Child, dir.path(), &["/bin/sh", "-c", script]);
    // Not stopped and alive: running, sleeping, or in a short uninterruptible wait (a page
    // fault, a fork under load: seen as `D` once with both cores busy).
    let running = |p: i32| proc_state(p).is_some_and(|s| !matches!(s, 'T' | 't' | 'Z' | 'X'));
    for sig in [libc::SIGTSTP, libc::SIGTTOU, libc::SIGTTIN] {
        wait_until(&format!("both running before {sig}"), DEADLINE, || {
            (running(run.ctrlinit) && running(run.command)).then_some(())
        });
        run.signal(sig);
        wait_until(&format!("both stopped after {sig}"), DEADLINE, || {
            (proc_state(run.ctrlinit) == Some('T') && proc_state(run.command) == Some('T'))
                .then_some(())
        });
        run.signal(libc::SIGCONT);
        wait_until(&format!("both running after {sig}"), DEADLINE, || {
            (running(run.ctrlinit) && running(run.command)).then_some(())
        });
    }
}

/// dumb-init `tests/shell_background_test.py::test_shell_background_support_without_setsid`:
/// the command gets TSTP, TTOU and TTIN as they came (it catches them) and ctrlinit stops; the
/// command gets the CONT that resumes ctrlinit.
#[test]
fn as_a_child_a_command_that_catches_job_control_signals_gets_them_and_ctrlinit_stops() {
    let dir = tempfile::tempdir().unwrap();
    let run = print_signals(Mode::Child, dir.path());
    let mut n = 1;
    for sig in [libc::SIGTSTP, libc::SIGTTOU, libc::SIGTTIN] {
        run.signal(sig);
        n += 1;
        assert_eq!(run.nth_mark(n), sig.to_string());
        wait_until(&format!("ctrlinit stopped after {sig}"), DEADLINE, || {
            (proc_state(run.ctrlinit) == Some('T')).then_some(())
        });
        run.signal(libc::SIGCONT);
        n += 1;
        assert_eq!(run.nth_mark(n), libc::SIGCONT.to_string());
        assert_ne!(proc_state(run.ctrlinit), Some('T'));
    }
}

/// dumb-init `tests/cwd_test.py::test_working_directories`: the command starts in the
/// directory ctrlinit was started in; ctrlinit itself holds `/`.
#[test]
fn ctrlinit_holds_root_as_its_directory_and_the_command_starts_where_it_was_started() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let out = command(
            mode,
            dir.path(),
            &[
                "sh",
                "-c",
                "readlink /proc/$PPID/cwd && readlink /proc/$$/cwd",
            ],
        )
        .current_dir(&work)
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "{mode:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("/\n{}\n", work.display()),
            "{mode:?}"
        );
    }
}

/// Not upstream: with ctrlinit in `/`, the relative paths it was given still mean what they
/// meant where it was started (the config directory, the log directory, a program's env_file
/// and workdir), and a program without a workdir starts there.
#[test]
fn relative_paths_are_read_from_the_directory_ctrlinit_was_started_in() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("conf.d")).unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("vars.env"), "GREETING=hello\n").unwrap();
    std::fs::write(
        dir.path().join("conf.d/a.toml"),
        "[program.here]\ncommand = \"sh -c 'echo $GREETING > out-here; pwd >> out-here'\"\nenv_file = \"vars.env\"\ntype = \"oneshot\"\n\n[program.sub]\ncommand = \"sh -c 'pwd > out-sub'\"\nworkdir = \"sub\"\ntype = \"oneshot\"\n",
    )
    .unwrap();
    let mut child = Reaped(
        Command::new(bin())
            .current_dir(dir.path())
            .args(["--config-dir", "conf.d", "--socket", "ctrlinit.sock"])
            .env("CTRLINIT_LOG_DIR", "log")
            .env("CTRLINIT_CRASH_DIR", "crash")
            .env_remove("CTRLINIT_CONFIG_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id() as i32;
    let here = wait_for_lines_in(&dir.path().join("out-here"), 2);
    assert_eq!(here, ["hello", dir.path().to_str().unwrap()]);
    let sub = wait_for_lines_in(&dir.path().join("sub/out-sub"), 1);
    assert_eq!(sub, [dir.path().join("sub").to_str().unwrap()]);
    for place in ["log", "ctrlinit.sock"] {
        wait_until(
            &format!("{place}, where ctrlinit was started"),
            DEADLINE,
            || dir.path().join(place).exists().then_some(()),
        );
    }
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        Path::new("/")
    );
    assert!(send_signal(pid, libc::SIGTERM));
    let status = wait_until("ctrlinit's exit", DEADLINE, || child.0.try_wait().unwrap());
    assert_eq!(status.code(), Some(0));
}

/// A child killed and waited for when dropped (a failing test leaves nothing running).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

//! Test harness: runs the real ctrlinit binary as PID 1 of a fresh PID namespace
//! (`unshare --pid --fork --mount-proc --kill-child`), captures its output line by line, and waits
//! for facts (a line, a file, a state, an exit) with deadlines instead of sleeping.
//!
//! Each test gets its own temp directory holding `conf.d/`, the control socket, log and crash
//! directories, so tests run in parallel. Dropping an [`Init`] kills the namespace; when the test
//! is failing, everything ctrlinit printed is shown.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The ctrlinit binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ctrlinit")
}

/// Default deadline for a condition; generous for a loaded 2-core CI machine.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Captured output lines, shared with reader threads.
#[derive(Default)]
struct Lines {
    lines: Mutex<Vec<String>>,
    changed: Condvar,
    /// Reader threads that reached end of file (stdout, stderr).
    ended: Mutex<usize>,
    /// Signalled as each reader ends (a condition variable serves one mutex only).
    ended_changed: Condvar,
}

/// How to start an init.
pub struct Builder {
    files: Vec<(String, String)>,
    args: Vec<String>,
    env: HashMap<String, String>,
    namespace: bool,
    dir: tempfile::TempDir,
    /// A config directory of its own (the repository's example) instead of `<dir>/conf.d`.
    conf: Option<PathBuf>,
    /// A cgroup (v1 or v2 directory) to start ctrlinit in.
    cgroup: Option<PathBuf>,
    /// `prlimit` arguments to start ctrlinit with (`--nofile=1024:4096`).
    prlimit: Option<String>,
    /// The umask to start ctrlinit with.
    umask: Option<u32>,
    /// A command ctrlinit (and its namespace) is started under, such as `nsenter --net=…`.
    prefix: Vec<String>,
}

impl Builder {
    /// Starts ctrlinit under `argv` (which must exec its arguments), such as
    /// `nsenter --net=/run/netns/NAME`.
    pub fn under(mut self, argv: &[&str]) -> Self {
        self.prefix = argv.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Starts ctrlinit inside the cgroup at `dir` (its `cgroup.procs` is written first).
    pub fn in_cgroup(mut self, dir: &Path) -> Self {
        self.cgroup = Some(dir.to_path_buf());
        self
    }

    /// Starts ctrlinit with this umask.
    pub fn umask(mut self, mask: u32) -> Self {
        self.umask = Some(mask);
        self
    }

    /// Starts ctrlinit with these resource limits (`prlimit` syntax, e.g. `--nofile=1024:8192`).
    pub fn prlimit(mut self, limits: &str) -> Self {
        self.prlimit = Some(limits.to_string());
        self
    }

    /// Uses the existing config directory `conf` (files added with [`Builder::file`] are
    /// ignored then).
    pub fn config_dir(mut self, conf: &Path) -> Self {
        self.conf = Some(conf.to_path_buf());
        self
    }

    /// Adds `conf.d/<name>` with `text` (`{dir}` in it is replaced by the test directory).
    pub fn file(mut self, name: &str, text: &str) -> Self {
        self.files.push((name.to_string(), text.to_string()));
        self
    }

    /// Adds a command-line argument after the config options.
    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.to_string());
        self
    }

    /// Sets an environment variable for ctrlinit.
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.insert(k.to_string(), v.to_string());
        self
    }

    /// Runs ctrlinit directly (not PID 1), so it takes the subreaper path.
    pub fn without_namespace(mut self) -> Self {
        self.namespace = false;
        self
    }

    /// The test directory (for paths to put in config before starting).
    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// Writes the config and starts ctrlinit.
    pub fn start(self) -> Init {
        let dir = self.dir.path().to_path_buf();
        let conf = self.conf.clone().unwrap_or_else(|| dir.join("conf.d"));
        std::fs::create_dir_all(dir.join("conf.d")).unwrap();
        for (name, text) in &self.files {
            std::fs::write(
                dir.join("conf.d").join(name),
                text.replace("{dir}", dir.to_str().unwrap()),
            )
            .unwrap();
        }
        let socket = dir.join("ctrlinit.sock");
        // What runs: [sh -c 'join the cgroup' sh] [prlimit LIMITS] [unshare …] ctrlinit; each
        // wrapper execs the next, so the first child's pid is unshare's (or ctrlinit's).
        let mut argv: Vec<String> = Vec::new();
        let mut shell = Vec::new();
        if let Some(cg) = &self.cgroup {
            shell.push(format!("echo $$ > {}/cgroup.procs", cg.display()));
        }
        if let Some(mask) = self.umask {
            shell.push(format!("umask {mask:03o}"));
        }
        if !shell.is_empty() {
            shell.push("exec \"$@\"".into());
            argv.extend([
                "/bin/sh".to_string(),
                "-c".into(),
                shell.join(" && "),
                "sh".into(),
            ]);
        }
        if let Some(limits) = &self.prlimit {
            argv.extend(["prlimit".to_string(), limits.clone()]);
        }
        argv.extend(self.prefix.iter().cloned());
        if self.namespace {
            argv.extend(
                ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"].map(String::from),
            );
        }
        argv.push(bin().to_string());
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        cmd.arg("--config-dir").arg(&conf);
        cmd.args(&self.args);
        cmd.env("CTRLINIT_SOCKET", &socket)
            .env("CTRLINIT_LOG", "debug")
            .env("CTRLINIT_LOG_DIR", dir.join("log"))
            .env("CTRLINIT_CRASH_DIR", dir.join("crash"))
            .env("TEST_DIR", &dir)
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("failed to start ctrlinit");
        let lines = Arc::new(Lines::default());
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                let mut buf = Vec::new();
                while reader.read_until(b'\n', &mut buf).unwrap_or(0) > 0 {
                    let line = String::from_utf8_lossy(&buf)
                        .trim_end_matches('\n')
                        .to_string();
                    lines.lines.lock().unwrap().push(line);
                    lines.changed.notify_all();
                    buf.clear();
                }
                *lines.ended.lock().unwrap() += 1;
                lines.ended_changed.notify_all();
            });
        }
        let mut init = Init {
            child: Some(child),
            pid: 0,
            dir: self.dir,
            lines,
            socket,
            status: None,
        };
        init.pid = if self.namespace {
            init.wait_for_ns_child()
        } else {
            init.child.as_ref().unwrap().id() as i32
        };
        init
    }
}

/// A running ctrlinit.
pub struct Init {
    child: Option<Child>,
    /// ctrlinit's pid as seen from the test (host namespace).
    pub pid: i32,
    dir: tempfile::TempDir,
    lines: Arc<Lines>,
    /// The control socket path given to ctrlinit.
    pub socket: PathBuf,
    status: Option<ExitStatus>,
}

/// Starts describing an init.
pub fn init() -> Builder {
    Builder {
        files: Vec::new(),
        args: Vec::new(),
        env: HashMap::new(),
        namespace: true,
        dir: tempfile::tempdir().unwrap(),
        conf: None,
        cgroup: None,
        prlimit: None,
        umask: None,
        prefix: Vec::new(),
    }
}

/// Polls `f` until it returns `Some`, or panics with `what` after `timeout`.
pub fn wait_until<T>(what: &str, timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    wait_until_soft(timeout, f)
        .unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}"))
}

/// Like [`wait_until`], but `None` at the deadline (for conditions the caller reports itself).
pub fn wait_until_soft<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::park_timeout(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// What background test threads (samplers, abusers, schedulers) wait on instead of sleeping and
/// polling a flag: it is open, paused or closed, and every change wakes the waiters at once.
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum GateState {
    Open,
    Paused,
    Closed,
}

impl Gate {
    /// A gate that starts open (or paused).
    pub fn new(open: bool) -> Arc<Gate> {
        let state = if open {
            GateState::Open
        } else {
            GateState::Paused
        };
        Arc::new(Gate {
            state: Mutex::new(state),
            changed: Condvar::new(),
        })
    }

    fn set(&self, to: GateState) {
        let mut state = self.state.lock().unwrap();
        if *state != GateState::Closed {
            *state = to;
        }
        self.changed.notify_all();
    }

    /// Lets waiters through.
    pub fn open(&self) {
        self.set(GateState::Open);
    }

    /// Holds waiters in [`Gate::wait_open`] until opened or closed.
    pub fn pause(&self) {
        self.set(GateState::Paused);
    }

    /// For good: every wait returns false from now on.
    pub fn close(&self) {
        self.set(GateState::Closed);
    }

    /// Whether it has been closed.
    pub fn closed(&self) -> bool {
        *self.state.lock().unwrap() == GateState::Closed
    }

    /// Blocks while paused; true once open, false once closed.
    pub fn wait_open(&self) -> bool {
        let state = self.state.lock().unwrap();
        let state = self
            .changed
            .wait_while(state, |s| *s == GateState::Paused)
            .unwrap();
        *state == GateState::Open
    }

    /// A pacing pause of `period` (a sampling period, a request rate) that ends at once when the
    /// gate closes; false once closed.
    pub fn pace(&self, period: Duration) -> bool {
        let state = self.state.lock().unwrap();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, period, |s| *s != GateState::Closed)
            .unwrap();
        *state != GateState::Closed
    }
}

impl Init {
    /// The test directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn wait_for_ns_child(&mut self) -> i32 {
        let unshare = self.child.as_ref().unwrap().id();
        let child = self.child.as_mut().unwrap();
        wait_until("ctrlinit to start in its namespace", DEADLINE, || {
            let text = std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"));
            if let Some(pid) = text
                .ok()
                .and_then(|t| t.split_whitespace().next()?.parse().ok())
            {
                return Some(pid);
            }
            // ctrlinit may already have run and exited (a `--` program that ends at once):
            // there is no pid to find then, and wait_exit() returns the status.
            match child.try_wait() {
                Ok(Some(_)) => Some(0),
                _ => None,
            }
        })
    }

    /// Everything printed so far.
    pub fn output(&self) -> String {
        self.lines.lines.lock().unwrap().join("\n")
    }

    /// Lines printed so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lines.lock().unwrap().clone()
    }

    /// Waits for a line containing `needle`; returns it.
    pub fn wait_for_line(&self, needle: &str) -> String {
        self.wait_for_line_within(needle, DEADLINE)
    }

    /// Waits for a line containing `needle`, up to `timeout`.
    pub fn wait_for_line_within(&self, needle: &str, timeout: Duration) -> String {
        self.wait_for_nth_line(needle, 1, timeout)
    }

    /// Waits until `n` lines contain `needle`; returns the n-th.
    pub fn wait_for_nth_line(&self, needle: &str, n: usize, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let mut lines = self.lines.lines.lock().unwrap();
        loop {
            let found: Vec<&String> = lines.iter().filter(|l| l.contains(needle)).collect();
            if found.len() >= n {
                return found[n - 1].clone();
            }
            let now = Instant::now();
            if now > deadline {
                let all = lines.join("\n");
                drop(lines);
                panic!(
                    "timed out after {timeout:?} waiting for line #{n} with {needle:?}; output:\n{all}"
                );
            }
            lines = self
                .lines
                .changed
                .wait_timeout(lines, deadline - now)
                .unwrap()
                .0;
        }
    }

    /// Number of lines containing `needle` so far.
    pub fn count_lines(&self, needle: &str) -> usize {
        self.lines
            .lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }

    /// Sends `sig` (e.g. "TERM") to ctrlinit.
    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{sig} {} failed", self.pid);
    }

    /// Waits for ctrlinit to exit; returns its exit code (128+n for a signal).
    pub fn wait_exit(&mut self, timeout: Duration) -> i32 {
        let child = self.child.as_mut().unwrap();
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                panic!(
                    "ctrlinit did not exit within {timeout:?}; output:\n{}",
                    self.output()
                );
            }
            std::thread::park_timeout(Duration::from_millis(5));
        };
        self.status = Some(status);
        // Every line it printed is in once both pipes reached end of file (the namespace is gone
        // with it, so nothing else holds them).
        let ended = self.lines.ended.lock().unwrap();
        let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_secs(5);
        let (ended, _) = self
            .lines
            .ended_changed
            .wait_timeout_while(ended, left, |n| *n < 2)
            .unwrap();
        assert_eq!(
            *ended, 2,
            "ctrlinit's output pipes stayed open after it exited"
        );
        drop(ended);
        use std::os::unix::process::ExitStatusExt;
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
    }

    /// Host pids of every process in ctrlinit's PID namespace except ctrlinit itself.
    pub fn namespace_pids(&self) -> Vec<i32> {
        pids_in_namespace_of(self.pid)
    }

    /// Zombies among the namespace's processes.
    pub fn zombies(&self) -> Vec<i32> {
        self.namespace_pids()
            .into_iter()
            .filter(|&p| proc_state(p) == Some('Z'))
            .collect()
    }

    /// Runs a ctrlinit client command against this init's socket; returns (exit code, stdout+stderr).
    pub fn ctl(&self, args: &[&str]) -> (i32, String) {
        ctl_at(&self.socket, args)
    }
}

impl Drop for Init {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take()
            && self.status.is_none()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
        // A killed ctrlinit cannot remove the cgroups it made for its programs: the harness
        // does, once their processes are gone, so test runs leave no empty groups behind.
        let lines = self.lines();
        if let Some(base) = lines.iter().find_map(|l| {
            let rest = l.split("tracked by cgroup (").nth(1)?;
            Some(PathBuf::from(rest.strip_suffix(')')?))
        }) {
            remove_cgroup_tree(&base);
        }
        if std::thread::panicking() {
            eprintln!(
                "---- ctrlinit output ----\n{}\n-------------------------",
                self.output()
            );
        }
    }
}

/// Removes a cgroup directory and its child groups (cgroup directories are removed with rmdir;
/// a group whose last processes are still exiting refuses for a moment, hence the retries).
fn remove_cgroup_tree(base: &Path) {
    if !base.exists() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        if let Ok(entries) = std::fs::read_dir(base) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::remove_dir(e.path());
                }
            }
        }
        if std::fs::remove_dir(base).is_ok() || !base.exists() || Instant::now() > deadline {
            return;
        }
        std::thread::park_timeout(Duration::from_millis(10));
    }
}

/// Runs a ctrlinit client command against the init at `socket`; returns (exit code,
/// stdout+stderr).
pub fn ctl_at(socket: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(bin())
        .args(args)
        .env("CTRLINIT_SOCKET", socket)
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).to_string();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// The state letter of a process (`R`, `S`, `Z` …) from `/proc/PID/stat`.
pub fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.chars().next()
}

/// A `Name:\tvalue` field of `/proc/PID/status`.
pub fn proc_status_field(pid: i32, field: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_string())
}

/// Waits until `path` exists; returns its contents (maybe empty: a marker, or a file whose
/// writer has opened it and not written yet; `wait_for_text` waits for what it says).
pub fn wait_for_file(path: &Path) -> String {
    wait_until(&format!("file {}", path.display()), DEADLINE, || {
        std::fs::read_to_string(path).ok()
    })
}

/// Waits until `path` holds text ending in a newline; returns it. A shell's `echo … > f`
/// creates `f` before it writes, so a reader that only waits for the file can read it empty.
pub fn wait_for_text(path: &Path) -> String {
    wait_until(&format!("a line in {}", path.display()), DEADLINE, || {
        std::fs::read_to_string(path)
            .ok()
            .filter(|t| t.ends_with('\n'))
    })
}

/// Waits until `path` holds at least `n` lines; returns them.
pub fn wait_for_lines_in(path: &Path, n: usize) -> Vec<String> {
    wait_until(
        &format!("{n} lines in {}", path.display()),
        DEADLINE,
        || {
            let text = std::fs::read_to_string(path).ok()?;
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            (lines.len() >= n).then_some(lines)
        },
    )
}

/// Whether process `pid` exists (zombies count).
pub fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Reads a pid written by a test program into `path`, translated to the host namespace.
///
/// Programs inside the namespace see their own pids; `$$` written to a file is the namespace pid.
/// This finds the host pid whose NSpid ends with it, within `init`'s namespace.
pub fn host_pid(init: &Init, ns_pid: i32) -> Option<i32> {
    init.namespace_pids().into_iter().find(|&p| {
        proc_status_field(p, "NSpid")
            .and_then(|v| v.split_whitespace().last().map(str::to_string))
            .and_then(|s| s.parse::<i32>().ok())
            == Some(ns_pid)
    })
}

// ---- Helpers added for the behaviour suites (restarts, shutdown, reaping, config errors). ----

/// What a one-shot ctrlinit command (such as `ctrlinit check`) printed, and its exit status.
#[derive(Debug)]
pub struct Ran {
    /// Exit status (128+n for a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Ran {
    /// stdout then stderr, for messages whose stream is not part of the contract.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `cmd` to completion with a deadline (killing it when it overruns) and captures its output.
pub fn run_with_deadline(mut cmd: Command, timeout: Duration) -> Ran {
    use std::os::unix::process::ExitStatusExt;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("failed to start the command");
    let mut readers = Vec::new();
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        readers.push(std::thread::spawn(move || {
            let mut stream = stream;
            let mut buf = Vec::new();
            let _ = stream.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).to_string()
        }));
    }
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {timeout:?}");
        }
        std::thread::park_timeout(Duration::from_millis(5));
    };
    let stderr = readers.pop().unwrap().join().unwrap();
    let stdout = readers.pop().unwrap().join().unwrap();
    Ran {
        code: status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        stdout,
        stderr,
    }
}

/// Writes `files` (name, text; `{dir}` replaced by the temp dir) into `<tempdir>/conf.d` and
/// returns the temp dir and the conf.d path.
pub fn config_dir(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf.d");
    std::fs::create_dir_all(&conf).unwrap();
    for (name, text) in files {
        std::fs::write(
            conf.join(name),
            text.replace("{dir}", dir.path().to_str().unwrap()),
        )
        .unwrap();
    }
    (dir, conf)
}

/// Writes (or replaces) `file` in a running init's `conf.d`, `{dir}` replaced by its temp dir:
/// the config a following reload reads.
pub fn write_conf(init: &Init, file: &str, text: &str) {
    let dir = init.dir().to_str().unwrap().to_string();
    std::fs::write(
        init.dir().join("conf.d").join(file),
        text.replace("{dir}", &dir),
    )
    .unwrap();
}

/// A port nothing listens on now (bound and released: each test gets its own).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `ctrlinit check --config-dir CONF` (no PID namespace needed: it starts nothing).
pub fn check_config(conf: &Path) -> Ran {
    check_config_with(conf, &[])
}

/// `ctrlinit check ARGS --config-dir CONF` (`--strict`, `--build`), with a deadline.
pub fn check_config_with(conf: &Path, args: &[&str]) -> Ran {
    let mut cmd = Command::new(bin());
    cmd.arg("check")
        .args(args)
        .arg("--config-dir")
        .arg(conf)
        .env_remove("CTRLINIT_CONFIG_DIR")
        .env("CTRLINIT_LOG", "debug");
    run_with_deadline(cmd, DEADLINE)
}

/// Sends signal `sig` (a libc signal number) to `pid`; false when it is gone.
pub fn send_signal(pid: i32, sig: i32) -> bool {
    // SAFETY: kill(2) takes no pointers.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// Direct children of `pid` (zombies included until reaped), from `/proc/PID/task/*/children`.
pub fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// Host pids of every process in the PID namespace of `pid`, except `pid` itself.
pub fn pids_in_namespace_of(pid: i32) -> Vec<i32> {
    let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/pid")) else {
        return Vec::new();
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| p != pid)
        .filter(|p| {
            std::fs::read_link(format!("/proc/{p}/ns/pid"))
                .ok()
                .as_ref()
                == Some(&ns)
        })
        .collect()
}

/// The parent pid of `pid` (from `/proc/PID/status`).
pub fn ppid_of(pid: i32) -> Option<i32> {
    proc_status_field(pid, "PPid")?.parse().ok()
}

/// Index of the first of `lines` containing `needle`.
pub fn index_of_line(lines: &[String], needle: &str) -> Option<usize> {
    lines.iter().position(|l| l.contains(needle))
}

/// Lines of `path` (empty when it does not exist).
pub fn file_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

impl Init {
    /// `status --json` as a list of program objects (exit 0 or 3 expected).
    pub fn status_json(&self) -> Vec<serde_json::Value> {
        self.status_json_with(&[])
    }

    /// `status --json` with more arguments (`--usage`), parsed.
    pub fn status_json_with(&self, more: &[&str]) -> Vec<serde_json::Value> {
        let args: Vec<&str> = ["status", "--json"].iter().chain(more).copied().collect();
        let (code, out) = self.ctl(&args);
        assert!(code == 0 || code == 3, "status --json exit {code}: {out}");
        serde_json::from_str::<serde_json::Value>(&out)
            .unwrap_or_else(|e| panic!("status --json is not JSON ({e}): {out}"))
            .as_array()
            .unwrap()
            .clone()
    }

    /// One program's entry of `status --json`.
    pub fn program_json(&self, name: &str) -> serde_json::Value {
        self.status_json()
            .into_iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in status"))
    }

    /// One program's entry of `status --json --usage` (with its CPU time and memory).
    pub fn program_usage_json(&self, name: &str) -> serde_json::Value {
        self.status_json_with(&["--usage"])
            .into_iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in status"))
    }

    /// The names `status --json` lists, sorted.
    pub fn program_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .status_json()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    }

    /// A program's pid as `status --json` shows it (its namespace pid), if it runs.
    pub fn pid_of(&self, name: &str) -> Option<i64> {
        self.status_json()
            .into_iter()
            .find(|p| p["name"] == name)?
            .get("pid")?
            .as_i64()
    }

    /// Blocks (server side) until every `NAME=STATE` holds, or fails the test.
    pub fn wait_states(&self, conditions: &[&str]) {
        let mut args = vec!["status", "--timeout", "20s", "--wait"];
        args.extend_from_slice(conditions);
        let (code, out) = self.ctl(&args);
        assert_eq!(code, 0, "status --wait {conditions:?}: {out}");
    }

    /// Starts a client command (`events`, `logs -f` …) against this init in the background;
    /// its stdout lines arrive on the receiver as they are printed.
    pub fn spawn_client(&self, args: &[&str]) -> (Child, std::sync::mpsc::Receiver<String>) {
        let mut child = Command::new(bin())
            .args(args)
            .env("CTRLINIT_SOCKET", &self.socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    }

    /// Waits until a program wrote its namespace pid (`echo $$ > FILE`) into `name` under the
    /// test dir, and returns the matching host pid.
    pub fn wait_for_pid_file(&self, name: &str) -> i32 {
        let path = self.dir().join(name);
        wait_until(&format!("a pid in {}", path.display()), DEADLINE, || {
            let text = std::fs::read_to_string(&path).ok()?;
            let ns_pid: i32 = text.lines().last()?.trim().parse().ok()?;
            host_pid(self, ns_pid)
        })
    }
}

/// `curl` a path on 127.0.0.1:`port` (at most 10 s): (HTTP status, body); status 0 when no
/// answer came.
pub fn curl(port: u16, path: &str, extra: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}"])
        .args(extra)
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

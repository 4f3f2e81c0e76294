//! Chaos suite (issue 5): ctrlinit as PID 1 of a fresh PID namespace with 20 programs, under a
//! seeded random storm of SIGKILLs (main processes and grandchildren), SIGSTOP/SIGCONT, exits with
//! random codes, garbage and half-open connections on the control socket, and stop / start /
//! restart / reload / signal through the CLI. Then the invariants are checked and printed with
//! figures.
//!
//! Run it:
//!   short (CI):  cargo test --test chaos -- --nocapture
//!   long:        CHAOS_SECONDS=600 cargo test --test chaos -- --nocapture
//!   replay:      CHAOS_SEED=<seed printed by a run> cargo test --test chaos -- --nocapture
//! A seed replays the same sequence of chaos decisions; thread timing (the socket-abuse thread,
//! ctrlinit's own scheduling) is not part of the replay.
//!
//! The programs are instances of `tests/chaos/prog.sh`, which prints numbered lines and copies
//! each line to a side file after writing it to stdout, so the test knows exactly which lines were
//! written.
//!
//! Synchronisation: every wait in this file waits for a fact (a state, a run number, a file) with
//! a deadline. The only sleeps are the pacing pauses between chaos actions and a slow writer's
//! bytes: they are the workload, not synchronisation. The background threads (zombie sampler,
//! socket abuse) pace on a [`Gate`] that wakes them the moment the chaos ends, and the SIGCONT
//! scheduler waits on a condition variable for the next due time.
//!
//! What is checked (and printed with figures at the end):
//! - ctrlinit stays alive and answers every well-formed request (CLI commands and raw protocol
//!   lines, counted); garbage, unterminated, oversized, wrong-version and half-sent requests get
//!   an error or are dropped, connections that hang are closed by the server;
//! - no zombie child of ctrlinit is left unreaped (see `MISSED_REAP` for the exact rule);
//! - after the chaos, with what was stopped by hand started again, every program returns to its
//!   wanted state (`ctrlinit status --wait`), and `health --strict` is 0;
//! - restart counters match what the test did. The kills are made one program at a time, and the
//!   test waits for the killed program's next run before the next action, and stops / starts /
//!   restarts by hand return only once applied, so for every program except the two that depend
//!   on `holder` with `restart = true`, restarts by policy = SIGKILLs of a live main process +
//!   `ctrlinit signal KILL|HUP` + exits the test asked for (trigger file); grandchild kills,
//!   SIGSTOP/SIGCONT, reloads and changes by hand add none. Programs never touched by hand have
//!   forced_restarts = 0 and run = 1 + restarts + stop/start-all cycles; the others have
//!   forced_restarts <= the restarts by hand that included them. For `inside1` and `inside2` a
//!   holder exit stops them asynchronously, so a kill can land on a run ctrlinit is already
//!   stopping: kills - holder exits <= restarts <= kills, and forced_restarts <= holder exits +
//!   restarts by hand. No budget is exhausted, no window count exceeds its budget;
//! - crash reports: one per SIGKILL the test sent to a main process (ctrlinit did not send it),
//!   none for `ctrlinit signal` or exit codes, each about a SIGKILL of that program;
//! - logs: every line a program wrote (per its side file) is in `<log_dir>/<name>.log` exactly
//!   once and in order; each run's lines are 0..n without gap or duplicate, the log holding at
//!   most the one line a killed run wrote to stdout but not yet to its side file;
//! - ctrlinit's descriptors and RSS after a warm-up and at the end: at most +10 fds, +2 MiB;
//! - after SIGTERM, ctrlinit exits 0 and leaves no process behind.
//!
//! A second test drives a program past `max_restarts = 3` with SIGKILLs and checks the exit with
//! `[init] exit_code` and the reverse-dependency stop order the programs record.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

// ------------------------------------------------------------------------------------------------
// Seeded randomness (splitmix64: no new dependency).

#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn chaos_seed() -> u64 {
    if let Ok(s) = std::env::var("CHAOS_SEED") {
        let s = s.trim();
        let parsed = match s.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse(),
        };
        return parsed.unwrap_or_else(|_| panic!("CHAOS_SEED={s:?} is not a number"));
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    Rng(nanos ^ ((std::process::id() as u64) << 32)).next()
}

fn chaos_seconds() -> u64 {
    std::env::var("CHAOS_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(25)
}

// ------------------------------------------------------------------------------------------------
// The programs.

/// How exactly a program's counters can be predicted from what the test did to it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// Never touched by hand, no restart-propagating dependency: every count is exact.
    Exact,
    /// Also stopped / started / restarted by hand (synchronously): restarts and crash reports are
    /// exact, forced restarts bounded by the restarts by hand that included it.
    Hand,
    /// Depends on `holder` with `restart = true`: a holder exit stops it asynchronously, so a
    /// kill may land on a run ctrlinit is already stopping. Bounded.
    Inside,
}

struct Prog {
    name: &'static str,
    oneshot: bool,
    modes: &'static str,
    burst: u32,
    class: Class,
    deps: &'static [&'static str],
    console: bool,
    /// Extra config lines for `[program.NAME]`.
    extra: &'static str,
}

const PROGS: &[Prog] = &[
    Prog {
        name: "prov",
        oneshot: true,
        modes: "oneshot",
        burst: 500,
        class: Class::Hand,
        deps: &[],
        console: false,
        extra: "",
    },
    Prog {
        name: "cleanup",
        oneshot: true,
        modes: "slowshot",
        burst: 50,
        class: Class::Hand,
        deps: &[],
        console: false,
        extra: "",
    },
    // The diamond: prov -> dtop -> (dleft, dright) -> dbottom -> post.
    Prog {
        name: "dtop",
        oneshot: false,
        modes: "ready",
        burst: 5,
        class: Class::Hand,
        deps: &["prov"],
        console: false,
        extra: "depends_on = [\"prov\"]\nready = { file = \"{dir}/ready/dtop\", interval = \"10ms\" }\nfinish = [\"/bin/rm\", \"-f\", \"{dir}/ready/dtop\"]\n",
    },
    Prog {
        name: "dleft",
        oneshot: false,
        modes: "plain",
        burst: 5,
        class: Class::Hand,
        deps: &["dtop"],
        console: false,
        extra: "depends_on = { dtop = \"ready\" }\n",
    },
    Prog {
        name: "dright",
        oneshot: false,
        modes: "fork",
        burst: 5,
        class: Class::Hand,
        deps: &["dtop"],
        console: false,
        extra: "depends_on = { dtop = \"ready\" }\n",
    },
    Prog {
        name: "dbottom",
        oneshot: false,
        modes: "plain",
        burst: 5,
        class: Class::Hand,
        deps: &["dleft", "dright"],
        console: false,
        extra: "depends_on = [\"dleft\", \"dright\"]\n",
    },
    Prog {
        name: "post",
        oneshot: true,
        modes: "oneshot",
        burst: 500,
        class: Class::Hand,
        deps: &["dbottom"],
        console: false,
        extra: "depends_on = [\"dbottom\"]\n",
    },
    // The holder others live inside (restart propagation).
    Prog {
        name: "holder",
        oneshot: false,
        modes: "ready,fork",
        burst: 5,
        class: Class::Exact,
        deps: &[],
        console: true,
        extra: "ready = { file = \"{dir}/ready/holder\", interval = \"10ms\" }\nfinish = [\"/bin/rm\", \"-f\", \"{dir}/ready/holder\"]\n",
    },
    // inside1's dependency is written as a table header at the end of its section (see config()).
    Prog {
        name: "inside1",
        oneshot: false,
        modes: "plain",
        burst: 5,
        class: Class::Inside,
        deps: &["holder"],
        console: false,
        extra: "",
    },
    Prog {
        name: "inside2",
        oneshot: false,
        modes: "fork",
        burst: 5,
        class: Class::Inside,
        deps: &["holder", "forker1"],
        console: false,
        extra: "depends_on = { holder = { condition = \"ready\", restart = true }, forker1 = \"started\" }\n",
    },
    Prog {
        name: "forker1",
        oneshot: false,
        modes: "fork",
        burst: 5,
        class: Class::Exact,
        deps: &[],
        console: false,
        extra: "",
    },
    Prog {
        name: "forker2",
        oneshot: false,
        modes: "fork2",
        burst: 5,
        class: Class::Exact,
        deps: &[],
        console: false,
        extra: "",
    },
    // Ignores SIGTERM (its children too): killed after its short stop_timeout.
    Prog {
        name: "stubborn",
        oneshot: false,
        modes: "stubborn,fork",
        burst: 5,
        class: Class::Hand,
        deps: &[],
        console: true,
        extra: "stop_timeout = \"300ms\"\n",
    },
    Prog {
        name: "trig1",
        oneshot: false,
        modes: "trigger",
        burst: 5,
        class: Class::Exact,
        deps: &[],
        console: true,
        extra: "",
    },
    Prog {
        name: "trig2",
        oneshot: false,
        modes: "trigger,fork",
        burst: 5,
        class: Class::Exact,
        deps: &[],
        console: false,
        extra: "backoff = { initial = \"20ms\", max = \"20ms\" }\n",
    },
    Prog {
        name: "log1",
        oneshot: false,
        modes: "plain",
        burst: 20,
        class: Class::Exact,
        deps: &[],
        console: true,
        extra: "",
    },
    Prog {
        name: "log2",
        oneshot: false,
        modes: "plain",
        burst: 20,
        class: Class::Exact,
        deps: &[],
        console: false,
        extra: "",
    },
    Prog {
        name: "log3",
        oneshot: false,
        modes: "plain",
        burst: 20,
        class: Class::Exact,
        deps: &[],
        console: false,
        extra: "backoff = { initial = \"10ms\", max = \"100ms\", factor = 2.0 }\n",
    },
    Prog {
        name: "log4",
        oneshot: false,
        modes: "plain",
        burst: 20,
        class: Class::Hand,
        deps: &[],
        console: false,
        extra: "",
    },
    Prog {
        name: "manual",
        oneshot: false,
        modes: "plain",
        burst: 5,
        class: Class::Hand,
        deps: &[],
        console: false,
        extra: "autostart = false\n",
    },
];

/// Added and removed by reloads during the run.
const EXTRA: Prog = Prog {
    name: "extra",
    oneshot: false,
    modes: "plain",
    burst: 5,
    class: Class::Hand,
    deps: &[],
    console: false,
    extra: "",
};

fn prog(name: &str) -> &'static Prog {
    PROGS
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no program {name}"))
}

/// Programs that (transitively) depend on `name`, and `name` itself.
fn dependents_closure(name: &str) -> BTreeSet<&'static str> {
    let mut set: BTreeSet<&'static str> = BTreeSet::new();
    set.insert(prog(name).name);
    loop {
        let before = set.len();
        for p in PROGS {
            if p.deps.iter().any(|d| set.contains(d)) {
                set.insert(p.name);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

fn script() -> String {
    format!("{}/tests/chaos/prog.sh", env!("CARGO_MANIFEST_DIR"))
}

fn program_toml(p: &Prog, budget: &str) -> String {
    let mut t = format!(
        "[program.{n}]\ncommand = [\"/bin/sh\", \"{s}\", \"{n}\", \"{{dir}}\", \"{m}\", \"{b}\"]\ntype = \"{k}\"\n{budget}{e}",
        n = p.name,
        s = script(),
        m = p.modes,
        b = p.burst,
        k = if p.oneshot { "oneshot" } else { "service" },
        e = p.extra,
    );
    if !p.extra.contains("backoff") {
        t.push_str("backoff = { initial = \"0s\", max = \"0s\" }\n");
    }
    if p.name == "inside1" {
        t.push_str(
            "[program.inside1.depends_on]\nholder = { condition = \"ready\", restart = true }\n",
        );
    }
    t.push_str(&format!(
        "[program.{}.log]\nconsole = {}\nmax_size = \"1GiB\"\n\n",
        p.name, p.console
    ));
    t
}

const CHAOS_BUDGET: &str = "max_restarts = 100000\nrestart_window = \"60s\"\n";

fn chaos_config() -> String {
    let mut t = String::from("[init]\nmax_reports = 1000\ncrash_max_size = \"4GiB\"\n\n");
    for p in PROGS {
        t.push_str(&program_toml(p, CHAOS_BUDGET));
    }
    t
}

fn make_dirs(dir: &Path) {
    for d in ["run", "side", "ready", "trig"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
}

// ------------------------------------------------------------------------------------------------
// /proc helpers.

/// A process, identified by pid and start time (pids wrap quickly: pid_max is small here).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Proc {
    pid: i32,
    start: u64,
}

/// Fields of /proc/PID/stat after the command name: [0] state, [1] ppid, [2] pgrp, [19] start.
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.get(stat.rfind(')')? + 2..)?;
    Some(after.split(' ').map(str::to_string).collect())
}

fn identify(pid: i32) -> Option<(Proc, char, i32, i32)> {
    let f = stat_fields(pid)?;
    let state = f.first()?.chars().next()?;
    let ppid = f.get(1)?.parse().ok()?;
    let pgrp = f.get(2)?.parse().ok()?;
    let start = f.get(19)?.parse().ok()?;
    Some((Proc { pid, start }, state, ppid, pgrp))
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn cmdline(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .map(|s| String::from_utf8_lossy(s).to_string())
        .collect()
}

/// Sends `sig` to `p` if it is still that process and not a zombie.
fn signal_proc(p: Proc, sig: i32) -> bool {
    match identify(p.pid) {
        Some((q, state, _, _)) if q == p && state != 'Z' => send_signal(p.pid, sig),
        _ => false,
    }
}

/// Namespace pid -> host pid for every process in ctrlinit's namespace.
fn ns_map(init_pid: i32) -> HashMap<i32, i32> {
    pids_in_namespace_of(init_pid)
        .into_iter()
        .filter_map(|host| {
            let ns = proc_status_field(host, "NSpid")?
                .split_whitespace()
                .last()?
                .parse()
                .ok()?;
            Some((ns, host))
        })
        .collect()
}

fn fd_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn rss_kib(pid: i32) -> u64 {
    proc_status_field(pid, "VmRSS")
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

// ------------------------------------------------------------------------------------------------
// Talking to ctrlinit.

/// One program as `status --json` shows it.
#[derive(Clone, Debug)]
struct St {
    name: String,
    state: String,
    pid: Option<i32>,
    run: u64,
    restarts: u64,
    forced: u64,
    in_window: u64,
    max_restarts: u64,
    last_code: Option<i64>,
    last_signal: Option<String>,
}

fn parse_st(v: &Value) -> St {
    St {
        name: v["name"].as_str().unwrap_or_default().to_string(),
        state: v["state"].as_str().unwrap_or_default().to_string(),
        pid: v["pid"].as_i64().map(|p| p as i32),
        run: v["run"].as_u64().unwrap_or(0),
        restarts: v["restarts"].as_u64().unwrap_or(0),
        forced: v["forced_restarts"].as_u64().unwrap_or(0),
        in_window: v["restarts_in_window"].as_u64().unwrap_or(0),
        max_restarts: v["max_restarts"].as_u64().unwrap_or(0),
        last_code: v["last_exit"]["code"].as_i64(),
        last_signal: v["last_exit"]["signal"].as_str().map(str::to_string),
    }
}

/// Texts the client prints when a request got no answer (see src/api/client.rs).
const UNANSWERED: &[&str] = &[
    "cannot reach ctrlinit",
    "did not answer in time",
    "connection to ctrlinit broke",
    "closed the connection without an answer",
    "unreadable answer",
    "failed to send the request",
];

fn answered(code: i32, out: &str) -> bool {
    code != 4 && !UNANSWERED.iter().any(|e| out.contains(e))
}

/// Requests made to ctrlinit and how many got an answer.
#[derive(Default)]
struct Requests {
    sent: AtomicU64,
    answered: AtomicU64,
    cli: AtomicU64,
    raw: AtomicU64,
    unanswered: Mutex<Vec<String>>,
}

impl Requests {
    fn record(&self, ok: bool, what: impl FnOnce() -> String) {
        self.sent.fetch_add(1, Relaxed);
        if ok {
            self.answered.fetch_add(1, Relaxed);
        } else {
            let mut u = self.unanswered.lock().unwrap();
            if u.len() < 20 {
                u.push(what());
            }
        }
    }
}

/// One raw request line; the parsed answer line.
fn raw_request(socket: &Path, line: &str, timeout: Duration) -> Result<Value, String> {
    let mut s = UnixStream::connect(socket).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(timeout)).unwrap();
    s.write_all(line.as_bytes())
        .and_then(|()| s.write_all(b"\n"))
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = String::new();
    BufReader::new(s)
        .read_line(&mut answer)
        .map_err(|e| format!("read: {e}"))?;
    serde_json::from_str(&answer).map_err(|e| format!("bad answer {answer:?}: {e}"))
}

// ------------------------------------------------------------------------------------------------
// Background threads: SIGCONT scheduler, zombie sampler, socket abuse.

/// SIGSTOPped processes and when they get SIGCONT, served by a thread of its own, so no wait in
/// the main loop (a CLI command blocked on a stopped program) can hold a SIGCONT back.
#[derive(Default)]
struct ContSchedule {
    /// Due SIGCONTs, and whether the chaos is over (then every one is due at once).
    state: Mutex<(Vec<(Proc, Instant)>, bool)>,
    changed: Condvar,
}

type Stopped = Arc<ContSchedule>;

impl ContSchedule {
    fn push(&self, p: Proc, at: Instant) {
        self.state.lock().unwrap().0.push((p, at));
        self.changed.notify_all();
    }

    /// Sends every pending SIGCONT now, and lets the thread end.
    fn finish(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

fn cont_thread(schedule: Stopped) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut sent = 0;
        let mut state = schedule.state.lock().unwrap();
        loop {
            let now = Instant::now();
            let finishing = state.1;
            let (due, keep): (Vec<_>, Vec<_>) = state
                .0
                .drain(..)
                .partition(|(_, at)| finishing || *at <= now);
            state.0 = keep;
            for (p, _) in due {
                if signal_proc(p, libc::SIGCONT) {
                    sent += 1;
                }
            }
            if finishing && state.0.is_empty() {
                return sent;
            }
            // Until the next one is due, or the schedule changes.
            state = match state.0.iter().map(|(_, at)| *at).min() {
                Some(next) => {
                    let wait = next.saturating_duration_since(Instant::now());
                    schedule.changed.wait_timeout(state, wait).unwrap().0
                }
                None => schedule.changed.wait(state).unwrap(),
            };
        }
    })
}

/// What the zombie sampler saw.
#[derive(Default, Debug)]
struct ZombieReport {
    samples: u64,
    /// Samples that found ctrlinit's event loop idle (asleep in epoll_wait).
    idle_samples: u64,
    /// Zombies seen in some sample (each counted once), parented by ctrlinit.
    transient_init: u64,
    /// The same, parented by a program's own process (the program's to reap).
    transient_other: u64,
    /// Zombie children of ctrlinit left unreaped: violations (see `MISSED_REAP`).
    missed: Vec<String>,
    /// Zombies parented by a program process that outlived `SLOW_REAP` (not ctrlinit's to reap).
    persistent_other: u64,
    /// Longest time a zombie child of ctrlinit was seen for (first to last sample).
    max_age_init: Duration,
    /// What ctrlinit was doing when one of its zombies was older than `SLOW_REAP` (diagnostics).
    slow_reaps: Vec<(Proc, String)>,
}

/// Zombies, and what counts as one left behind.
///
/// A zombie exists for a moment between a child's death and its parent's wait(). ctrlinit reads
/// SIGCHLD from a signalfd in its event loop and then drains every exited child, so a zombie
/// child of ctrlinit is a missed reap when, at least `MISSED_REAP` after it was first seen, the
/// event loop is found idle (its thread asleep in epoll_wait) and the zombie is still there: the
/// SIGCHLD for it was raised before that, and it woke the loop (a woken thread is runnable, not
/// asleep), which went back to sleep without reaping. That holds however loaded the machine is.
/// The loop is legitimately busy (forking a program, state R) for as long as the scheduler
/// starves it: a zombie that merely waits out such a stretch is a slow reap, reported with what
/// ctrlinit was doing, and fails only past `ZOMBIE_MAX`.
///
/// Zombies whose parent is a program's own shell are the program's business (a `sh` reaps its
/// background jobs only when it next waits, and not at all while the test holds it SIGSTOPped);
/// they are counted, not failed.
const MISSED_REAP: Duration = Duration::from_millis(20);
const ZOMBIE_MAX: Duration = Duration::from_secs(10);

/// Age of a zombie child of ctrlinit worth a diagnostic line (not a failure).
const SLOW_REAP: Duration = Duration::from_millis(100);

/// Whether ctrlinit's event loop (its main thread) is asleep in epoll_wait / epoll_pwait.
fn loop_idle(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/stat")).unwrap_or_default();
    let sleeping = stat
        .rfind(')')
        .and_then(|i| stat.get(i + 2..i + 3))
        .is_some_and(|st| st == "S");
    let syscall =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/syscall")).unwrap_or_default();
    let nr = syscall.split_whitespace().next().unwrap_or("");
    sleeping && (nr == "232" || nr == "281" || nr == "441")
}

/// What ctrlinit's threads are doing (state, wait channel, syscall, kernel stack) and its pending
/// and blocked signals: evidence for a zombie it left unreaped.
fn where_is(pid: i32) -> String {
    let mut out = format!(
        "SigPnd {:?} ShdPnd {:?} SigBlk {:?};",
        proc_status_field(pid, "SigPnd"),
        proc_status_field(pid, "ShdPnd"),
        proc_status_field(pid, "SigBlk")
    );
    // Children that have not exec'd yet (still called ctrlinit): a spawn in progress.
    for c in children_of(pid) {
        if comm(c) == "ctrlinit" {
            let read =
                |f: &str| std::fs::read_to_string(format!("/proc/{c}/{f}")).unwrap_or_default();
            let stack: Vec<String> = read("stack")
                .lines()
                .take(6)
                .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
                .collect();
            out.push_str(&format!(
                " [forked child {c} not yet exec'd: state {:?} wchan {} syscall {} stack {} SigPnd {:?} SigBlk {:?} pgrp {:?}]",
                identify(c).map(|x| x.1),
                read("wchan"),
                read("syscall").trim(),
                stack.join("<"),
                proc_status_field(c, "SigPnd"),
                proc_status_field(c, "SigBlk"),
                identify(c).map(|x| x.3),
            ));
        }
    }
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let p = t.path();
            let read = |f: &str| std::fs::read_to_string(p.join(f)).unwrap_or_default();
            let stat = read("stat");
            let state = stat
                .rfind(')')
                .and_then(|i| stat.get(i + 2..i + 3))
                .unwrap_or("?")
                .to_string();
            let stack: Vec<String> = read("stack")
                .lines()
                .take(6)
                .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
                .collect();
            out.push_str(&format!(
                " [tid {} {} state {} wchan {} syscall {} stack {}]",
                t.file_name().to_string_lossy(),
                read("comm").trim(),
                state,
                read("wchan"),
                read("syscall").trim(),
                stack.join("<")
            ));
        }
    }
    out
}

fn zombie_thread(init_pid: i32, quit: Arc<Gate>) -> std::thread::JoinHandle<ZombieReport> {
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut r = ZombieReport::default();
        // First sighting, parent, whether reported.
        let mut seen: HashMap<Proc, (Instant, i32, bool)> = HashMap::new();
        while !quit.closed() {
            // The loop's state first, then the zombies: a zombie found after an idle reading
            // existed at the moment of that reading.
            let idle_at = Instant::now();
            let idle = loop_idle(init_pid);
            r.idle_samples += u64::from(idle);
            let now = Instant::now();
            let mut present = Vec::new();
            for pid in pids_in_namespace_of(init_pid) {
                let Some((p, state, ppid, _)) = identify(pid) else {
                    continue;
                };
                if state != 'Z' {
                    continue;
                }
                present.push(p);
                let entry = seen.entry(p).or_insert_with(|| {
                    if ppid == init_pid {
                        r.transient_init += 1;
                    } else {
                        r.transient_other += 1;
                    }
                    (now, ppid, false)
                });
                let age = now.duration_since(entry.0);
                if entry.1 != init_pid {
                    if !entry.2 && age >= SLOW_REAP {
                        entry.2 = true;
                        r.persistent_other += 1;
                    }
                    continue;
                }
                r.max_age_init = r.max_age_init.max(age);
                let describe = |what: &str| {
                    format!(
                        "zombie {pid} ({}) child of ctrlinit {what}: first seen at t={:.3}s, still there {age:?} later; ctrlinit: {}",
                        comm(pid),
                        entry.0.duration_since(t0).as_secs_f64(),
                        where_is(init_pid)
                    )
                };
                let missed = idle && idle_at.saturating_duration_since(entry.0) >= MISSED_REAP;
                if !entry.2 && (missed || age >= ZOMBIE_MAX) {
                    let what = if missed {
                        "not reaped while ctrlinit's event loop sat idle"
                    } else {
                        "not reaped within ZOMBIE_MAX"
                    };
                    r.missed.push(describe(what));
                    entry.2 = true;
                } else if age >= SLOW_REAP
                    && r.slow_reaps.len() < 5
                    && !r.slow_reaps.iter().any(|(q, _)| *q == p)
                {
                    r.slow_reaps.push((p, describe("reaped late")));
                }
            }
            seen.retain(|p, _| present.contains(p));
            r.samples += 1;
            if !quit.pace(Duration::from_millis(10)) {
                break;
            }
        }
        r
    })
}

#[derive(Default, Debug)]
struct AbuseReport {
    garbage_lines: u64,
    garbage_answered: u64,
    unterminated: u64,
    oversized: u64,
    oversized_answered: u64,
    half_open: u64,
    silent_hangs: u64,
    hangs_timed_out_by_server: u64,
    wrong_version: u64,
    wrong_version_answered: u64,
    slow_writers: u64,
    max_held: usize,
}

/// Abuses the control socket until told to quit: garbage, unterminated, oversized and
/// half-sent requests, connections that hang, slow writers, and well-formed raw requests
/// (counted in `req`: each must be answered).
fn abuse_thread(
    socket: PathBuf,
    seed: u64,
    req: Arc<Requests>,
    quit: Arc<Gate>,
) -> std::thread::JoinHandle<AbuseReport> {
    std::thread::spawn(move || {
        let mut rng = Rng(seed ^ 0xABCD_EF01_2345_6789);
        let mut r = AbuseReport::default();
        let mut held: Vec<(UnixStream, Instant, bool)> = Vec::new();
        let t = Duration::from_secs(10);
        while !quit.closed() {
            // Drop held connections that are due; those held past the server's request timeout
            // (5 s) must have been answered with an error and closed by the server.
            let now = Instant::now();
            let mut i = 0;
            while i < held.len() {
                if held[i].1 <= now {
                    let (mut s, _, long) = held.swap_remove(i);
                    if long {
                        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                        let mut buf = Vec::new();
                        if s.read_to_end(&mut buf).is_ok()
                            && String::from_utf8_lossy(&buf).contains("\"error\"")
                        {
                            r.hangs_timed_out_by_server += 1;
                        }
                    }
                } else {
                    i += 1;
                }
            }
            let Ok(mut s) = UnixStream::connect(&socket) else {
                req.record(false, || "abuse: connect failed".into());
                continue;
            };
            s.set_read_timeout(Some(t)).unwrap();
            s.set_write_timeout(Some(t)).unwrap();
            match rng.below(100) {
                0..=19 => {
                    // A garbage line: must get an error line.
                    r.garbage_lines += 1;
                    let len = rng.range(1, 2000) as usize;
                    let mut bytes: Vec<u8> = rng
                        .bytes(len)
                        .into_iter()
                        .map(|b| if b == b'\n' { b'x' } else { b })
                        .collect();
                    bytes.push(b'\n');
                    let _ = s.write_all(&bytes);
                    let mut line = String::new();
                    if BufReader::new(&s).read_line(&mut line).is_ok() && line.contains("\"error\"")
                    {
                        r.garbage_answered += 1;
                    }
                }
                20..=29 => {
                    // Bytes without a newline, then the write side closed.
                    r.unterminated += 1;
                    let len = rng.range(1, 500) as usize;
                    let _ = s.write_all(&rng.bytes(len));
                    let _ = s.shutdown(std::net::Shutdown::Write);
                    let mut buf = Vec::new();
                    let _ = s.read_to_end(&mut buf);
                }
                30..=37 => {
                    // An oversized line (over the 64 KiB limit).
                    r.oversized += 1;
                    let mut bytes =
                        vec![b'a' + rng.below(26) as u8; rng.range(65 * 1024, 300 * 1024) as usize];
                    bytes[0] = b'{';
                    bytes.push(b'\n');
                    let _ = s.write_all(&bytes);
                    let mut line = String::new();
                    if BufReader::new(&s).read_line(&mut line).is_ok()
                        && line.contains("longer than")
                    {
                        r.oversized_answered += 1;
                    }
                }
                38..=49 => {
                    // Half a request, then hang.
                    r.half_open += 1;
                    let full = br#"{"v":1,"cmd":"status","names":[]}"#;
                    let cut = rng.range(1, full.len() as u64 - 1) as usize;
                    let _ = s.write_all(&full[..cut]);
                    let hold = rng.range(100, 7000);
                    held.push((s, now + Duration::from_millis(hold), hold > 6000));
                }
                50..=59 => {
                    // Connect and say nothing.
                    r.silent_hangs += 1;
                    let hold = rng.range(100, 7000);
                    held.push((s, now + Duration::from_millis(hold), hold > 6000));
                }
                60..=64 => {
                    // Well-formed JSON, wrong version or unknown command: an error line.
                    r.wrong_version += 1;
                    let line = if rng.chance(50) {
                        "{\"v\":2,\"cmd\":\"status\"}\n"
                    } else {
                        "{\"v\":1,\"cmd\":\"fly\"}\n"
                    };
                    let _ = s.write_all(line.as_bytes());
                    let mut answer = String::new();
                    if BufReader::new(&s).read_line(&mut answer).is_ok()
                        && answer.contains("\"error\"")
                    {
                        r.wrong_version_answered += 1;
                    }
                }
                65..=72 => {
                    // A well-formed request written one byte at a time.
                    r.slow_writers += 1;
                    let line = b"{\"v\":1,\"cmd\":\"health\"}\n";
                    let mut ok = true;
                    for b in line {
                        ok &= s.write_all(&[*b]).is_ok();
                        // The slowness is the workload.
                        std::thread::sleep(Duration::from_millis(rng.range(0, 20)));
                    }
                    let mut answer = String::new();
                    ok &= BufReader::new(&s).read_line(&mut answer).is_ok()
                        && answer.contains("\"type\":\"health\"");
                    req.raw.fetch_add(1, Relaxed);
                    req.record(ok, || format!("abuse: slow health request got {answer:?}"));
                }
                _ => {
                    // A well-formed request: must be answered in kind.
                    let (line, kind) = *rng.pick(&[
                        ("{\"v\":1,\"cmd\":\"status\"}", "status"),
                        ("{\"v\":1,\"cmd\":\"health\",\"strict\":true}", "health"),
                        ("{\"v\":1,\"cmd\":\"graph\"}", "graph"),
                        (
                            "{\"v\":1,\"cmd\":\"status\",\"names\":[\"log1\",\"holder\"]}",
                            "status",
                        ),
                    ]);
                    drop(s);
                    let got = raw_request(&socket, line, t);
                    let ok = matches!(&got, Ok(v) if v["type"] == kind);
                    req.raw.fetch_add(1, Relaxed);
                    req.record(ok, || format!("abuse: {line} got {got:?}"));
                }
            }
            r.max_held = r.max_held.max(held.len());
            while held.len() > 40 {
                held.remove(0);
            }
            // Pacing of the abuse, not synchronisation.
            if !quit.pace(Duration::from_millis(rng.range(2, 25))) {
                break;
            }
        }
        r
    })
}

// ------------------------------------------------------------------------------------------------
// The chaos driver.

/// What the test did to one program.
#[derive(Default, Debug, Clone)]
struct Did {
    /// SIGKILLs the test sent to a live main process.
    kills: u64,
    /// `ctrlinit signal KILL|HUP` (ctrlinit sends them: a restart, no crash report).
    ctl_kills: u64,
    /// Exits with a code the test asked for (trigger file).
    triggers: u64,
    /// SIGKILLs sent to other processes of its group (grandchildren).
    grand_kills: u64,
    sigstops: u64,
    stops: u64,
    starts: u64,
    /// Restarts by hand whose set may include this program.
    restarts_by_hand: u64,
}

/// What the driver needs of the running init (owned, so the test can still wait for its exit).
#[derive(Clone)]
struct Target {
    pid: i32,
    socket: PathBuf,
    dir: PathBuf,
}

impl Target {
    fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs a ctrlinit client command, as `Init::ctl` does.
    fn ctl(&self, args: &[&str]) -> (i32, String) {
        ctl_at(&self.socket, args)
    }
}

struct Chaos {
    init: Target,
    seed: u64,
    rng: Rng,
    did: BTreeMap<&'static str, Did>,
    req: Arc<Requests>,
    stopped: Stopped,
    failures: Vec<String>,
    actions: BTreeMap<&'static str, u64>,
    stop_all_cycles: u64,
    extra_present: bool,
    reloads_ok: u64,
    reloads_busy: u64,
    reloads_invalid: u64,
    exit_codes: Vec<i64>,
}

impl Chaos {
    fn fail(&mut self, msg: String) {
        eprintln!("chaos (seed {}): INVARIANT FAILED: {msg}", self.seed);
        self.failures.push(msg);
    }

    /// A CLI command (counted as a request).
    fn ctl(&mut self, args: &[&str]) -> (i32, String) {
        let (code, out) = self.init.ctl(args);
        self.req.cli.fetch_add(1, Relaxed);
        self.req.record(answered(code, &out), || {
            format!("ctrlinit {args:?} -> {code}: {out}")
        });
        (code, out)
    }

    /// A CLI command that must succeed.
    fn ctl_ok(&mut self, args: &[&str]) -> String {
        let (code, out) = self.ctl(args);
        if code != 0 {
            self.fail(format!(
                "`ctrlinit {}` exited {code}: {}",
                args.join(" "),
                out.trim()
            ));
        }
        out
    }

    /// `ctrlinit status --json`.
    fn status(&mut self) -> Vec<St> {
        let (code, out) = self.ctl(&["status", "--json"]);
        match serde_json::from_str::<Value>(&out) {
            Ok(Value::Array(list)) if code == 0 || code == 3 => list.iter().map(parse_st).collect(),
            _ => {
                self.fail(format!("status --json exited {code}: {out}"));
                Vec::new()
            }
        }
    }

    /// One program over the raw protocol (counted as a request); used for polling.
    fn raw_status(&mut self, name: &str) -> Option<St> {
        let line = format!("{{\"v\":1,\"cmd\":\"status\",\"names\":[\"{name}\"]}}");
        let got = raw_request(&self.init.socket, &line, Duration::from_secs(10));
        self.req.raw.fetch_add(1, Relaxed);
        let ok = matches!(&got, Ok(v) if v["type"] == "status");
        self.req.record(ok, || format!("raw {line} got {got:?}"));
        got.ok()?["programs"].as_array()?.first().map(parse_st)
    }

    /// Waits until `name` has begun a run after `old_run` (the policy decided about the old one),
    /// or is down for good.
    fn wait_new_run(&mut self, name: &str, old_run: u64, why: &str) -> Option<St> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut pause = Duration::from_millis(1);
        loop {
            if let Some(s) = self.raw_status(name) {
                if s.run > old_run {
                    return Some(s);
                }
                if ["stopped", "exited", "exhausted"].contains(&s.state.as_str()) {
                    self.fail(format!("{name} is {} after {why} (run {old_run})", s.state));
                    return Some(s);
                }
            }
            if Instant::now() > deadline {
                self.fail(format!(
                    "{name} did not start a new run within 30 s after {why}"
                ));
                return None;
            }
            std::thread::park_timeout(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// The host process of a program's main, checked: alive, its group's leader, running our
    /// script for that program.
    fn main_proc(&self, s: &St, map: &HashMap<i32, i32>) -> Option<Proc> {
        let host = *map.get(&s.pid?)?;
        let (p, state, _, pgrp) = identify(host)?;
        let argv = cmdline(host);
        let ours = argv.get(1).is_some_and(|a| a.ends_with("prog.sh"))
            && argv.get(2).map(String::as_str) == Some(s.name.as_str());
        (state != 'Z' && pgrp == host && ours).then_some(p)
    }

    fn live(&self, st: &[St]) -> Vec<St> {
        st.iter()
            .filter(|s| (s.state == "running" || s.state == "starting") && s.pid.is_some())
            .filter(|s| s.name != "extra")
            .cloned()
            .collect()
    }

    fn did(&mut self, name: &str) -> &mut Did {
        let name = if name == "extra" {
            EXTRA.name
        } else {
            prog(name).name
        };
        self.did.entry(name).or_default()
    }

    // ---- actions ----

    /// SIGKILLs the main processes of 1 (or a burst of several) programs.
    /// SIGKILLs the main processes of `n` programs at once (all live ones when `n` is 0).
    fn kill_mains(&mut self, n: usize) {
        let st = self.status();
        let mut live = self.live(&st);
        if live.is_empty() {
            return;
        }
        let n = if n == 0 { live.len() } else { n };
        let map = ns_map(self.init.pid);
        let mut killed = Vec::new();
        for _ in 0..n.min(live.len()) {
            let i = self.rng.below(live.len() as u64) as usize;
            let s = live.swap_remove(i);
            let Some(p) = self.main_proc(&s, &map) else {
                continue;
            };
            if signal_proc(p, libc::SIGKILL) {
                self.did(&s.name).kills += 1;
                killed.push(s);
            }
        }
        for s in killed {
            self.wait_new_run(&s.name, s.run, "a SIGKILL");
        }
    }

    /// SIGKILLs one grandchild (a `sleep` or a subshell) of a program.
    fn kill_grandchild(&mut self) {
        let st = self.status();
        let live = self.live(&st);
        let map = ns_map(self.init.pid);
        let mut victims = Vec::new();
        for s in &live {
            let Some(main) = self.main_proc(s, &map) else {
                continue;
            };
            for &host in map.values() {
                let Some((p, state, _, pgrp)) = identify(host) else {
                    continue;
                };
                let c = comm(host);
                if pgrp == main.pid
                    && host != main.pid
                    && state != 'Z'
                    && (c == "sleep" || c == "sh")
                {
                    victims.push((s.name.clone(), p));
                }
            }
        }
        if victims.is_empty() {
            return;
        }
        let (name, p) = self.rng.pick(&victims).clone();
        if signal_proc(p, libc::SIGKILL) {
            self.did(&name).grand_kills += 1;
        }
    }

    /// SIGSTOPs a main process or a group member; the CONT thread resumes it later.
    fn sigstop(&mut self) {
        let st = self.status();
        let live = self.live(&st);
        if live.is_empty() {
            return;
        }
        let s = self.rng.pick(&live).clone();
        let map = ns_map(self.init.pid);
        let Some(main) = self.main_proc(&s, &map) else {
            return;
        };
        let target = if self.rng.chance(70) {
            main
        } else {
            let members: Vec<Proc> = map
                .values()
                .filter_map(|&h| identify(h))
                .filter(|(p, state, _, pgrp)| {
                    *pgrp == main.pid && p.pid != main.pid && *state != 'Z'
                })
                .map(|(p, ..)| p)
                .collect();
            if members.is_empty() {
                main
            } else {
                *self.rng.pick(&members)
            }
        };
        let hold = Duration::from_millis(self.rng.range(20, 800));
        if signal_proc(target, libc::SIGSTOP) {
            self.did(&s.name).sigstops += 1;
            self.stopped.push(target, Instant::now() + hold);
        }
    }

    /// Makes a trigger program exit with a random code.
    fn trigger(&mut self) {
        let name = *self.rng.pick(&["trig1", "trig2"]);
        let Some(s) = self.raw_status(name) else {
            return;
        };
        if s.state != "running" {
            return;
        }
        let dir = self.init.dir().join("trig");
        if dir.join(name).exists() {
            self.fail(format!(
                "trigger file for {name} still there before a new trigger"
            ));
            return;
        }
        let code = self.rng.below(126) as i64;
        std::fs::write(dir.join(format!(".{name}")), format!("{code}\n")).unwrap();
        std::fs::rename(dir.join(format!(".{name}")), dir.join(name)).unwrap();
        self.did(name).triggers += 1;
        if let Some(after) = self.wait_new_run(name, s.run, "a trigger exit") {
            // The run that exited was the one that read the trigger.
            if after.last_code != Some(code) {
                self.fail(format!(
                    "{name} was made to exit {code}, status says last exit code {:?} signal {:?}",
                    after.last_code, after.last_signal
                ));
            }
            self.exit_codes.push(code);
        }
        let path = dir.join(name);
        let _ = wait_until_soft(Duration::from_secs(10), || (!path.exists()).then_some(()));
    }

    /// `ctrlinit signal KILL|HUP NAME`: a restart without a crash report.
    fn ctl_signal(&mut self) {
        let st = self.status();
        let live = self.live(&st);
        if live.is_empty() {
            return;
        }
        let s = self.rng.pick(&live).clone();
        let sig = *self.rng.pick(&["SIGKILL", "HUP"]);
        let (code, out) = self.ctl(&["signal", sig, &s.name]);
        if code == 0 {
            self.did(&s.name).ctl_kills += 1;
            self.wait_new_run(&s.name, s.run, "ctrlinit signal");
        } else if !out.contains("is not running") {
            self.fail(format!(
                "ctrlinit signal {sig} {} exited {code}: {out}",
                s.name
            ));
        }
    }

    const HAND: &'static [&'static str] = &[
        "cleanup", "dtop", "dleft", "dright", "dbottom", "post", "inside1", "inside2", "stubborn",
        "log4", "manual",
    ];

    fn stop_by_hand(&mut self) {
        let name = *self.rng.pick(Self::HAND);
        self.ctl_ok(&["stop", name]);
        for n in dependents_closure(name) {
            self.did(n).stops += 1;
        }
    }

    fn start_by_hand(&mut self) {
        let st = self.status();
        let stopped: Vec<String> = st
            .iter()
            .filter(|s| s.state == "stopped" && s.name != "extra")
            .map(|s| s.name.clone())
            .collect();
        if stopped.is_empty() {
            return;
        }
        let name = self.rng.pick(&stopped).clone();
        self.ctl_ok(&["start", &name]);
        self.did(&name).starts += 1;
    }

    fn restart_by_hand(&mut self) {
        let mut choices = Self::HAND.to_vec();
        choices.push("prov");
        let name = *self.rng.pick(&choices);
        self.ctl_ok(&["restart", name]);
        for n in dependents_closure(name) {
            self.did(n).restarts_by_hand += 1;
        }
    }

    /// An operator restarts a program while another (a deploy script) reloads the unchanged
    /// configuration: `ctrlinit restart` runs in a thread, the reload comes 0-150 ms later.
    /// `stubborn` (300 ms to stop) keeps its restart in progress long enough to overlap.
    fn restart_with_reload(&mut self) {
        let name = *self.rng.pick(&["stubborn", "stubborn", "dtop", "log4"]);
        let delay = Duration::from_millis(self.rng.range(0, 150));
        let target = self.init.clone();
        let restart =
            std::thread::spawn(move || target.ctl(&["restart", name, "--timeout", "10s"]));
        // The gap between the two operators: workload, not synchronisation.
        std::thread::sleep(delay);
        let (code, out) = self.ctl(&["reload"]);
        if code == 0 && out.contains("added none; removed none; changed none") {
            self.reloads_ok += 1;
        } else if code == 1 && out.contains("already in progress") {
            self.reloads_busy += 1;
        } else {
            self.fail(format!("reload during a restart: exit {code}: {out}"));
        }
        let (code, out) = restart.join().expect("restart thread");
        self.req.cli.fetch_add(1, Relaxed);
        self.req.record(answered(code, &out), || {
            format!("restart {name} -> {code}: {out}")
        });
        if code != 0 {
            self.fail(format!(
                "`ctrlinit restart {name}` with a reload {delay:?} later exited {code}: {}",
                out.trim()
            ));
        }
        for n in dependents_closure(name) {
            self.did(n).restarts_by_hand += 1;
        }
    }

    fn stop_start_all(&mut self) {
        self.ctl_ok(&["stop", "--all"]);
        self.ctl_ok(&["start", "--all"]);
        self.stop_all_cycles += 1;
    }

    /// `extra`'s config file, as the harness would write it (`{dir}` replaced).
    fn extra_toml(&self) -> String {
        program_toml(&EXTRA, CHAOS_BUDGET).replace("{dir}", self.init.dir().to_str().unwrap())
    }

    /// Adds `extra` by a reload when it is absent, removes it when present.
    fn reload_toggle_extra(&mut self) {
        let conf = self.init.dir().join("conf.d");
        let file = conf.join("extra.toml");
        let adding = !self.extra_present;
        if adding {
            std::fs::write(&file, self.extra_toml()).unwrap();
        } else {
            std::fs::remove_file(&file).unwrap();
        }
        let (code, out) = self.ctl(&["reload"]);
        let want = if adding {
            "added extra"
        } else {
            "removed extra"
        };
        if code == 0 && out.contains(want) {
            self.reloads_ok += 1;
            self.extra_present = adding;
        } else if code == 1 && out.contains("already in progress") {
            self.reloads_busy += 1;
            // Undo, so the files match what runs.
            if adding {
                std::fs::remove_file(&file).unwrap();
            } else {
                std::fs::write(&file, self.extra_toml()).unwrap();
            }
        } else {
            self.fail(format!("reload ({want}): exit {code}: {out}"));
        }
    }

    fn reload(&mut self) {
        let conf = self.init.dir().join("conf.d");
        match self.rng.below(3) {
            0 => {
                let (code, out) = self.ctl(&["reload"]);
                if code == 0 && out.contains("added none; removed none; changed none") {
                    self.reloads_ok += 1;
                } else if code == 1 && out.contains("already in progress") {
                    self.reloads_busy += 1;
                } else {
                    self.fail(format!("reload of an unchanged config: exit {code}: {out}"));
                }
            }
            1 => self.reload_toggle_extra(),
            _ => {
                let file = conf.join("zz_broken.toml");
                std::fs::write(&file, "[program.broken]\ncommand = 5\nbogus = true\n").unwrap();
                let (code, out) = self.ctl(&["reload"]);
                std::fs::remove_file(&file).unwrap();
                if code == 1 && out.contains("already in progress") {
                    self.reloads_busy += 1;
                } else if code == 1 && out.contains("zz_broken.toml") {
                    self.reloads_invalid += 1;
                } else {
                    self.fail(format!("reload of an invalid config: exit {code}: {out}"));
                }
            }
        }
    }

    fn query(&mut self) {
        match self.rng.below(6) {
            0 => {
                let (code, out) = self.ctl(&["status"]);
                if code != 0 && code != 3 {
                    self.fail(format!("status exited {code}: {out}"));
                }
            }
            1 => {
                let (code, out) = self.ctl(&["health"]);
                if !(code == 0 && out.starts_with("healthy")
                    || code == 1 && out.starts_with("unhealthy: "))
                {
                    self.fail(format!("health exited {code}: {out}"));
                }
            }
            2 => {
                self.ctl_ok(&["status", "--wait", "prov=completed", "--timeout", "20s"]);
            }
            3 => {
                self.ctl_ok(&["logs", "-n", "5", "log1", "holder"]);
            }
            4 => {
                self.ctl_ok(&["graph"]);
            }
            _ => {
                self.status();
            }
        }
    }

    fn step(&mut self, allow_stop_all: bool) {
        let roll = self.rng.below(1000);
        let action = match roll {
            0..=279 => "kill-main",
            280..=329 => "kill-burst",
            330..=449 => "kill-grandchild",
            450..=549 => "sigstop",
            550..=649 => "trigger",
            650..=699 => "ctl-signal",
            700..=759 => "stop",
            760..=839 => "start",
            840..=874 => "restart",
            875..=894 => "restart-with-reload",
            895..=929 => "reload",
            930..=994 => "query",
            _ if allow_stop_all => "stop-start-all",
            _ => "query",
        };
        *self.actions.entry(action).or_default() += 1;
        match action {
            "kill-main" => self.kill_mains(1),
            "kill-burst" => {
                let n = self.rng.range(2, 5) as usize;
                self.kill_mains(n)
            }
            "kill-grandchild" => self.kill_grandchild(),
            "sigstop" => self.sigstop(),
            "trigger" => self.trigger(),
            "ctl-signal" => self.ctl_signal(),
            "stop" => self.stop_by_hand(),
            "start" => self.start_by_hand(),
            "restart" => self.restart_by_hand(),
            "reload" => self.reload(),
            "stop-start-all" => self.stop_start_all(),
            "restart-with-reload" => self.restart_with_reload(),
            _ => self.query(),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Log and crash-report checks.

/// Lines of `<log_dir>/<name>.log` with its rotated backups, oldest first.
fn log_lines(log_dir: &Path, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for k in (1..=20).rev() {
        out.extend(file_lines(&log_dir.join(format!("{name}.log.{k}"))));
    }
    out.extend(file_lines(&log_dir.join(format!("{name}.log"))));
    out
}

/// The padding prog.sh puts at the end of every line.
const PAD: &str =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz";

/// What `sh` itself prints on its stderr (merged into the log) when the test SIGKILLs its
/// foreground `sleep`: the program's own output, but not a numbered line.
const SHELL_NOTICES: &[&str] = &["Killed"];

/// Parses "NAME RUN SEQ PAD" lines into run -> sequence numbers (in file order); other lines go to
/// `foreign` (shell notices are skipped).
fn runs_of(lines: &[String], name: &str, foreign: &mut Vec<String>) -> BTreeMap<u64, Vec<u64>> {
    let mut runs: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for l in lines {
        if SHELL_NOTICES.contains(&l.as_str()) {
            continue;
        }
        let parts: Vec<&str> = l.split(' ').collect();
        let parsed = match parts.as_slice() {
            [n, r, s, pad] if *n == name && *pad == PAD => {
                r.parse::<u64>().ok().zip(s.parse::<u64>().ok())
            }
            _ => None,
        };
        match parsed {
            Some((r, s)) => runs.entry(r).or_default().push(s),
            None => foreign.push(l.clone()),
        }
    }
    runs
}

#[derive(Default)]
struct LogCheck {
    programs: usize,
    runs: usize,
    lines: usize,
    problems: Vec<String>,
}

/// Every line in a program's side file is in its log exactly once, in order; per run the log
/// holds 0..n contiguously, n = side lines or side lines + 1 (the last line written to stdout by
/// a run killed before it wrote the side copy).
fn check_logs(dir: &Path, names: &[&str]) -> LogCheck {
    let mut c = LogCheck::default();
    for &name in names {
        let side_lines = file_lines(&dir.join("side").join(name));
        let log_path = dir.join("log").join(format!("{name}.log"));
        if side_lines.is_empty() && !log_path.exists() {
            continue;
        }
        c.programs += 1;
        let mut foreign = Vec::new();
        let side = runs_of(&side_lines, name, &mut foreign);
        if !foreign.is_empty() {
            c.problems.push(format!(
                "{name}: side file has foreign lines {:?}",
                &foreign[..foreign.len().min(3)]
            ));
        }
        let log = runs_of(&log_lines(&dir.join("log"), name), name, &mut foreign);
        if !foreign.is_empty() {
            c.problems.push(format!(
                "{name}: log has {} lines not written by the program, e.g. {:?}",
                foreign.len(),
                &foreign[..foreign.len().min(3)]
            ));
        }
        let all_runs: BTreeSet<u64> = side.keys().chain(log.keys()).copied().collect();
        for run in all_runs {
            c.runs += 1;
            let s = side.get(&run).map_or(&[][..], Vec::as_slice);
            let l = log.get(&run).map_or(&[][..], Vec::as_slice);
            c.lines += l.len();
            let contiguous = l.iter().enumerate().all(|(i, &v)| v == i as u64);
            if !contiguous {
                let bad = l
                    .iter()
                    .enumerate()
                    .find(|(i, v)| **v != *i as u64)
                    .unwrap();
                c.problems.push(format!(
                    "{name} run {run}: log sequence broken at position {} (found {}, {} lines in the log, {} in the side file): {}",
                    bad.0,
                    bad.1,
                    l.len(),
                    s.len(),
                    if l[..bad.0].contains(bad.1) { "duplicate" } else { "gap or disorder" }
                ));
            } else if l.len() < s.len() {
                c.problems.push(format!(
                    "{name} run {run}: {} lines lost (the program wrote {}, the log has {})",
                    s.len() - l.len(),
                    s.len(),
                    l.len()
                ));
            } else if l.len() > s.len() + 1 {
                c.problems.push(format!(
                    "{name} run {run}: log has {} lines, the program wrote {}",
                    l.len(),
                    s.len()
                ));
            }
        }
    }
    c
}

/// Crash reports of `name` that are not about a SIGKILL of that program (the only crash the
/// test causes).
fn odd_crash_reports(dir: &Path, name: &str) -> Vec<String> {
    let Ok(d) = std::fs::read_dir(dir.join("crash").join(name)) else {
        return Vec::new();
    };
    d.flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let v: Value = serde_json::from_str(&text).unwrap_or_default();
            (v["program"] != name || v["signal"] != "SIGKILL" || v["core_dumped"] != false)
                .then(|| format!("{}: {text}", e.path().display()))
        })
        .collect()
}

fn crash_reports(dir: &Path, name: &str) -> usize {
    std::fs::read_dir(dir.join("crash").join(name))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}

// ------------------------------------------------------------------------------------------------
// The tests.

/// One storm: the init under test, the chaos driving it, and what it shares with the background
/// threads.
struct Storm {
    init: Init,
    dir: PathBuf,
    seed: u64,
    chaos: Chaos,
    /// `NAME=STATE` of every program in its wanted state.
    wanted: Vec<String>,
    req: Arc<Requests>,
    quit: Arc<Gate>,
    stopped: Stopped,
}

/// The background threads of a storm: the zombie sampler, the socket abuser, the SIGCONT
/// scheduler.
struct Background {
    zombies: std::thread::JoinHandle<ZombieReport>,
    abuse: std::thread::JoinHandle<AbuseReport>,
    conts: std::thread::JoinHandle<u64>,
}

/// What the background threads saw.
struct Seen {
    zombies: ZombieReport,
    abuse: AbuseReport,
    conts_sent: u64,
}

/// How the timed chaos went: its length and ctrlinit's resource peaks.
struct Peaks {
    chaos_time: Duration,
    /// Highest fd count and RSS in the warm-up round and the first quarter of the chaos.
    warm: (usize, u64),
    /// Highest in its second half.
    late: (usize, u64),
}

/// The per-program counters checked against what the test did.
struct Counters {
    lines: Vec<String>,
    /// Crash reports each program should have: (at least, at most).
    expected_reports: BTreeMap<&'static str, (u64, u64)>,
    restarts: u64,
    forced: u64,
}

/// ctrlinit's resources at the end, quiet.
struct Resources {
    end_fds: usize,
    end_rss: u64,
}

#[test]
fn chaos_storm_keeps_every_invariant() {
    let seed = chaos_seed();
    let seconds = chaos_seconds();
    eprintln!(
        "chaos: seed {seed} (replay with CHAOS_SEED={seed}), {seconds} s of chaos (CHAOS_SECONDS)"
    );
    let mut storm = bring_up(seed);
    let background = start_background(&storm);
    let peaks = run_storm(&mut storm, seconds);
    let seen = stop_background(&storm, background);
    settle(&mut storm);
    let counters = check_counters(&mut storm);
    let reports = check_crash_reports(&mut storm, &counters);
    let resources = check_resources(&mut storm, &peaks);
    check_liveness(&mut storm, &seen);
    let (exit, logs) = stop_and_check_logs(&mut storm);
    check_abuse_answers(&mut storm, &seen.abuse);
    report(
        &storm, &peaks, &seen, &counters, reports, &resources, exit, &logs,
    );
    let Storm { chaos, .. } = storm;
    assert!(
        chaos.failures.is_empty(),
        "chaos seed {seed} (replay: CHAOS_SEED={seed} CHAOS_SECONDS={seconds}): {} invariants failed:\n{}",
        chaos.failures.len(),
        chaos.failures.join("\n")
    );
}

/// Phase 1: ctrlinit up with every program in its wanted state, `manual` started by hand,
/// `extra` added by a reload, and every program's ring full.
fn bring_up(seed: u64) -> Storm {
    let builder = init().file("chaos.toml", &chaos_config());
    make_dirs(&builder.dir());
    let init = builder.start();
    let dir = init.dir().to_path_buf();

    // Everything autostarted up.
    let wanted: Vec<String> = PROGS
        .iter()
        .filter(|p| p.name != "manual")
        .map(|p| {
            format!(
                "{}={}",
                p.name,
                if p.oneshot { "completed" } else { "running" }
            )
        })
        .collect();
    let mut args: Vec<&str> = vec!["status", "--wait"];
    args.extend(wanted.iter().map(String::as_str));
    args.extend(["--timeout", "60s"]);
    let (code, out) = init.ctl(&args);
    assert_eq!(code, 0, "seed {seed}: programs did not come up: {out}");

    let req = Arc::new(Requests::default());
    let quit = Gate::new(true);
    let stopped: Stopped = Arc::default();

    let mut chaos = Chaos {
        init: Target {
            pid: init.pid,
            socket: init.socket.clone(),
            dir: dir.clone(),
        },
        seed,
        rng: Rng(seed),
        did: PROGS.iter().map(|p| (p.name, Did::default())).collect(),
        req: Arc::clone(&req),
        stopped: Arc::clone(&stopped),
        failures: Vec::new(),
        actions: BTreeMap::new(),
        stop_all_cycles: 0,
        extra_present: false,
        reloads_ok: 0,
        reloads_busy: 0,
        reloads_invalid: 0,
        exit_codes: Vec::new(),
    };
    chaos.did.insert("extra", Did::default());

    // Every program has run once before the chaos (so every per-program buffer exists): start
    // `manual` (autostart = false) and add `extra` by a reload.
    chaos.ctl_ok(&["start", "manual"]);
    chaos.did("manual").starts += 1;
    std::fs::write(dir.join("conf.d/extra.toml"), chaos.extra_toml()).unwrap();
    let out = chaos.ctl_ok(&["reload"]);
    assert!(out.contains("added extra"), "seed {seed}: {out}");
    chaos.extra_present = true;
    chaos.ctl_ok(&["status", "--wait", "extra=running", "--timeout", "30s"]);
    assert!(
        chaos.failures.is_empty(),
        "seed {seed}: {:?}",
        chaos.failures
    );
    // Every program's in-memory ring (64 KiB, grown as it writes) full before the warm-up
    // sample, so its growth is not mistaken for a leak: each log file holds over 80 KiB.
    let log_dir = dir.join("log");
    let filled = wait_until_soft(Duration::from_secs(90), || {
        let mut names: Vec<&str> = PROGS.iter().map(|p| p.name).collect();
        names.push("extra");
        names
            .iter()
            .all(|n| {
                std::fs::metadata(log_dir.join(format!("{n}.log"))).map_or(0, |m| m.len())
                    > 80 * 1024
            })
            .then_some(())
    });
    assert!(
        filled.is_some(),
        "seed {seed}: logs did not reach 80 KiB each within 90 s: {:?}",
        std::fs::read_dir(&log_dir)
            .unwrap()
            .flatten()
            .map(|e| (e.file_name(), e.metadata().map_or(0, |m| m.len())))
            .collect::<Vec<_>>()
    );

    Storm {
        init,
        dir,
        seed,
        chaos,
        wanted,
        req,
        quit,
        stopped,
    }
}

fn start_background(storm: &Storm) -> Background {
    Background {
        zombies: zombie_thread(storm.init.pid, Arc::clone(&storm.quit)),
        abuse: abuse_thread(
            storm.init.socket.clone(),
            storm.seed,
            Arc::clone(&storm.req),
            Arc::clone(&storm.quit),
        ),
        conts: cont_thread(Arc::clone(&storm.stopped)),
    }
}

/// Phase 2: the storm itself, a warm-up round then the timed chaos, sampling ctrlinit's
/// resources.
fn run_storm(storm: &mut Storm, seconds: u64) -> Peaks {
    let (init, chaos, req) = (&storm.init, &mut storm.chaos, &storm.req);
    // The warm-up round, before the timed chaos: the peaks of concurrency ctrlinit will see (every
    // program killed at once, twice; every program stopped and started at once; reloads adding
    // and removing a program), so its heap reaches its working size (log pumps' read buffers,
    // crash reports in flight).
    //
    // Resources are compared peak to peak: ctrlinit's RSS moves up and down by a megabyte or two
    // with the number of runs being drained at a moment (glibc gives freed memory back), so a
    // single sample says little. `warm_peak` is the highest fd count and RSS seen during the
    // warm-up round and the first quarter of the timed chaos; `late_peak` the highest in its
    // second half. A leak raises the late RSS peak over the warm one; the end (quiet) samples
    // of both are compared with the warm peak too.
    let mut warm_peak = (0usize, 0u64);
    let sample_into = |peak: &mut (usize, u64)| {
        peak.0 = peak.0.max(fd_count(init.pid));
        peak.1 = peak.1.max(rss_kib(init.pid));
    };
    for _ in 0..2 {
        chaos.kill_mains(0);
        *chaos.actions.entry("warm-up kill-all").or_default() += 1;
        sample_into(&mut warm_peak);
    }
    chaos.stop_start_all();
    *chaos.actions.entry("warm-up stop-start-all").or_default() += 1;
    sample_into(&mut warm_peak);
    for _ in 0..2 {
        chaos.reload_toggle_extra();
        *chaos.actions.entry("warm-up reload").or_default() += 1;
        sample_into(&mut warm_peak);
    }

    let started = Instant::now();
    let total = Duration::from_secs(seconds);
    // The warm-up lasts a quarter of the timed chaos, and at least 40 actions (a loaded machine
    // can slow the chaos down), half of it at most.
    let warm_at = (total / 4).max(Duration::from_secs(3)).min(total);
    let mut warmed = false;
    let mut late_peak = (0usize, 0u64);
    let mut last_stop_all = Instant::now();
    let mut last_sample = Instant::now();
    while started.elapsed() < total {
        let allow = last_stop_all.elapsed() > Duration::from_secs(10);
        let cycles = chaos.stop_all_cycles;
        chaos.step(allow);
        if chaos.stop_all_cycles > cycles {
            last_stop_all = Instant::now();
        }
        let done: u64 = chaos.actions.values().sum();
        warmed |= (started.elapsed() >= warm_at && done >= 40) || started.elapsed() >= total / 2;
        if !warmed {
            sample_into(&mut warm_peak);
        } else if started.elapsed() >= total / 2 {
            sample_into(&mut late_peak);
        }
        if last_sample.elapsed() >= Duration::from_secs(5) {
            last_sample = Instant::now();
            eprintln!(
                "chaos: t={:>4.0}s ctrlinit fds {} RSS {} KiB, {} actions, {} requests",
                started.elapsed().as_secs_f64(),
                fd_count(init.pid),
                rss_kib(init.pid),
                chaos.actions.values().sum::<u64>(),
                req.sent.load(Relaxed)
            );
        }
        // Pacing between chaos actions: the workload, not synchronisation.
        std::thread::sleep(Duration::from_millis(chaos.rng.range(5, 50)));
    }
    let chaos_time = started.elapsed();

    Peaks {
        chaos_time,
        warm: warm_peak,
        late: late_peak,
    }
}

fn stop_background(storm: &Storm, background: Background) -> Seen {
    storm.quit.close();
    let abuse = background.abuse.join().expect("abuse thread");
    let zombies = background.zombies.join().expect("zombie thread");
    storm.stopped.finish();
    let conts_sent = background.conts.join().expect("cont thread");
    Seen {
        zombies,
        abuse,
        conts_sent,
    }
}

/// Phase 3: every program back to its wanted state, healthy.
fn settle(storm: &mut Storm) {
    let (init, chaos, wanted) = (&storm.init, &mut storm.chaos, &mut storm.wanted);
    // Every program back to its wanted state: start what was stopped by hand (and `manual`).
    let st = chaos.status();
    let down: Vec<String> = st
        .iter()
        .filter(|s| s.state == "stopped")
        .map(|s| s.name.clone())
        .collect();
    if !down.is_empty() {
        let mut a = vec!["start"];
        a.extend(down.iter().map(String::as_str));
        chaos.ctl_ok(&a);
    }
    wanted.push("manual=running".into());
    if chaos.extra_present {
        wanted.push("extra=running".into());
    } else {
        let sock = init.socket.clone();
        let gone = wait_until_soft(Duration::from_secs(30), || {
            let v = raw_request(
                &sock,
                "{\"v\":1,\"cmd\":\"status\"}",
                Duration::from_secs(10),
            )
            .ok()?;
            let has = v["programs"]
                .as_array()?
                .iter()
                .any(|p| p["name"] == "extra");
            (!has).then_some(())
        });
        if gone.is_none() {
            chaos.fail("extra was removed by a reload but is still listed after 30 s".into());
        }
    }
    let mut a: Vec<&str> = vec!["status", "--wait"];
    a.extend(wanted.iter().map(String::as_str));
    a.extend(["--timeout", "60s"]);
    let (code, out) = chaos.ctl(&a);
    if code != 0 {
        chaos.fail(format!(
            "not every program returned to its wanted state: {out}"
        ));
    }
    let (hcode, hout) = chaos.ctl(&["health", "--strict"]);
    if hcode != 0 {
        chaos.fail(format!("health --strict after the chaos: {hout}"));
    }
}

/// Phase 4: each program's restart counters against what the test did to it.
fn check_counters(storm: &mut Storm) -> Counters {
    let (chaos, dir) = (&mut storm.chaos, &storm.dir);
    let st = chaos.status();
    let by_name: HashMap<String, St> = st.iter().map(|s| (s.name.clone(), s.clone())).collect();
    let holder_exits = {
        let d = &chaos.did["holder"];
        d.kills + d.ctl_kills
    };
    let mut counter_lines = Vec::new();
    let mut expected_reports: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let (mut total_restarts, mut total_forced) = (0, 0);
    for p in PROGS {
        let d = chaos.did[p.name].clone();
        let Some(s) = by_name.get(p.name) else {
            chaos.fail(format!("{} missing from status", p.name));
            continue;
        };
        total_restarts += s.restarts;
        total_forced += s.forced;
        let k = d.kills + d.ctl_kills;
        let mut problems = Vec::new();
        match p.class {
            Class::Exact | Class::Hand => {
                // Every run the test ended (SIGKILL to the main, `ctrlinit signal`, a trigger exit)
                // while the program was up is exactly one restart by policy; nothing else the test
                // does (grandchild kills, SIGSTOP, reloads) is. Stops and restarts by hand are
                // synchronous, so no kill lands on a run ctrlinit is stopping.
                if s.restarts != k + d.triggers {
                    problems.push(format!(
                        "restarts {} != kills {} + ctl signals {} + trigger exits {}",
                        s.restarts, d.kills, d.ctl_kills, d.triggers
                    ));
                }
                if p.class == Class::Exact {
                    if s.forced != 0 {
                        problems.push(format!("forced restarts {} != 0", s.forced));
                    }
                    // Each run began at boot, after a restart by policy, or after a stop-all cycle.
                    if s.run != 1 + s.restarts + chaos.stop_all_cycles {
                        problems.push(format!(
                            "run {} != 1 + restarts {} + stop/start-all cycles {}",
                            s.run, s.restarts, chaos.stop_all_cycles
                        ));
                    }
                } else if s.forced > d.restarts_by_hand {
                    problems.push(format!(
                        "forced restarts {} > restarts by hand that included it {}",
                        s.forced, d.restarts_by_hand
                    ));
                }
                expected_reports.insert(p.name, (d.kills, d.kills));
            }
            Class::Inside => {
                // A holder exit stops it asynchronously (a forced restart); a kill that lands on
                // such a stopping run is no policy restart. So: kills - holder exits <= restarts
                // <= kills, and forced <= holder exits + restarts by hand.
                if s.restarts > k || s.restarts + holder_exits < k {
                    problems.push(format!(
                        "restarts {} outside [kills {} - holder exits {}, kills {}]",
                        s.restarts, k, holder_exits, k
                    ));
                }
                if s.forced > holder_exits + d.restarts_by_hand {
                    problems.push(format!(
                        "forced restarts {} > holder exits {} + restarts by hand {}",
                        s.forced, holder_exits, d.restarts_by_hand
                    ));
                }
                expected_reports.insert(p.name, (d.kills.saturating_sub(holder_exits), d.kills));
            }
        }
        // Runs that got as far as taking a run id (prog.sh's counter file) were spawned by ctrlinit.
        let ids: u64 = std::fs::read_to_string(dir.join("run").join(p.name))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        if ids > s.run {
            problems.push(format!(
                "{ids} runs began, ctrlinit counts {} spawns",
                s.run
            ));
        }
        if s.in_window > s.max_restarts || s.state == "exhausted" {
            problems.push(format!(
                "budget: {} restarts in window of {}, state {}",
                s.in_window, s.max_restarts, s.state
            ));
        }
        counter_lines.push(format!(
            "  {:<9} {:<6} kills {:>3} ctl {:>3} trig {:>3} grand {:>3} sigstop {:>3} hand stop/start/restart {:>2}/{:>2}/{:>2} | restarts {:>3} forced {:>3} run {:>3} {}",
            p.name,
            format!("{:?}", p.class).to_lowercase(),
            d.kills,
            d.ctl_kills,
            d.triggers,
            d.grand_kills,
            d.sigstops,
            d.stops,
            d.starts,
            d.restarts_by_hand,
            s.restarts,
            s.forced,
            s.run,
            if problems.is_empty() { "ok".to_string() } else { format!("FAIL: {}", problems.join("; ")) }
        ));
        for pr in problems {
            chaos.fail(format!("{}: {pr}", p.name));
        }
    }

    Counters {
        lines: counter_lines,
        expected_reports,
        restarts: total_restarts,
        forced: total_forced,
    }
}

/// Phase 5: one crash report per SIGKILL the test sent to a main process (ctrlinit did not send
/// it); none for `ctrlinit signal` or trigger exits. Reports are written off the restart path,
/// so they are waited for. Returns how many there are.
fn check_crash_reports(storm: &mut Storm, counters: &Counters) -> u64 {
    let (chaos, dir) = (&mut storm.chaos, &storm.dir);
    let expected_reports = &counters.expected_reports;
    let reports_ok = wait_until_soft(Duration::from_secs(30), || {
        expected_reports
            .iter()
            .all(|(n, (lo, _))| crash_reports(dir, n) as u64 >= *lo)
            .then_some(())
    });
    if reports_ok.is_none() {
        chaos.fail("crash reports still missing after 30 s".into());
    }
    let mut reports_total = 0;
    for (n, (lo, hi)) in expected_reports {
        let got = crash_reports(dir, n) as u64;
        reports_total += got;
        for odd in odd_crash_reports(dir, n) {
            chaos.fail(format!("{n}: unexpected crash report {odd}"));
        }
        if got < *lo || got > *hi {
            chaos.fail(format!(
                "{n}: {got} crash reports, expected {}",
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}..={hi}")
                }
            ));
        }
    }

    reports_total
}

/// Phase 6: ctrlinit's resources, the warm-up peak against the late peak and the end (quiet, the
/// held connections gone).
fn check_resources(storm: &mut Storm, peaks: &Peaks) -> Resources {
    let (init, chaos) = (&storm.init, &mut storm.chaos);
    let (warm_fds, warm_rss) = peaks.warm;
    let end_fds = wait_until_soft(Duration::from_secs(15), || {
        let n = fd_count(init.pid);
        (n <= warm_fds + 10).then_some(n)
    })
    .unwrap_or_else(|| fd_count(init.pid));
    let end_rss = rss_kib(init.pid);
    let (_, late_rss) = peaks.late;
    // The late fd peak is not compared: it counts the abuse thread's held connections (up to 40).
    if end_fds > warm_fds + 10 {
        chaos.fail(format!(
            "ctrlinit's fds grew from {warm_fds} (warm-up peak) to {end_fds} (end)"
        ));
    }
    for (what, rss) in [("end", end_rss), ("second-half peak", late_rss)] {
        if rss > warm_rss + 2048 {
            chaos.fail(format!(
                "ctrlinit's RSS grew from {warm_rss} KiB (warm-up peak) to {rss} KiB ({what})"
            ));
        }
    }

    Resources { end_fds, end_rss }
}

/// Phase 7: alive, every well-formed request answered, no reap missed, no panic.
fn check_liveness(storm: &mut Storm, seen: &Seen) {
    let (init, chaos, req) = (&storm.init, &mut storm.chaos, &storm.req);
    let alive = identify(init.pid).is_some_and(|(_, s, _, _)| s != 'Z');
    if !alive {
        chaos.fail("ctrlinit is not alive".into());
    }
    let sent = req.sent.load(Relaxed);
    let answered_n = req.answered.load(Relaxed);
    if sent != answered_n {
        let u = req.unanswered.lock().unwrap().clone();
        chaos.fail(format!(
            "{} of {sent} well-formed requests unanswered: {u:?}",
            sent - answered_n
        ));
    }
    for z in &seen.zombies.missed {
        chaos.fail(z.clone());
    }
    if init.output().contains("panicked") {
        chaos.fail("ctrlinit panicked (see its output)".into());
    }
}

/// Phase 8: a graceful stop, nothing left behind, then every program's log complete (once every
/// program has exited). Returns ctrlinit's exit status and the log check.
fn stop_and_check_logs(storm: &mut Storm) -> (i32, LogCheck) {
    let (init, chaos, dir) = (&mut storm.init, &mut storm.chaos, &storm.dir);
    init.signal("TERM");
    let exit = init.wait_exit(Duration::from_secs(30));
    if exit != 0 {
        chaos.fail(format!("ctrlinit exited {exit} after SIGTERM"));
    }
    let left = pids_in_namespace_of(init.pid);
    if !left.is_empty() {
        chaos.fail(format!(
            "processes left in the namespace after exit: {left:?}"
        ));
    }
    let mut names: Vec<&str> = PROGS.iter().map(|p| p.name).collect();
    names.push("extra");
    let logs = check_logs(dir, &names);
    for p in &logs.problems {
        chaos.fail(format!("logs: {p}"));
    }

    (exit, logs)
}

/// Every bad request that was sent whole got an error line back.
fn check_abuse_answers(storm: &mut Storm, abuse: &AbuseReport) {
    // Every bad request that was sent whole gets an error line back.
    for (what, sent, answered) in [
        ("garbage lines", abuse.garbage_lines, abuse.garbage_answered),
        (
            "oversized requests",
            abuse.oversized,
            abuse.oversized_answered,
        ),
        (
            "wrong-version or unknown requests",
            abuse.wrong_version,
            abuse.wrong_version_answered,
        ),
    ] {
        if answered != sent {
            storm.chaos.fail(format!(
                "{what}: {answered} of {sent} answered with an error"
            ));
        }
    }
}

/// The figures, printed whatever the verdict.
#[allow(clippy::too_many_arguments)]
fn report(
    storm: &Storm,
    peaks: &Peaks,
    seen: &Seen,
    counters: &Counters,
    reports_total: u64,
    resources: &Resources,
    exit: i32,
    logs: &LogCheck,
) {
    let (chaos, req, seed) = (&storm.chaos, &storm.req, storm.seed);
    let (abuse, zombies, conts_sent) = (&seen.abuse, &seen.zombies, seen.conts_sent);
    let (chaos_time, (warm_fds, warm_rss), (late_fds, late_rss)) =
        (peaks.chaos_time, peaks.warm, peaks.late);
    let (end_fds, end_rss) = (resources.end_fds, resources.end_rss);
    let (total_restarts, total_forced) = (counters.restarts, counters.forced);
    let sent = req.sent.load(Relaxed);
    let answered_n = req.answered.load(Relaxed);
    let kills: u64 = chaos.did.values().map(|d| d.kills).sum();
    let ctl_kills: u64 = chaos.did.values().map(|d| d.ctl_kills).sum();
    let grand: u64 = chaos.did.values().map(|d| d.grand_kills).sum();
    let sigstops: u64 = chaos.did.values().map(|d| d.sigstops).sum();
    let triggers: u64 = chaos.did.values().map(|d| d.triggers).sum();
    let mut report = String::new();
    report.push_str(&format!(
        "chaos: seed {seed}, {:.1} s of chaos, {} actions {:?}\n",
        chaos_time.as_secs_f64(),
        chaos.actions.values().sum::<u64>(),
        chaos.actions
    ));
    report.push_str(&format!(
        "chaos: did: {kills} SIGKILLs of main processes, {ctl_kills} `ctrlinit signal` kills, {grand} grandchild SIGKILLs, {triggers} exits with random codes {:?}, {sigstops} SIGSTOPs ({conts_sent} SIGCONTs), {} stop/start-all cycles\n",
        &chaos.exit_codes[..chaos.exit_codes.len().min(12)], chaos.stop_all_cycles
    ));
    report.push_str(&format!(
        "chaos: reloads: {} applied, {} refused while another was in progress, {} invalid configs refused\n",
        chaos.reloads_ok, chaos.reloads_busy, chaos.reloads_invalid
    ));
    report.push_str(&format!("chaos: socket abuse: {abuse:?}\n"));
    report.push_str(&format!(
        "chaos: requests: {answered_n} of {sent} well-formed requests answered ({} CLI, {} raw)\n",
        req.cli.load(Relaxed),
        req.raw.load(Relaxed)
    ));
    report.push_str(&format!(
        "chaos: zombies: {} samples ({} with ctrlinit's loop idle), {} zombie children of ctrlinit seen (longest seen {:?}; missed reaps: {}), {} zombies of programs' own ({} older than {:?})\n",
        zombies.samples, zombies.idle_samples, zombies.transient_init, zombies.max_age_init, zombies.missed.len(), zombies.transient_other, zombies.persistent_other, SLOW_REAP
    ));
    for (_, d) in &zombies.slow_reaps {
        report.push_str(&format!(
            "chaos: slow reap (diagnostic, not a failure): {d}\n"
        ));
    }
    report.push_str(&format!(
        "chaos: restarts seen: {total_restarts} by policy, {total_forced} forced; per program:\n"
    ));
    for l in &counters.lines {
        report.push_str(l);
        report.push('\n');
    }
    report.push_str(&format!(
        "chaos: crash reports: {reports_total} (expected one per main-process SIGKILL)\n"
    ));
    report.push_str(&format!(
        "chaos: ctrlinit fds: warm-up peak {warm_fds}, second-half peak {late_fds}, end {end_fds}; RSS: warm-up peak {warm_rss} KiB, second-half peak {late_rss} KiB, end {end_rss} KiB\n"
    ));
    report.push_str(&format!(
        "chaos: logs: {} programs, {} runs, {} lines: {}\n",
        logs.programs,
        logs.runs,
        logs.lines,
        if logs.problems.is_empty() {
            "none lost, none duplicated".to_string()
        } else {
            format!("{} problems", logs.problems.len())
        }
    ));
    report.push_str(&format!(
        "chaos: exit after SIGTERM: {exit}; invariants: {}\n",
        if chaos.failures.is_empty() {
            "all held".to_string()
        } else {
            format!("{} FAILED", chaos.failures.len())
        }
    ));
    eprint!("{report}");
}

/// A program driven past its budget (max_restarts = 3: four runs) by the test's SIGKILLs: ctrlinit
/// stops the others in reverse dependency order (each records its SIGTERM) and exits with
/// `[init] exit_code`.
#[test]
fn chaos_budget_exhaustion_escalates_with_exit_code() {
    let seed = chaos_seed();
    eprintln!("chaos-budget: seed {seed}");
    let mut rng = Rng(seed);
    let recorder = |name: &str, deps: &[&str]| {
        let mut t = format!(
            "[program.{name}]\ncommand = [\"/bin/sh\", \"{}\", \"{name}\", \"{{dir}}\", \"termrec\", \"3\"]\n",
            script()
        );
        if !deps.is_empty() {
            let list: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
            t.push_str(&format!("depends_on = [{}]\n", list.join(", ")));
        }
        t.push_str(&format!("[program.{name}.log]\nconsole = false\n\n"));
        t
    };
    let mut conf = String::from("[init]\nexit_code = 42\nmax_reports = 1000\n\n");
    conf.push_str(&recorder("base", &[]));
    conf.push_str(&recorder("left", &["base"]));
    conf.push_str(&recorder("right", &["base"]));
    conf.push_str(&recorder("top", &["left", "right"]));
    conf.push_str(&recorder("aside", &[]));
    conf.push_str(&format!(
        "[program.victim]\ncommand = [\"/bin/sh\", \"{}\", \"victim\", \"{{dir}}\", \"fork\", \"3\"]\ndepends_on = [\"top\"]\nmax_restarts = 3\nrestart_window = \"60s\"\nbackoff = {{ initial = \"0s\", max = \"0s\" }}\n",
        script()
    ));
    let builder = init().file("budget.toml", &conf);
    make_dirs(&builder.dir());
    let mut init = builder.start();
    let dir = init.dir().to_path_buf();
    let (code, out) = init.ctl(&[
        "status",
        "--wait",
        "base=running",
        "left=running",
        "right=running",
        "top=running",
        "aside=running",
        "victim=running",
        "--timeout",
        "30s",
    ]);
    assert_eq!(code, 0, "{out}");

    let victim = |init: &Init| -> St {
        let (_, out) = init.ctl(&["status", "--json", "victim"]);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        parse_st(&v[0])
    };
    for k in 0..4 {
        let s = wait_until("victim to run", DEADLINE, || {
            let s = victim(&init);
            (s.state == "running").then_some(s)
        });
        assert_eq!(s.restarts, k, "restarts before kill {k}");
        assert_eq!(s.run, k + 1, "run before kill {k}");
        let map = ns_map(init.pid);
        let host = map[&s.pid.unwrap()];
        // Some chaos around it: a grandchild dies first sometimes (no restart for that).
        if rng.chance(50)
            && let Some(&g) = map.values().find(|&&h| {
                identify(h).is_some_and(|(_, st, _, pg)| pg == host && h != host && st != 'Z')
                    && comm(h) == "sleep"
            })
        {
            send_signal(g, libc::SIGKILL);
        }
        assert!(send_signal(host, libc::SIGKILL));
        if k < 3 {
            wait_until("victim's next run", DEADLINE, || {
                (victim(&init).run > s.run).then_some(())
            });
        }
    }
    let code = init.wait_exit(Duration::from_secs(30));
    let out = init.output();
    assert_eq!(code, 42, "seed {seed}: exit code; output:\n{out}");
    assert!(
        out.contains("victim exhausted: 3 restarts in 60s (last: killed by SIGKILL"),
        "seed {seed}: no exhaustion line; output:\n{out}"
    );
    assert!(
        out.contains("stopping the container with exit code 42"),
        "{out}"
    );
    // Four runs (checked above), each with a crash report (the test's SIGKILLs).
    assert_eq!(crash_reports(&dir, "victim"), 4, "{out}");
    // Everything else got SIGTERM once, dependents before what they depend on.
    let order = file_lines(&dir.join("term_order"));
    let pos = |n: &str| {
        let all: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, l)| *l == n)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            all.len(),
            1,
            "seed {seed}: {n} recorded SIGTERM {} times: {order:?}",
            all.len()
        );
        all[0]
    };
    for (dependent, dependency) in [
        ("top", "left"),
        ("top", "right"),
        ("left", "base"),
        ("right", "base"),
    ] {
        assert!(
            pos(dependent) < pos(dependency),
            "seed {seed}: {dependent} must stop before {dependency}: {order:?}"
        );
    }
    pos("aside");
    assert_eq!(order.len(), 5, "{order:?}");
    assert!(pids_in_namespace_of(init.pid).is_empty());
    eprintln!(
        "chaos-budget: victim killed 4 times (max_restarts = 3), exhausted, exit code {code}, stop order {order:?}, 4 crash reports"
    );
}

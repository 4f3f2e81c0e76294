//! What the core is told and what it tells back: an [`Input`] is something that happened (a
//! process reaped, a deadline reached, a request by hand), an [`Action`] something the I/O shell
//! must carry out, a [`Notice`] a sentence for the log and the event subscribers.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::health::CheckResult;
use super::notify_message::NotifyMessage;
use crate::config::Config;
use crate::model::{Exit, ProgramId, State};

/// Something that happened, for the core to decide on.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// ctrlinit started: start what autostarts.
    Boot,
    /// Deadlines may have passed.
    Tick,
    /// A requested spawn succeeded.
    Spawned {
        /// The program.
        id: ProgramId,
        /// Main process (also its process group).
        pid: i32,
    },
    /// A requested spawn failed (exec error, bad workdir, unreadable env_file …): the program
    /// never ran.
    SpawnFailed {
        /// The program.
        id: ProgramId,
        /// 127 (not found) or 126 (not executable).
        exit: Exit,
        /// What failed and the OS error, for the log.
        error: String,
        /// Whether the command itself could not be executed (the fix is then in `command`).
        exec_failed: bool,
    },
    /// A process was reaped.
    Reaped {
        /// Its pid.
        pid: i32,
        /// How it ended.
        exit: Exit,
        /// Whether its process group was empty once it was reaped (nothing left to stop).
        group_empty: bool,
        /// Whether the OOM killer's count of ctrlinit's cgroup moved with this death (a
        /// SIGKILL that was the OOM killer's).
        oom_killed: bool,
    },
    /// The process group of a program whose leader is gone is empty.
    GroupGone {
        /// The program.
        id: ProgramId,
    },
    /// A readiness check passed.
    Ready {
        /// The program.
        id: ProgramId,
        /// The run it was checked for.
        run: u64,
    },
    /// A liveness check of a running program ended.
    Checked {
        /// The program.
        id: ProgramId,
        /// The run it checked.
        run: u64,
        /// What it found.
        result: CheckResult,
    },
    /// A program (its main process or a descendant) sent an sd_notify datagram.
    Notified {
        /// The program.
        id: ProgramId,
        /// What it said (a `MAINPID=` the shell could not verify is already removed).
        message: NotifyMessage,
        /// The process group of the `MAINPID=` process, when one was named.
        main_pgid: Option<i32>,
    },
    /// A guarded run's figures, read at its `[program.NAME.limits]` interval.
    Measured {
        /// The program.
        id: ProgramId,
        /// The run measured.
        run: u64,
        /// What its processes use.
        figures: crate::supervisor::core::program::Measured,
    },
    /// A forking daemon's pid file names `pid`, which belongs to its run (the shell checked).
    Adopt {
        /// The program.
        id: ProgramId,
        /// The run.
        run: u64,
        /// The daemon.
        pid: i32,
        /// Its process group.
        pgid: i32,
    },
    /// A forking daemon's pid file names a process that is not of its run, or none.
    AdoptRefused {
        /// The program.
        id: ProgramId,
        /// The run.
        run: u64,
        /// Why, for the log.
        why: String,
    },
    /// A `pre_stop` hook was spawned.
    PreStopSpawned {
        /// The program.
        id: ProgramId,
        /// The hook's pid.
        pid: i32,
    },
    /// A `pre_stop` hook could not be spawned.
    PreStopFailed {
        /// The program.
        id: ProgramId,
        /// Why, for the log.
        error: String,
    },
    /// A `finish` hook was spawned.
    FinishSpawned {
        /// The program.
        id: ProgramId,
        /// The hook's pid.
        pid: i32,
    },
    /// A `finish` hook could not be spawned.
    FinishFailed {
        /// The program.
        id: ProgramId,
    },
    /// Stop the container gracefully (SIGTERM, SIGINT, SIGQUIT, `ctrlinit shutdown`).
    Shutdown {
        /// Why, for the log.
        reason: String,
        /// The signal that asked for it: a `--` command gets it as it came (not its stop
        /// signal followed by SIGCONT), and is killed only when it outlives the stop budget.
        signal: Option<Signal>,
    },
    /// Something the container depends on is gone for good (its network, see
    /// `supervisor::watch`): stop the container the normal way (pre_stop hooks, reverse order,
    /// finish hooks, the stop budget) and exit with `code`.
    GiveUp {
        /// The container's exit status.
        code: u8,
        /// Why, for the shutdown's log line.
        reason: String,
        /// The termination message (`/dev/termination-log`).
        message: String,
    },
    /// A second SIGTERM/SIGINT: kill everything at once.
    ForceKill,
    /// Start by hand (with dependencies).
    Start(Vec<ProgramId>),
    /// Stop by hand (dependents first).
    Stop(Vec<ProgramId>),
    /// Restart by hand (the programs and their dependents).
    Restart(Vec<ProgramId>),
    /// Send a signal by hand to a program's process group.
    Signal {
        /// The program.
        id: ProgramId,
        /// The signal.
        signal: Signal,
    },
    /// Apply a new configuration: stop removed and changed programs, then switch.
    Reload(Box<Config>),
    /// A check of an external dependency (`[external.NAME]`) ended.
    ExternalChecked {
        /// The external.
        name: String,
        /// Whether it passed.
        passed: bool,
        /// What it found (`connected to 10.0.0.5:8082`, `connection refused`).
        output: String,
        /// For a peer ctrlinit: its boot id and the program's run, so a restart between two
        /// checks is seen.
        peer_run: Option<String>,
    },
    /// An external's check got no verdict (a peer's `503 busy`): its state stands.
    ExternalNoVerdict {
        /// The external.
        name: String,
        /// What the other side said.
        output: String,
    },
}

/// Something the shell must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Spawn the program; answer with `Spawned` or `SpawnFailed`.
    Spawn {
        /// The program.
        id: ProgramId,
    },
    /// Start its readiness check; answer with `Ready` when it passes.
    Probe {
        /// The program.
        id: ProgramId,
        /// The run being checked.
        run: u64,
    },
    /// A forking daemon's launcher exited 0: read its pid file (until the run's readiness
    /// deadline); answer with `Adopt` or `AdoptRefused`.
    AwaitPidFile {
        /// The program.
        id: ProgramId,
        /// The run.
        run: u64,
    },
    /// A process that is not the spawned one became the run's main process (`MAINPID=`): the
    /// shell watches for its exit even if its parent is not ctrlinit, and answers `Reaped`.
    Adopted {
        /// The program.
        id: ProgramId,
        /// The new main process.
        pid: i32,
    },
    /// Start its liveness checks (it became ready); answer each with `Checked`. They end when
    /// the run stops running.
    Watch {
        /// The program.
        id: ProgramId,
        /// The run being checked.
        run: u64,
    },
    /// Send `signal` to process group `pgid`.
    Signal {
        /// Process group.
        pgid: i32,
        /// The signal.
        signal: Signal,
        /// Follow it with SIGCONT, so a stopped process acts on it (not for a signal forwarded
        /// as it came).
        cont: bool,
        /// The program whose run it stops: every process of the run gets it, also those that
        /// left the process group (see the runner's tracking). `None`: the group only.
        run_of: Option<ProgramId>,
    },
    /// Run the program's `pre_stop` hook; answer with `PreStopSpawned` or `PreStopFailed`.
    RunPreStop {
        /// The program.
        id: ProgramId,
        /// Its main process (the hook gets it as CTRLINIT_PID).
        main: i32,
    },
    /// Run the program's `finish` hook; answer with `FinishSpawned` or `FinishFailed`.
    RunFinish {
        /// The program.
        id: ProgramId,
        /// How the run ended.
        exit: Option<Exit>,
    },
    /// A run ended by a signal nobody in ctrlinit sent (or with a core): write a crash report.
    Crashed {
        /// The program.
        id: ProgramId,
        /// The main process.
        pid: i32,
        /// How it ended.
        exit: Exit,
        /// How long it ran.
        uptime: Duration,
        /// The OOM killer took it.
        oom_killed: bool,
        /// ctrlinit stopped it for going past this limit (`memory 1.21 GiB over 1 GiB`).
        limit: Option<String>,
    },
    /// Write this to stderr at once, not through the log thread: what a `--` command's user
    /// must see even if the container exits right after (its command could not be executed).
    TellNow(String),
    /// Write this line to `/dev/termination-log` (Kubernetes), when it exists.
    TerminationMessage(String),
    /// Every program is down: stop stray processes by `deadline`, reap, exit with `code`.
    Exit {
        /// Exit status.
        code: i32,
        /// When stray processes get SIGKILL.
        deadline: Instant,
    },
    /// A reload was applied: the new configuration is in force (program ids are unchanged;
    /// readiness checks of programs still starting go on).
    Reloaded,
    /// Tell the log and event subscribers.
    Notice(Notice),
}

/// A log-worthy decision, optionally a state change.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The program it is about, if any.
    pub program: Option<String>,
    /// How loud: the log level, and whether `events` hears it.
    pub level: Level,
    /// Old and new public state, when it changed.
    pub transition: Option<(State, State)>,
    /// What happened and why.
    pub message: String,
    /// The program's liveness, when the notice is a liveness change.
    pub health: Option<String>,
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Routine detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something went wrong and was handled.
    Warn,
    /// Something the operator must look at.
    Error,
}

//! One program's runtime record: its phase, what it is meant to be doing, and its counters.
//!
//! The phase carries its own deadlines (readiness, backoff, SIGKILL, finish hook), so a deadline
//! cannot outlive the phase it belongs to: there are no stale timers to filter out.

use std::sync::Arc;
use std::time::Instant;

use super::health::Health;
use super::policy::RestartHistory;
use crate::config::ProgramSpec;
use crate::model::{Exit, ProgramId, State};

/// Why a program is meant to be down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownReason {
    /// Stopped by hand (`ctrlinit stop`).
    Manual,
    /// `autostart = false`, not started yet.
    Autostart,
    /// The container is stopping.
    Shutdown,
    /// Restart budget spent with `on_exhausted = "stop"`.
    Exhausted,
    /// Part of a restart by hand; brought back up once its whole set is down.
    Restart,

    /// Removed from the config by a reload.
    Removed,
    /// Changed by a reload: stopped, then started with the new settings.
    Changed,
}

impl DownReason {
    /// Short words for status output.
    pub fn as_str(self) -> &'static str {
        match self {
            DownReason::Manual => "stopped by hand",
            DownReason::Autostart => "autostart = false",
            DownReason::Shutdown => "shutdown",
            DownReason::Exhausted => "restart budget exhausted",
            DownReason::Restart => "restarting by hand",

            DownReason::Removed => "removed from the config",
            DownReason::Changed => "changed by a reload",
        }
    }
}

/// What the program is meant to be doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Running (services) or run to completion (oneshots).
    Up,
    /// Down, for this reason.
    Down(DownReason),
}

/// Where a stop leads once the process group is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// The run ended by itself (or failed its readiness check): the restart policy decides.
    Policy {
        /// The run counts as failed whatever its exit (readiness timeout).
        forced_failure: bool,
    },
    /// ctrlinit stopped it: the target decides (up: wait and start again; down: stopped).
    Target,
}

/// A stop in progress: the stop signal went to the group; the leader and the rest must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopping {
    /// Process group (the leader's pid; programs run in their own session).
    pub pgid: i32,
    /// The main process, until it is reaped.
    pub leader: Option<i32>,
    /// When SIGKILL goes to the group; `None` once sent.
    pub kill_at: Option<Instant>,
    /// After SIGKILL: when to stop waiting for group members other than the leader.
    pub give_up_at: Option<Instant>,
    /// What follows.
    pub then: After,
}

/// A stop whose `pre_stop` hook runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreStopping {
    /// The main process (still running).
    pub pid: i32,
    /// Its process group.
    pub pgid: i32,
    /// The hook's pid, once spawned.
    pub hook: Option<i32>,
    /// When the hook is killed and the stop signal sent anyway.
    pub until: Instant,
    /// When SIGKILL goes to the group: the hook's time is part of the program's stop time.
    pub kill_at: Instant,
    /// What follows the stop.
    pub then: After,
}

/// The lifecycle phase; [`Program::state`] maps it to the public vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Dependencies not met (or about to be checked).
    Waiting,
    /// A spawn was requested and its result is not in yet.
    Spawning,
    /// Spawned; not yet ready. A oneshot stays here until it ends.
    Starting {
        /// Main process.
        pid: i32,
        /// Its process group (the spawned process's pid; a `MAINPID=` may name another main).
        pgid: i32,
        /// Readiness deadline, for services with a check.
        ready_by: Option<Instant>,
    },
    /// A forking daemon's launcher exited 0; its pid file is awaited (shown as `starting`).
    Forked {
        /// The launcher's process group (what is left of it, and the daemon's processes that
        /// left it, belong to the run).
        pgid: i32,
        /// When a missing or invalid pid file fails the run.
        ready_by: Instant,
    },
    /// Up and ready.
    Running {
        /// Main process.
        pid: i32,
        /// Its process group.
        pgid: i32,
    },
    /// Waiting out the restart delay.
    Backoff {
        /// When the restart is due.
        until: Instant,
    },
    /// Its `pre_stop` hook runs; the stop signal follows (shown as `stopping`).
    PreStopping(PreStopping),
    /// Stopping its process group.
    Stopping(Stopping),
    /// The `finish` hook runs (shown as `stopping`).
    Finishing {
        /// The hook's pid, once spawned.
        pid: Option<i32>,
        /// When the hook is killed and the program moves on.
        deadline: Instant,
        /// What follows.
        then: After,
    },
    /// Down on purpose.
    Stopped,
    /// Ended; not restarted by policy.
    Exited,
    /// A oneshot that succeeded.
    Completed,
    /// Restart budget spent.
    Exhausted,
}

impl Phase {
    /// The public state of this phase.
    pub fn state(&self) -> State {
        match self {
            Phase::Waiting => State::Waiting,
            Phase::Spawning | Phase::Starting { .. } | Phase::Forked { .. } => State::Starting,
            Phase::Running { .. } => State::Running,
            Phase::Backoff { .. } => State::Backoff,
            Phase::PreStopping(_) | Phase::Stopping(_) | Phase::Finishing { .. } => State::Stopping,
            Phase::Stopped => State::Stopped,
            Phase::Exited => State::Exited,
            Phase::Completed => State::Completed,
            Phase::Exhausted => State::Exhausted,
        }
    }

    /// Whether processes of this program may exist (or are being created).
    pub fn is_live(&self) -> bool {
        matches!(
            self,
            Phase::Spawning
                | Phase::Starting { .. }
                | Phase::Forked { .. }
                | Phase::Running { .. }
                | Phase::PreStopping(_)
                | Phase::Stopping(_)
                | Phase::Finishing { .. }
        )
    }

    /// The main process, while it runs.
    pub fn pid(&self) -> Option<i32> {
        match *self {
            Phase::Starting { pid, .. } | Phase::Running { pid, .. } => Some(pid),
            Phase::PreStopping(s) => Some(s.pid),
            Phase::Stopping(s) => s.leader,
            _ => None,
        }
    }

    /// The process group signals go to, while any of the run is alive.
    pub fn pgid(&self) -> Option<i32> {
        match *self {
            Phase::Starting { pgid, .. } | Phase::Running { pgid, .. } => Some(pgid),
            Phase::Forked { pgid, .. } => Some(pgid),
            Phase::PreStopping(s) => Some(s.pgid),
            Phase::Stopping(s) => Some(s.pgid),
            _ => None,
        }
    }

    /// The earliest deadline this phase carries.
    pub fn deadline(&self) -> Option<Instant> {
        match *self {
            Phase::Starting { ready_by, .. } => ready_by,
            Phase::Forked { ready_by, .. } => Some(ready_by),
            Phase::Backoff { until } => Some(until),
            Phase::PreStopping(s) => Some(s.until),
            Phase::Stopping(s) => s.kill_at.or(s.give_up_at),
            Phase::Finishing { deadline, .. } => Some(deadline),
            _ => None,
        }
    }
}

/// Restarts by what caused them, for metrics (`restarts_total{cause=…}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestartCauses {
    /// The run ended by itself (a crash, a failing exit, any exit with `restart = "always"`).
    pub exit: u64,
    /// It was not ready within `ready_timeout`.
    pub readiness: u64,
    /// Its liveness check (or watchdog) failed past the threshold.
    pub health: u64,
    /// A dependency with `restart = true` ended.
    pub dependency: u64,
    /// `ctrlinit restart`.
    pub manual: u64,
    /// It went past one of its `[program.NAME.limits]`.
    pub limit: u64,
}

/// What a run's processes used when last looked at, for its `[program.NAME.limits]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Measured {
    /// Resident memory of all its processes (or its cgroup's `memory.current`), in bytes.
    pub memory_bytes: Option<u64>,
    /// Open descriptors across its processes.
    pub fds: Option<u64>,
    /// Its processes (or its cgroup's `pids.current`).
    pub processes: Option<u64>,
    /// The memory figure is its cgroup's, not a sum over `/proc`.
    pub from_cgroup: bool,
}

/// What the program itself said over sd_notify.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notified {
    /// The last `STATUS=`.
    pub status: Option<String>,
    /// It sent `RELOADING=1` and no `READY=1` since.
    pub reloading: bool,
    /// It sent `STOPPING=1`.
    pub stopping: bool,
    /// The last `ERRNO=`.
    pub errno: Option<i32>,
}

/// One supervised program.
#[derive(Debug, Clone)]
pub struct Program {
    /// Its identity (stable across reloads).
    pub id: ProgramId,
    /// Its configuration.
    pub spec: Arc<ProgramSpec>,
    /// Where it is in its lifecycle.
    pub phase: Phase,
    /// What it is meant to be doing.
    pub target: Target,
    /// Spawn counter: readiness results carry it so a late result of an old run is ignored.
    pub run: u64,
    /// Restarts within the window and the backoff.
    pub history: RestartHistory,
    /// How the last run ended.
    pub last_exit: Option<Exit>,
    /// When the current (or last) run was spawned.
    pub run_started: Option<Instant>,
    /// When the public state last changed.
    pub since: Instant,
    /// What it waits for, while waiting.
    pub waiting_for: Option<String>,
    /// Signals ctrlinit sent to the current run's group, as a bit mask (a death by one of them
    /// is no crash).
    pub signals_sent: u64,
    /// Restarts forced by a dependency or asked for by hand (not counted against the budget).
    pub forced_restarts: u64,
    /// The state last announced (logged and sent to `events`): every announced change starts
    /// from it, so a state passed through within one decision (`waiting` on the way from
    /// `backoff` to `starting`) is never half-told.
    pub announced: State,
    /// Why it waits, while waiting: `db to be ready (db is starting)`.
    pub waiting_why: Option<String>,
    /// The current run failed before the program ran (its exec or a setup step failed).
    pub failed_to_start: bool,
    /// The last run was killed by the OOM killer.
    pub oom_killed: bool,
    /// The last start failure told in full; the same failure again is not repeated.
    pub last_start_error: Option<String>,
    /// Liveness since the current (or last) run became ready, when it has a health table.
    pub health: Option<Health>,
    /// Why the current run is being stopped as unhealthy (then its end counts as a failure).
    pub unhealthy: Option<String>,
    /// When the sd_notify watchdog must have been fed, while running.
    pub watchdog_due: Option<Instant>,
    /// What the current run said over sd_notify.
    pub notified: Notified,
    /// Restarts by cause.
    pub causes: RestartCauses,
    /// How long the last start took to become ready.
    pub ready_took: Option<std::time::Duration>,
    /// The current run ended while `starting` with `ready = { uptime }`: the uptime it fell
    /// short of (its end is a failed run, whatever its exit).
    pub short_of_uptime: Option<std::time::Duration>,
    /// The current run's figures for its limits when last looked at, and when.
    pub measured: Option<(Measured, Instant)>,
    /// Why the current run is being stopped for going past a limit (`memory 1.21 GiB over
    /// 1 GiB`): its end counts as a failure, with a crash report.
    pub over_limit: Option<String>,
    /// Why the current run's pid file was refused (a forking daemon): its end is that refusal,
    /// not a readiness timeout.
    pub adoption_refused: Option<String>,
}

impl Program {
    /// A program that has not been started; `run` is the last run number its name had (0 for
    /// a name new to this init), so a run number is never reused for one id.
    pub fn new(id: ProgramId, spec: Arc<ProgramSpec>, run: u64, now: Instant) -> Self {
        Program {
            id,
            spec,
            phase: Phase::Stopped,
            target: Target::Down(DownReason::Autostart),
            run,
            history: RestartHistory::new(),
            last_exit: None,
            run_started: None,
            since: now,
            waiting_for: None,
            signals_sent: 0,
            forced_restarts: 0,
            announced: State::Stopped,
            waiting_why: None,
            failed_to_start: false,
            oom_killed: false,
            last_start_error: None,
            health: None,
            unhealthy: None,
            watchdog_due: None,
            notified: Notified::default(),
            causes: RestartCauses::default(),
            ready_took: None,
            short_of_uptime: None,
            measured: None,
            over_limit: None,
            adoption_refused: None,
        }
    }

    /// The public state.
    pub fn state(&self) -> State {
        self.phase.state()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Whether it is meant to be up.
    pub fn wants_up(&self) -> bool {
        self.target == Target::Up
    }

    /// Whether it runs and its liveness is past its failure threshold (`health` and `/livez`
    /// fail while it is).
    pub fn is_unhealthy(&self) -> bool {
        matches!(self.phase, Phase::Running { .. })
            && self.health.as_ref().is_some_and(Health::is_unhealthy)
    }
}

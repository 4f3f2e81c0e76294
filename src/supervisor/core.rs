//! The supervisor's decisions, as pure code: every program's lifecycle, the dependency rules
//! between them, restart propagation and the container's shutdown.
//!
//! [`Core::handle`] takes one [`Input`] and the current instant and returns the [`Action`]s the
//! I/O shell must carry out. It reads no clock, spawns nothing and sends no signal, so every
//! transition is unit-tested with explicit instants.
//!
//! Invariants:
//! - a program is spawned only when it is meant to be up and its dependencies hold;
//! - a program meant to be down is stopped only after its dependents that are also meant to be
//!   down have stopped (reverse dependency order);
//! - a run is over only when its main process was reaped and its process group is empty;
//! - once shutting down, nothing starts, and `Exit` is emitted exactly once, after every
//!   program is down.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::policy::{self, Verdict};
use super::program::{After, DownReason, Phase, Program, Stopping, Target};
use super::state::State;
use crate::config::{Condition, Config, InitSettings, Kind, OnExhausted};
use crate::graph::Graph;
use crate::process::Exit;

/// How long to wait, after SIGKILL, for group members other than the leader (a process in
/// uninterruptible sleep cannot die at once) before moving on without them.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// Something that happened, for the core to decide on.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// ctrlinit started: start what autostarts.
    Boot,
    /// Deadlines may have passed.
    Tick,
    /// A requested spawn succeeded.
    Spawned {
        /// Program index.
        prog: usize,
        /// Main process (also its process group).
        pid: i32,
    },
    /// A requested spawn failed (exec error, bad workdir, unreadable env_file …): the program
    /// never ran.
    SpawnFailed {
        /// Program index.
        prog: usize,
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
    },
    /// The process group of a program whose leader is gone is empty.
    GroupGone {
        /// Program index.
        prog: usize,
    },
    /// A readiness check passed.
    Ready {
        /// Program index.
        prog: usize,
        /// The run it was checked for.
        run: u64,
    },
    /// A `finish` hook was spawned.
    FinishSpawned {
        /// Program index.
        prog: usize,
        /// The hook's pid.
        pid: i32,
    },
    /// A `finish` hook could not be spawned.
    FinishFailed {
        /// Program index.
        prog: usize,
    },
    /// Stop the container gracefully (SIGTERM, SIGINT, SIGQUIT, `ctrlinit shutdown`).
    Shutdown {
        /// Why, for the log.
        reason: String,
    },
    /// A second SIGTERM/SIGINT: kill everything at once.
    ForceKill,
    /// Start by hand (with dependencies).
    Start(Vec<usize>),
    /// Stop by hand (dependents first).
    Stop(Vec<usize>),
    /// Restart by hand (the programs and their dependents).
    Restart(Vec<usize>),
    /// Send a signal by hand to a program's process group.
    Signal {
        /// Program index.
        prog: usize,
        /// The signal.
        signal: Signal,
    },
    /// Apply a new configuration: stop removed and changed programs, then switch.
    Reload(Box<Config>),
}

/// Something the shell must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Spawn the program; answer with `Spawned` or `SpawnFailed`.
    Spawn {
        /// Program index.
        prog: usize,
    },
    /// Start its readiness check; answer with `Ready` when it passes.
    Probe {
        /// Program index.
        prog: usize,
        /// The run being checked.
        run: u64,
    },
    /// Send `signal` to process group `pgid` (followed by SIGCONT, so a stopped process acts).
    Signal {
        /// Process group.
        pgid: i32,
        /// Signal.
        signal: Signal,
    },
    /// Run the program's `finish` hook; answer with `FinishSpawned` or `FinishFailed`.
    RunFinish {
        /// Program index.
        prog: usize,
        /// How the run ended.
        exit: Option<Exit>,
    },
    /// A run ended by a signal nobody in ctrlinit sent (or with a core): write a crash report.
    Crashed {
        /// Program index.
        prog: usize,
        /// The main process.
        pid: i32,
        /// How it ended.
        exit: Exit,
        /// How long it ran.
        uptime: Duration,
    },
    /// Write this line to `/dev/termination-log` (Kubernetes), when it exists.
    TerminationMessage(String),
    /// Every program is down: stop stray processes by `deadline`, reap, exit with `code`.
    Exit {
        /// Exit status.
        code: i32,
        /// When stray processes get SIGKILL.
        deadline: Instant,
    },
    /// A reload was applied: program indices changed; readiness checks in flight are void
    /// (the core re-issues `Probe` for runs still starting).
    Reloaded,
    /// Tell the log and event subscribers.
    Notice(Notice),
}

/// A log-worthy decision, optionally a state change.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The program it is about, if any.
    pub program: Option<String>,
    /// Severity.
    pub level: Level,
    /// Old and new public state, when it changed.
    pub transition: Option<(State, State)>,
    /// What happened and why.
    pub message: String,
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

/// A graceful stop of the whole container.
#[derive(Debug, Clone, PartialEq)]
struct Shutdown {
    code: i32,
    deadline: Instant,
    killed: bool,
    exit_sent: bool,
}

/// A reload waiting for removed and changed programs to stop.
#[derive(Debug)]
struct PendingReload {
    config: Config,
}

/// All program state and the rules between programs.
#[derive(Debug)]
pub struct Core {
    pending_reload: Option<PendingReload>,
    programs: Vec<Program>,
    graph: Graph,
    init: InitSettings,
    shutdown: Option<Shutdown>,
    /// Restarts by hand whose programs come back up together once all are down.
    restart_sets: Vec<Vec<usize>>,
}

impl Core {
    /// A core for `config`; nothing starts before [`Input::Boot`].
    pub fn new(config: &Config, now: Instant) -> Self {
        let programs = config
            .programs
            .iter()
            .map(|s| Program::new(Arc::new(s.clone()), now))
            .collect();
        Core {
            pending_reload: None,
            programs,
            graph: Graph::new(&config.programs),
            init: config.init.clone(),
            shutdown: None,
            restart_sets: Vec::new(),
        }
    }

    /// Every program, in config order (sorted by name).
    pub fn programs(&self) -> &[Program] {
        &self.programs
    }

    /// The dependency graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Index of the program called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.programs.iter().position(|p| p.name() == name)
    }

    /// Whether a reload waits for programs to stop.
    pub fn reload_pending(&self) -> bool {
        self.pending_reload.is_some()
    }

    /// Whether a shutdown is under way.
    pub fn shutting_down(&self) -> bool {
        self.shutdown.is_some()
    }

    /// The earliest instant at which [`Input::Tick`] has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        let programs = self.programs.iter().filter_map(|p| p.phase.deadline());
        let shutdown = self
            .shutdown
            .as_ref()
            .filter(|s| !s.killed)
            .map(|s| s.deadline);
        programs.chain(shutdown).min()
    }

    /// Whether `pid` is a program's main process or `finish` hook (anything else reaped is an
    /// orphan the core has nothing to decide about).
    pub fn owns_pid(&self, pid: i32) -> bool {
        self.owner_of(pid).is_some()
    }

    fn owner_of(&self, pid: i32) -> Option<usize> {
        self.programs.iter().position(|p| {
            p.phase.pid() == Some(pid)
                || matches!(p.phase, Phase::Finishing { pid: Some(h), .. } if h == pid)
        })
    }

    /// Programs whose leader is gone and whose group must be checked for emptiness.
    pub fn draining_groups(&self) -> impl Iterator<Item = (usize, i32)> + '_ {
        self.programs
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p.phase {
                Phase::Stopping(Stopping {
                    pgid, leader: None, ..
                }) => Some((i, pgid)),
                _ => None,
            })
    }

    /// Decides on `input`; returns what the shell must do, in order.
    pub fn handle(&mut self, input: Input, now: Instant) -> Vec<Action> {
        let mut acts = Vec::new();
        match input {
            Input::Boot => self.boot(now, &mut acts),
            Input::Tick => self.tick(now, &mut acts),
            Input::Spawned { prog, pid } => self.spawned(prog, pid, now, &mut acts),
            Input::SpawnFailed {
                prog,
                exit,
                error,
                exec_failed,
            } => self.spawn_failed(prog, exit, &error, exec_failed, now, &mut acts),
            Input::Reaped {
                pid,
                exit,
                group_empty,
            } => self.reaped(pid, exit, group_empty, now, &mut acts),
            Input::GroupGone { prog } => self.group_gone(prog, now, &mut acts),
            Input::Ready { prog, run } => self.ready(prog, run, now, &mut acts),
            Input::FinishSpawned { prog, pid } => {
                if let Phase::Finishing { pid: p, .. } = &mut self.programs[prog].phase {
                    *p = Some(pid);
                }
            }
            Input::FinishFailed { prog } => {
                if let Phase::Finishing { then, .. } = self.programs[prog].phase {
                    self.complete(prog, then, now, &mut acts);
                }
            }
            Input::Shutdown { reason } => self.begin_shutdown(0, &reason, now, &mut acts),
            Input::ForceKill => self.force_kill(now, &mut acts),
            Input::Start(progs) => self.start_by_hand(&progs, now, &mut acts),
            Input::Stop(progs) => self.stop_by_hand(&progs, now, &mut acts),
            Input::Restart(progs) => self.restart_by_hand(&progs, now, &mut acts),
            Input::Signal { prog, signal } => {
                if let Some(pid) = self.programs[prog].phase.pid() {
                    self.signal_run(prog, pid, signal, &mut acts);
                }
            }
            Input::Reload(config) => self.begin_reload(*config, now, &mut acts),
        }
        self.settle(now, &mut acts);
        self.announce_waiting(&mut acts);
        acts
    }

    /// Announces the programs left waiting by this decision (a program that waited only on its
    /// way to `starting` is never said to wait).
    fn announce_waiting(&mut self, acts: &mut Vec<Action>) {
        for i in 0..self.programs.len() {
            let p = &self.programs[i];
            if p.state() != State::Waiting || p.announced == State::Waiting {
                continue;
            }
            // Said as things stand once the whole decision is made (a dependency checked
            // earlier in it may have been spawned since).
            if let Some((dep, why)) = self.unmet_dependency(i) {
                self.programs[i].waiting_for = Some(dep);
                self.programs[i].waiting_why = Some(why);
            }
            let why = self.programs[i]
                .waiting_why
                .as_ref()
                .map_or_else(String::new, |w| format!("waiting for {w}"));
            self.announce(i, State::Waiting, why, Level::Info, acts);
        }
    }

    fn boot(&mut self, now: Instant, acts: &mut Vec<Action>) {
        for i in 0..self.programs.len() {
            if self.programs[i].spec.autostart {
                self.programs[i].target = Target::Up;
                self.set_phase(i, Phase::Waiting, now, String::new(), acts);
            }
        }
    }

    fn spawned(&mut self, i: usize, pid: i32, now: Instant, acts: &mut Vec<Action>) {
        if self.programs[i].phase != Phase::Spawning {
            return;
        }
        let p = &mut self.programs[i];
        p.run_started = Some(now);
        p.signals_sent = 0;
        p.failed_to_start = false;
        p.last_start_error = None;
        let run = p.run;
        let spec = Arc::clone(&p.spec);
        let (phase, why) = match (spec.kind, &spec.ready) {
            (Kind::Oneshot, _) => (
                Phase::Starting {
                    pid,
                    ready_by: None,
                },
                format!("spawned pid {pid}"),
            ),
            (Kind::Service, Some(_)) => {
                acts.push(Action::Probe { prog: i, run });
                (
                    Phase::Starting {
                        pid,
                        ready_by: Some(now + spec.ready_timeout),
                    },
                    format!("spawned pid {pid}; waiting until ready"),
                )
            }
            (Kind::Service, None) => (Phase::Running { pid }, format!("spawned pid {pid}")),
        };
        self.set_phase(i, phase, now, why, acts);
    }

    fn spawn_failed(
        &mut self,
        i: usize,
        exit: Exit,
        error: &str,
        exec_failed: bool,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        if self.programs[i].phase != Phase::Spawning {
            return;
        }
        let p = &mut self.programs[i];
        p.last_exit = Some(exit);
        p.run_started = Some(now);
        p.failed_to_start = true;
        // Told in full once: a loop of the same failure is then told by its backoff lines.
        if p.last_start_error.as_deref() != Some(error) {
            p.last_start_error = Some(error.to_string());
            let mut msg = format!("{}: {error}", p.name());
            if exec_failed {
                msg.push_str(&format!(
                    "\n    fix: install {:?} in the image (executable), or correct program.{}.command; `ctrlinit check` warns about commands it cannot find",
                    p.spec.command[0],
                    p.name()
                ));
            }
            self.notice(Some(i), Level::Error, None, msg, acts);
        }
        self.complete(
            i,
            After::Policy {
                forced_failure: false,
            },
            now,
            acts,
        );
    }

    fn ready(&mut self, i: usize, run: u64, now: Instant, acts: &mut Vec<Action>) {
        let p = &self.programs[i];
        if let Phase::Starting { pid, .. } = p.phase
            && p.run == run
            && p.spec.kind == Kind::Service
        {
            let took = p
                .run_started
                .map(|t| now.saturating_duration_since(t))
                .unwrap_or_default();
            let why = format!("ready after {}", fmt_duration(took));
            self.set_phase(i, Phase::Running { pid }, now, why, acts);
        }
    }

    fn reaped(
        &mut self,
        pid: i32,
        exit: Exit,
        group_empty: bool,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let Some(i) = self.owner_of(pid) else {
            return;
        };
        if let Phase::Finishing { then, .. } = self.programs[i].phase {
            let msg = format!("{}: finish hook ended ({exit})", self.programs[i].name());
            self.notice(Some(i), Level::Debug, None, msg, acts);
            self.complete(i, then, now, acts);
            return;
        }
        self.main_exited(i, pid, exit, group_empty, now, acts);
    }

    /// The main process of program `i` ended: stop the rest of its group (when anything is
    /// left of it), then decide.
    fn main_exited(
        &mut self,
        i: usize,
        pid: i32,
        exit: Exit,
        group_empty: bool,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let p = &mut self.programs[i];
        p.last_exit = Some(exit);
        let uptime = p
            .run_started
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default();
        let crashed = match exit {
            Exit::Signal { sig, core_dumped } => core_dumped || p.signals_sent & (1 << sig) == 0,
            Exit::Code(_) => false,
        };
        if crashed {
            acts.push(Action::Crashed {
                prog: i,
                pid,
                exit,
                uptime,
            });
        }
        let stop_signal = p.spec.stop_signal;
        match p.phase {
            Phase::Stopping(ref mut s) => {
                s.leader = None;
                let msg = format!("{}: pid {pid} ended ({exit})", self.programs[i].name());
                self.notice(Some(i), Level::Info, None, msg, acts);
                if group_empty {
                    self.group_gone(i, now, acts);
                }
            }
            Phase::Starting { .. } | Phase::Running { .. } => {
                let then = if p.wants_up() {
                    After::Policy {
                        forced_failure: false,
                    }
                } else {
                    After::Target
                };
                if group_empty {
                    // Nothing left to stop: the decision says how the run ended.
                    self.run_finish_or_complete(i, then, now, acts);
                } else {
                    let kill_at = self.kill_deadline(i, now);
                    let why = format!(
                        "pid {pid} ended ({exit}) after {}; stopping the rest of its process group",
                        fmt_duration(uptime)
                    );
                    self.signal_run(i, pid, stop_signal, acts);
                    let phase = Phase::Stopping(Stopping {
                        pgid: pid,
                        leader: None,
                        kill_at: Some(kill_at),
                        give_up_at: None,
                        then,
                    });
                    self.set_phase(i, phase, now, why, acts);
                }
            }
            _ => {}
        }
        self.propagate_restart(i, now, acts);
    }

    /// Dependents with `restart = true` on `i` are stopped; they start again once `i` meets
    /// their condition again.
    fn propagate_restart(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let restarting: Vec<usize> = self
            .graph
            .dependents(i)
            .iter()
            .copied()
            .filter(|&d| self.graph.deps(d).iter().any(|e| e.on == i && e.restart))
            .filter(|&d| self.programs[d].wants_up())
            .collect();
        for d in restarting {
            let why = format!("restarting because {} ended", self.programs[i].name());
            match self.programs[d].phase {
                Phase::Starting { .. } | Phase::Running { .. } => {
                    self.programs[d].forced_restarts += 1;
                    self.begin_stop(d, now, why, acts);
                }
                Phase::Backoff { .. } => {
                    self.programs[d].forced_restarts += 1;
                    self.set_phase(d, Phase::Waiting, now, why, acts);
                }
                _ => {}
            }
        }
    }

    fn group_gone(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let Phase::Stopping(Stopping {
            leader: None, then, ..
        }) = self.programs[i].phase
        else {
            return;
        };
        self.run_finish_or_complete(i, then, now, acts);
    }

    fn run_finish_or_complete(
        &mut self,
        i: usize,
        then: After,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let p = &self.programs[i];
        if p.spec.finish.is_some() {
            let deadline = self.bounded(now + p.spec.stop_timeout);
            acts.push(Action::RunFinish {
                prog: i,
                exit: p.last_exit,
            });
            let phase = Phase::Finishing {
                pid: None,
                deadline,
                then,
            };
            self.set_phase(i, phase, now, "running its finish hook".into(), acts);
        } else {
            self.complete(i, then, now, acts);
        }
    }

    /// The run is over (group gone, hook done): apply the target or the restart policy.
    fn complete(&mut self, i: usize, then: After, now: Instant, acts: &mut Vec<Action>) {
        if let Target::Down(reason) = self.programs[i].target {
            self.set_phase(i, Phase::Stopped, now, reason.as_str().into(), acts);
            return;
        }
        let forced_failure = match then {
            After::Target => {
                self.set_phase(i, Phase::Waiting, now, String::new(), acts);
                return;
            }
            After::Policy { forced_failure } => forced_failure,
        };
        let p = &mut self.programs[i];
        let ran_for = p
            .run_started
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default();
        let spec = Arc::clone(&p.spec);
        let exit = p.last_exit;
        let verdict = policy::decide(&spec, &mut p.history, exit, forced_failure, ran_for, now);
        let how = match exit {
            Some(e) if p.failed_to_start => format!("failed to start ({e})"),
            Some(e) if !forced_failure => format!("{e} after {}", fmt_duration(ran_for)),
            _ => format!("not ready within {}", fmt_duration(spec.ready_timeout)),
        };
        match verdict {
            Verdict::Completed => {
                self.set_phase(i, Phase::Completed, now, how, acts);
                if spec.main {
                    self.main_ended(i, 0, now, acts);
                }
            }
            Verdict::Exited => {
                let why = format!(
                    "{how}; restart = {:?} does not restart it",
                    restart_word(&spec)
                );
                self.set_phase(i, Phase::Exited, now, why, acts);
                if spec.main {
                    let code = exit.map_or(1, |e| e.shell_code());
                    self.main_ended(i, code, now, acts);
                }
            }
            Verdict::Restart { delay, in_window } => {
                let why = format!(
                    "{how}; restart {in_window} of {} within {} in {}",
                    spec.max_restarts,
                    fmt_duration(spec.restart_window),
                    fmt_duration(delay)
                );
                if delay.is_zero() {
                    // No backoff state to show: say why it restarts, then restart.
                    let msg = format!("{}: restarting at once: {why}", spec.name);
                    self.notice(Some(i), Level::Warn, None, msg, acts);
                    self.set_phase(i, Phase::Waiting, now, String::new(), acts);
                } else {
                    self.set_phase(i, Phase::Backoff { until: now + delay }, now, why, acts);
                }
            }
            Verdict::Exhausted { in_window } => self.exhausted(i, in_window, &how, now, acts),
        }
    }

    fn exhausted(
        &mut self,
        i: usize,
        in_window: u32,
        how: &str,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let spec = Arc::clone(&self.programs[i].spec);
        let base = format!(
            "{} exhausted: {in_window} restarts in {} (last: {how})",
            spec.name,
            fmt_duration(spec.restart_window)
        );
        match spec.on_exhausted {
            OnExhausted::Exit => {
                let code = self.init.exit_code;
                // One clear line (the state change says it all); the shutdown refers to it.
                let line = format!("{base}; stopping the container with exit code {code}");
                self.set_phase(i, Phase::Exhausted, now, line.clone(), acts);
                acts.push(Action::TerminationMessage(line));
                let reason = format!("{} exhausted its restart budget", spec.name);
                self.begin_shutdown(code as i32, &reason, now, acts);
            }
            OnExhausted::Stop => {
                let line = format!("{base}; leaving it stopped (on_exhausted = \"stop\")");
                self.programs[i].target = Target::Down(DownReason::Exhausted);
                self.set_phase_at(i, Phase::Stopped, now, line, Level::Error, acts);
                if spec.main {
                    let code = self.init.exit_code as i32;
                    self.main_ended(i, code, now, acts);
                }
            }
        }
    }

    fn main_ended(&mut self, i: usize, code: i32, now: Instant, acts: &mut Vec<Action>) {
        let reason = format!(
            "main program {} ended; stopping the container with its status {code}",
            self.programs[i].name()
        );
        self.begin_shutdown(code, &reason, now, acts);
    }

    fn begin_shutdown(&mut self, code: i32, reason: &str, now: Instant, acts: &mut Vec<Action>) {
        if self.shutdown.is_some() {
            return;
        }
        self.notice(
            None,
            Level::Info,
            None,
            format!("shutting down: {reason}"),
            acts,
        );
        self.shutdown = Some(Shutdown {
            code,
            deadline: now + self.init.stop_timeout,
            killed: false,
            exit_sent: false,
        });
        for p in &mut self.programs {
            if p.target == Target::Up || p.target == Target::Down(DownReason::Restart) {
                p.target = Target::Down(DownReason::Shutdown);
            }
        }
        self.restart_sets.clear();
        self.pending_reload = None;
    }

    fn force_kill(&mut self, now: Instant, acts: &mut Vec<Action>) {
        if self.shutdown.is_none() {
            self.begin_shutdown(0, "killing everything at once", now, acts);
        }
        self.notice(
            None,
            Level::Warn,
            None,
            "second stop signal: killing everything now".into(),
            acts,
        );
        self.kill_everything(now, acts);
        if let Some(s) = &mut self.shutdown {
            s.deadline = now;
            s.exit_sent = true;
            acts.push(Action::Exit {
                code: s.code,
                deadline: now,
            });
        }
    }

    fn kill_everything(&mut self, now: Instant, acts: &mut Vec<Action>) {
        for i in 0..self.programs.len() {
            match self.programs[i].phase {
                Phase::Starting { pid, .. } | Phase::Running { pid } => {
                    self.signal_run(i, pid, Signal::SIGKILL, acts);
                    let phase = Phase::Stopping(Stopping {
                        pgid: pid,
                        leader: Some(pid),
                        kill_at: None,
                        give_up_at: Some(now + KILL_GRACE),
                        then: After::Target,
                    });
                    self.set_phase(i, phase, now, "killed: out of time".into(), acts);
                }
                Phase::Stopping(s) if s.kill_at.is_some() => {
                    self.signal_run(i, s.pgid, Signal::SIGKILL, acts);
                    self.programs[i].phase = Phase::Stopping(Stopping {
                        kill_at: None,
                        give_up_at: Some(now + KILL_GRACE),
                        ..s
                    });
                }
                Phase::Finishing { pid, then, .. } => {
                    if let Some(pid) = pid {
                        acts.push(Action::Signal {
                            pgid: pid,
                            signal: Signal::SIGKILL,
                        });
                    }
                    self.complete(i, then, now, acts);
                }
                _ => {}
            }
        }
        if let Some(s) = &mut self.shutdown {
            s.killed = true;
        }
    }

    fn tick(&mut self, now: Instant, acts: &mut Vec<Action>) {
        if let Some(s) = &self.shutdown
            && !s.killed
            && s.deadline <= now
        {
            let msg = format!(
                "stop budget of {} spent; killing what is left",
                fmt_duration(self.init.stop_timeout)
            );
            self.notice(None, Level::Warn, None, msg, acts);
            self.kill_everything(now, acts);
        }
        for i in 0..self.programs.len() {
            let due = self.programs[i].phase.deadline().is_some_and(|d| d <= now);
            if due {
                self.deadline_passed(i, now, acts);
            }
        }
    }

    fn deadline_passed(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let spec = Arc::clone(&self.programs[i].spec);
        match self.programs[i].phase {
            Phase::Starting { pid, .. } => {
                let why = format!(
                    "not ready within {}; stopping it (counts as a failed run)",
                    fmt_duration(spec.ready_timeout)
                );
                self.signal_run(i, pid, spec.stop_signal, acts);
                let phase = Phase::Stopping(Stopping {
                    pgid: pid,
                    leader: Some(pid),
                    kill_at: Some(self.kill_deadline(i, now)),
                    give_up_at: None,
                    then: After::Policy {
                        forced_failure: true,
                    },
                });
                self.set_phase(i, phase, now, why, acts);
            }
            Phase::Backoff { .. } => self.set_phase(i, Phase::Waiting, now, String::new(), acts),
            Phase::Stopping(s) if s.kill_at.is_some() => {
                self.signal_run(i, s.pgid, Signal::SIGKILL, acts);
                self.programs[i].phase = Phase::Stopping(Stopping {
                    kill_at: None,
                    give_up_at: Some(now + KILL_GRACE),
                    ..s
                });
                let msg = format!(
                    "{}: still running {} after {}; sending SIGKILL to process group {}",
                    spec.name,
                    fmt_duration(spec.stop_timeout),
                    spec.stop_signal.as_str(),
                    s.pgid
                );
                self.notice(Some(i), Level::Warn, None, msg, acts);
            }
            Phase::Stopping(Stopping {
                leader: None,
                then,
                pgid,
                ..
            }) => {
                let msg = format!(
                    "{}: process group {pgid} survived SIGKILL for {}; moving on without it",
                    spec.name,
                    fmt_duration(KILL_GRACE)
                );
                self.notice(Some(i), Level::Warn, None, msg, acts);
                self.run_finish_or_complete(i, then, now, acts);
            }
            Phase::Stopping(ref mut s) => {
                // The leader itself survived SIGKILL (uninterruptible sleep): keep waiting for
                // its reap, without a deadline, so the loop does not spin.
                s.give_up_at = None;
                let msg = format!(
                    "{}: pid {:?} survived SIGKILL for {}; waiting for it to end",
                    spec.name,
                    s.leader,
                    fmt_duration(KILL_GRACE)
                );
                self.notice(Some(i), Level::Warn, None, msg, acts);
            }
            Phase::Finishing { pid, then, .. } => {
                if let Some(pid) = pid {
                    acts.push(Action::Signal {
                        pgid: pid,
                        signal: Signal::SIGKILL,
                    });
                }
                let msg = format!("{}: finish hook did not end in time; killed it", spec.name);
                self.notice(Some(i), Level::Warn, None, msg, acts);
                self.complete(i, then, now, acts);
            }
            _ => {}
        }
    }

    /// Sends the stop signal to a live program's group; `then` follows from its target.
    fn begin_stop(&mut self, i: usize, now: Instant, why: String, acts: &mut Vec<Action>) {
        let (Phase::Starting { pid, .. } | Phase::Running { pid }) = self.programs[i].phase else {
            return;
        };
        let signal = self.programs[i].spec.stop_signal;
        self.signal_run(i, pid, signal, acts);
        let phase = Phase::Stopping(Stopping {
            pgid: pid,
            leader: Some(pid),
            kill_at: Some(self.kill_deadline(i, now)),
            give_up_at: None,
            then: After::Target,
        });
        let why = format!("{why}; sent {} to process group {pid}", signal.as_str());
        self.set_phase(i, phase, now, why, acts);
    }

    /// Sends `signal` to the group of program `i`'s current run and remembers it, so a death by
    /// that signal is not reported as a crash.
    fn signal_run(&mut self, i: usize, pgid: i32, signal: Signal, acts: &mut Vec<Action>) {
        self.programs[i].signals_sent |= 1 << (signal as i32);
        acts.push(Action::Signal { pgid, signal });
    }

    /// The program's stop timeout, cut short by the shutdown budget.
    fn kill_deadline(&self, i: usize, now: Instant) -> Instant {
        self.bounded(now + self.programs[i].spec.stop_timeout)
    }

    fn bounded(&self, t: Instant) -> Instant {
        match &self.shutdown {
            Some(s) => t.min(s.deadline),
            None => t,
        }
    }

    fn start_by_hand(&mut self, progs: &[usize], now: Instant, acts: &mut Vec<Action>) {
        if self.shutdown.is_some() {
            return;
        }
        for &i in progs {
            for j in self.graph.deps_closure(i) {
                let p = &mut self.programs[j];
                // A dependency that completed stays completed; only the named program reruns.
                if j != i && p.phase == Phase::Completed {
                    continue;
                }
                let already_up =
                    p.target == Target::Up && (p.phase.is_live() || p.phase == Phase::Waiting);
                if already_up {
                    continue;
                }
                p.target = Target::Up;
                p.history.reset();
                if !p.phase.is_live() {
                    self.set_phase(j, Phase::Waiting, now, "started by hand".into(), acts);
                }
            }
        }
        self.restart_sets
            .retain(|set| !set.iter().any(|m| progs.contains(m)));
    }

    fn stop_by_hand(&mut self, progs: &[usize], _now: Instant, _acts: &mut Vec<Action>) {
        if self.shutdown.is_some() {
            return;
        }
        for &i in progs {
            for j in self.graph.dependents_closure(i) {
                self.programs[j].target = Target::Down(DownReason::Manual);
            }
        }
        self.restart_sets
            .retain(|set| !set.iter().any(|m| progs.contains(m)));
    }

    fn restart_by_hand(&mut self, progs: &[usize], _now: Instant, _acts: &mut Vec<Action>) {
        if self.shutdown.is_some() {
            return;
        }
        let mut set: Vec<usize> = Vec::new();
        for &i in progs {
            for j in self.graph.dependents_closure(i) {
                // A dependent stopped on purpose stays stopped.
                let parked = matches!(
                    self.programs[j].target,
                    Target::Down(DownReason::Manual | DownReason::Autostart)
                );
                if (j == i || !parked) && !set.contains(&j) {
                    set.push(j);
                }
            }
            // What the restarted programs need comes up too.
            for j in self.graph.deps_closure(i) {
                if self.programs[j].target != Target::Up && !set.contains(&j) {
                    set.push(j);
                }
            }
        }
        for &j in &set {
            self.programs[j].target = Target::Down(DownReason::Restart);
            if self.programs[j].phase.is_live() {
                self.programs[j].forced_restarts += 1;
            }
        }
        self.restart_sets.push(set);
    }

    /// What a reload to `config` would add, remove and change, as one line.
    pub fn reload_summary(&self, config: &Config) -> String {
        let (added, removed, changed) = self.diff(config);
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        let mut summary = format!(
            "added {}; removed {}; changed {}; {} unchanged",
            list(&added),
            list(&removed),
            list(&changed),
            config.programs.len() - added.len() - changed.len()
        );
        // Opened or bound once at start: say so rather than seem to apply them.
        let (old, new) = (&self.init, &config.init);
        let fixed = [
            ("log_dir", old.log_dir != new.log_dir),
            ("crash_dir", old.crash_dir != new.crash_dir),
            ("socket", old.socket != new.socket),
            ("socket_group", old.socket_group != new.socket_group),
        ];
        for (key, differs) in fixed {
            if differs {
                summary.push_str(&format!(
                    "; [init] {key} changed: it takes effect at the next start"
                ));
            }
        }
        summary
    }

    /// Names added, removed and changed by `config`.
    fn diff(&self, config: &Config) -> (Vec<String>, Vec<String>, Vec<String>) {
        let mut removed = Vec::new();
        let mut changed = Vec::new();
        for p in &self.programs {
            match config.program(p.name()) {
                None => removed.push(p.name().to_string()),
                Some(spec) if !same_spec(spec, &p.spec) => changed.push(p.name().to_string()),
                Some(_) => {}
            }
        }
        let added = config
            .programs
            .iter()
            .filter(|p| self.index_of(&p.name).is_none())
            .map(|p| p.name.clone())
            .collect();
        (added, removed, changed)
    }

    fn begin_reload(&mut self, config: Config, _now: Instant, acts: &mut Vec<Action>) {
        if self.shutdown.is_some() {
            return;
        }
        let msg = format!("reloading: {}", self.reload_summary(&config));
        let (_, removed, changed) = self.diff(&config);
        for p in &mut self.programs {
            if removed.iter().any(|n| n == p.name()) {
                p.target = Target::Down(DownReason::Removed);
            } else if changed.iter().any(|n| n == p.name()) {
                p.target = Target::Down(DownReason::Changed);
            }
        }
        self.notice(None, Level::Info, None, msg, acts);
        self.pending_reload = Some(PendingReload { config });
    }

    /// Switches to the new configuration once removed and changed programs are down.
    fn apply_reload_when_ready(&mut self, now: Instant, acts: &mut Vec<Action>) -> bool {
        let Some(pending) = &self.pending_reload else {
            return false;
        };
        let leaving = |p: &Program| {
            matches!(
                p.target,
                Target::Down(DownReason::Removed | DownReason::Changed)
            )
        };
        if self
            .programs
            .iter()
            .any(|p| leaving(p) && p.phase.is_live())
        {
            return false;
        }
        let config = pending.config.clone();
        self.pending_reload = None;
        // Restarts by hand under way survive the switch: their sets are kept by name.
        let sets_by_name: Vec<Vec<String>> = self
            .restart_sets
            .iter()
            .map(|set| {
                set.iter()
                    .map(|&i| self.programs[i].name().to_string())
                    .collect()
            })
            .collect();
        let mut old: Vec<Option<Program>> = std::mem::take(&mut self.programs)
            .into_iter()
            .map(Some)
            .collect();
        let mut fresh = Vec::new();
        for spec in &config.programs {
            let kept = old
                .iter_mut()
                .find(|p| {
                    p.as_ref()
                        .is_some_and(|p| p.name() == spec.name && !leaving(p))
                })
                .and_then(Option::take);
            match kept {
                Some(mut p) => {
                    p.spec = Arc::new(spec.clone());
                    self.programs.push(p);
                }
                None => {
                    self.programs
                        .push(Program::new(Arc::new(spec.clone()), now));
                    fresh.push(self.programs.len() - 1);
                }
            }
        }
        self.graph = Graph::new(&config.programs);
        self.init = config.init.clone();
        self.restart_sets = sets_by_name
            .iter()
            .map(|set| {
                set.iter()
                    .filter_map(|name| self.index_of(name))
                    .filter(|i| !fresh.contains(i))
                    .collect::<Vec<usize>>()
            })
            .filter(|set| !set.is_empty())
            .collect();
        acts.push(Action::Reloaded);
        for i in fresh {
            if self.programs[i].spec.autostart {
                self.programs[i].target = Target::Up;
                self.set_phase(
                    i,
                    Phase::Waiting,
                    now,
                    "new or changed by a reload".into(),
                    acts,
                );
            }
        }
        for i in 0..self.programs.len() {
            let p = &self.programs[i];
            if matches!(p.phase, Phase::Starting { .. })
                && p.spec.kind == Kind::Service
                && p.spec.ready.is_some()
            {
                acts.push(Action::Probe {
                    prog: i,
                    run: p.run,
                });
            }
        }
        true
    }

    /// Applies targets until nothing changes: stops what must stop (dependents first), brings
    /// back restart sets that are fully down, spawns what may start, and exits when shut down.
    fn settle(&mut self, now: Instant, acts: &mut Vec<Action>) {
        loop {
            let mut changed = false;
            for i in 0..self.programs.len() {
                changed |= self.settle_down(i, now, acts);
            }
            changed |= self.release_restart_sets(now, acts);
            changed |= self.apply_reload_when_ready(now, acts);
            if !changed {
                break;
            }
        }
        if self.shutdown.is_none() {
            for i in 0..self.programs.len() {
                self.settle_up(i, now, acts);
            }
        }
        self.check_exit(acts);
    }

    /// For a program meant to be down: returns whether its phase changed.
    fn settle_down(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) -> bool {
        let Target::Down(reason) = self.programs[i].target else {
            return false;
        };
        let keep_outcome = reason == DownReason::Shutdown || reason == DownReason::Exhausted;
        match self.programs[i].phase {
            Phase::Waiting | Phase::Backoff { .. } => {
                self.set_phase(i, Phase::Stopped, now, reason.as_str().into(), acts);
                true
            }
            Phase::Exited | Phase::Completed | Phase::Exhausted if !keep_outcome => {
                self.set_phase(i, Phase::Stopped, now, reason.as_str().into(), acts);
                true
            }
            Phase::Starting { .. } | Phase::Running { .. } => {
                let blocking: Vec<&str> = self
                    .graph
                    .dependents(i)
                    .iter()
                    .filter(|&&d| self.programs[d].phase.is_live() && !self.programs[d].wants_up())
                    .map(|&d| self.programs[d].name())
                    .collect();
                if !blocking.is_empty() {
                    return false;
                }
                let why = match reason {
                    DownReason::Shutdown => "container stopping".to_string(),
                    other => other.as_str().to_string(),
                };
                self.begin_stop(i, now, why, acts);
                true
            }
            _ => false,
        }
    }

    fn release_restart_sets(&mut self, now: Instant, acts: &mut Vec<Action>) -> bool {
        let ready: Vec<usize> = self
            .restart_sets
            .iter()
            .enumerate()
            .filter(|(_, set)| set.iter().all(|&j| !self.programs[j].phase.is_live()))
            .map(|(k, _)| k)
            .collect();
        if ready.is_empty() {
            return false;
        }
        for k in ready.into_iter().rev() {
            let set = self.restart_sets.remove(k);
            for j in set {
                let p = &mut self.programs[j];
                if p.target == Target::Down(DownReason::Restart) {
                    p.target = Target::Up;
                    p.history.reset();
                    self.set_phase(j, Phase::Waiting, now, "restarted by hand".into(), acts);
                }
            }
        }
        true
    }

    /// For a waiting program meant to be up: spawn it when its dependencies hold.
    fn settle_up(&mut self, i: usize, now: Instant, acts: &mut Vec<Action>) {
        let p = &self.programs[i];
        if !p.wants_up() || p.phase != Phase::Waiting {
            return;
        }
        match self.unmet_dependency(i) {
            None => {
                self.programs[i].waiting_for = None;
                self.programs[i].run += 1;
                acts.push(Action::Spawn { prog: i });
                self.set_phase(i, Phase::Spawning, now, String::new(), acts);
            }
            Some((dep, why)) => {
                let p = &mut self.programs[i];
                if p.waiting_for.as_deref() != Some(dep.as_str()) {
                    p.waiting_for = Some(dep);
                    p.waiting_why = Some(why.clone());
                    // Once it has been said to wait, say what it waits for next; the first
                    // time, the announced change to `waiting` says it.
                    if p.announced == State::Waiting {
                        let msg = format!("{}: waiting for {why}", p.name());
                        self.notice(Some(i), Level::Info, None, msg, acts);
                    }
                }
            }
        }
    }

    /// The first dependency of `i` that does not hold: its name and a description.
    pub fn unmet_dependency(&self, i: usize) -> Option<(String, String)> {
        self.graph.deps(i).iter().find_map(|e| {
            let dep = &self.programs[e.on];
            if condition_holds(dep, e.condition) {
                return None;
            }
            let want = match (e.condition, dep.spec.kind) {
                (Condition::Started, _) => "started",
                (Condition::Ready, Kind::Service) => "ready",
                (_, _) => "completed",
            };
            let mut why = format!(
                "{} to be {want} ({} is {}",
                dep.name(),
                dep.name(),
                dep.state()
            );
            if let Target::Down(r) = dep.target
                && dep.state() == State::Stopped
            {
                why.push_str(&format!(": {}", r.as_str()));
            }
            why.push(')');
            Some((dep.name().to_string(), why))
        })
    }

    fn check_exit(&mut self, acts: &mut Vec<Action>) {
        let all_down = self.programs.iter().all(|p| !p.phase.is_live());
        if let Some(s) = &mut self.shutdown
            && all_down
            && !s.exit_sent
        {
            s.exit_sent = true;
            acts.push(Action::Exit {
                code: s.code,
                deadline: s.deadline,
            });
        }
    }

    fn set_phase(
        &mut self,
        i: usize,
        phase: Phase,
        now: Instant,
        why: String,
        acts: &mut Vec<Action>,
    ) {
        let level = match phase.state() {
            State::Exhausted => Level::Error,
            State::Backoff => Level::Warn,
            _ => Level::Info,
        };
        self.set_phase_at(i, phase, now, why, level, acts);
    }

    /// Moves program `i` to `phase`. Entering `waiting` is announced at the end of the decision,
    /// and only if the program is still waiting then (see [`Core::announce_waiting`]).
    fn set_phase_at(
        &mut self,
        i: usize,
        phase: Phase,
        now: Instant,
        why: String,
        level: Level,
        acts: &mut Vec<Action>,
    ) {
        let p = &mut self.programs[i];
        let from = p.state();
        p.phase = phase;
        let to = p.state();
        if from == to {
            return;
        }
        p.since = now;
        if to != State::Waiting {
            p.waiting_for = None;
            p.waiting_why = None;
            self.announce(i, to, why, level, acts);
        }
    }

    /// Tells the change from the state last announced to `to`, if they differ.
    fn announce(&mut self, i: usize, to: State, why: String, level: Level, acts: &mut Vec<Action>) {
        let p = &mut self.programs[i];
        let from = std::mem::replace(&mut p.announced, to);
        if from == to {
            return;
        }
        let name = p.name().to_string();
        let message = if why.is_empty() {
            format!("{name}: {from} -> {to}")
        } else {
            format!("{name}: {from} -> {to}: {why}")
        };
        self.notice(Some(i), level, Some((from, to)), message, acts);
    }

    fn notice(
        &self,
        i: Option<usize>,
        level: Level,
        transition: Option<(State, State)>,
        message: String,
        acts: &mut Vec<Action>,
    ) {
        acts.push(Action::Notice(Notice {
            program: i.map(|i| self.programs[i].name().to_string()),
            level,
            transition,
            message,
        }));
    }
}

/// Whether two specs run the same thing (where they were defined does not matter).
fn same_spec(a: &crate::config::ProgramSpec, b: &crate::config::ProgramSpec) -> bool {
    let mut a = a.clone();
    a.defined_at.clone_from(&b.defined_at);
    a == *b
}

/// Whether `dep` meets `condition` now.
fn condition_holds(dep: &Program, condition: Condition) -> bool {
    match condition {
        Condition::Started => matches!(
            dep.phase,
            Phase::Starting { .. } | Phase::Running { .. } | Phase::Completed
        ),
        Condition::Ready => matches!(dep.phase, Phase::Running { .. } | Phase::Completed),
        Condition::Completed => dep.phase == Phase::Completed,
    }
}

fn restart_word(spec: &crate::config::ProgramSpec) -> &'static str {
    match spec.restart {
        crate::config::RestartPolicy::Always => "always",
        crate::config::RestartPolicy::OnFailure => "on-failure",
        crate::config::RestartPolicy::Never => "never",
    }
}

/// A short human duration: `1.5s`, `250ms`, `2m`.
pub fn fmt_duration(d: Duration) -> String {
    if d >= Duration::from_secs(600) && d.subsec_millis() == 0 {
        humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
    } else if d >= Duration::from_secs(1) {
        let s = d.as_secs_f64();
        if s.fract() == 0.0 {
            format!("{}s", s as u64)
        } else {
            format!("{s:.1}s")
        }
    } else {
        format!("{}ms", d.as_millis())
    }
}

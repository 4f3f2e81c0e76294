//! The supervisor's decisions, as pure code: every program's lifecycle, the dependency rules
//! between them, restart propagation and the container's shutdown.
//!
//! [`Core::handle`] takes one [`Input`] and the current instant and returns the [`Action`]s the
//! I/O shell must carry out. It reads no clock, spawns nothing and sends no signal, so every
//! transition is unit-tested with explicit instants. Programs are named by [`ProgramId`]
//! everywhere outside; inside, they are stored in configuration order, which is also the
//! order of the configuration's dependency [`Graph`].
//!
//! The decisions live in rooms of their own: [`lifecycle`] (a run from spawn to its end and the
//! verdict), [`deadlines`] (one handler per timer), [`by_hand`] (start, stop, restart, signal),
//! [`shutdown`], [`reload`], and [`settle`] (applying targets until nothing changes).
//!
//! Invariants:
//! - a program is spawned only when it is meant to be up and its dependencies hold;
//! - a program meant to be down is stopped only after its dependents that are also meant to be
//!   down have stopped (reverse dependency order);
//! - a run is over only when its main process was reaped and its process group is empty;
//! - once shutting down, nothing starts, and `Exit` is emitted exactly once, after every
//!   program is down;
//! - every announced state change starts from the state last announced for that program.

mod by_hand;
mod deadlines;
pub mod external_record;
mod external_rules;
mod forking;
pub mod health;
mod input;
mod lifecycle;
mod limits;
mod liveness_rules;
pub mod notices;
pub mod notify_message;
pub mod policy;
pub mod program;
mod registry;
mod reload;
mod settle;
mod shutdown;
mod stopping;
pub mod transitions;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use self::external_record::External;
use self::program::{Phase, Program, Stopping, Target};
use crate::config::graph::Graph;
use crate::config::{Config, InitSettings};
use crate::model::{ProgramId, State};
use registry::Registry;

pub use input::{Action, Input, Level, Notice};

/// How long to wait, after SIGKILL, for group members other than the leader (a process in
/// uninterruptible sleep cannot die at once) before moving on without them.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// A graceful stop of the whole container.
#[derive(Debug, Clone, PartialEq)]
struct Shutdown {
    code: i32,
    deadline: Instant,
    killed: bool,
    exit_sent: bool,
    /// Asked for (a signal, `ctrlinit shutdown`), not an escalation or the main program's end:
    /// the exit status is then the main program's, when it ran.
    requested: bool,
    /// The signal that asked for it, for the `--` command.
    forwarded: Option<Signal>,
    /// While draining (`[init] drain`): when the programs start to stop.
    drain_until: Option<Instant>,
}

/// A reload waiting for removed and changed programs to stop.
#[derive(Debug)]
struct PendingReload {
    config: Config,
}

/// All program state and the rules between programs.
#[derive(Debug)]
pub struct Core {
    /// In configuration order (sorted by name), the order of `graph`'s positions.
    programs: Vec<Program>,
    /// Position of each program in `programs`.
    positions: HashMap<ProgramId, usize>,
    registry: Registry,
    graph: Graph,
    init: InitSettings,
    shutdown: Option<Shutdown>,
    pending_reload: Option<PendingReload>,
    /// Restarts by hand whose programs come back up together once all are down.
    restart_sets: Vec<Vec<ProgramId>>,
    /// Dependents a stop by hand took down along with the programs it named, by the program
    /// that took them: a start of that program brings them back (`by_hand`).
    taken_along: HashMap<ProgramId, Vec<ProgramId>>,
    /// Programs restarting because a `restart = true` dependency ended (its name first): they
    /// stay meant to be up, are stopped dependents first, and none starts again before all
    /// are down (see `settle`).
    propagated: Vec<(String, Vec<ProgramId>)>,
    /// Dependencies outside the container, sorted by name.
    externals: Vec<External>,
}

impl Core {
    /// A core for `config`; nothing starts before [`Input::Boot`].
    pub fn new(config: &Config, now: Instant) -> Self {
        let mut registry = Registry::default();
        let programs = config
            .programs
            .iter()
            .map(|s| {
                let (id, run) = registry.id_for(&s.name);
                Program::new(id, Arc::clone(s), run, now)
            })
            .collect();
        let mut core = Core {
            programs,
            positions: HashMap::new(),
            registry,
            graph: Graph::new(&config.programs),
            init: config.init.clone(),
            shutdown: None,
            pending_reload: None,
            restart_sets: Vec::new(),
            taken_along: HashMap::new(),
            propagated: Vec::new(),
            externals: config
                .externals
                .iter()
                .map(|e| External::new(Arc::new(e.clone()), now))
                .collect(),
        };
        core.index_positions();
        core
    }

    fn index_positions(&mut self) {
        self.positions = self
            .programs
            .iter()
            .enumerate()
            .map(|(i, p)| (p.id, i))
            .collect();
    }

    /// Every program, in configuration order (sorted by name).
    pub fn programs(&self) -> &[Program] {
        &self.programs
    }

    /// The program with id `id`, if it is in the configuration in force.
    pub fn program(&self, id: ProgramId) -> Option<&Program> {
        self.positions.get(&id).map(|&i| &self.programs[i])
    }

    /// The id of the program called `name`, if it is in the configuration in force.
    pub fn id_of(&self, name: &str) -> Option<ProgramId> {
        // By the registry, not a pass over the programs: the ledger asks at every notice, and
        // at a container stop of thousands that pass made the stop quadratic.
        self.registry
            .known(name)
            .filter(|id| self.positions.contains_key(id))
    }

    /// The ids of `id`'s dependents, transitively, `id` first.
    pub fn dependents_closure(&self, id: ProgramId) -> Vec<ProgramId> {
        self.ids(self.graph.dependents_closure(self.pos(id)))
    }

    /// The ids of what `id` depends on, transitively, `id` first.
    pub fn deps_closure(&self, id: ProgramId) -> Vec<ProgramId> {
        self.ids(self.graph.deps_closure(self.pos(id)))
    }

    fn ids(&self, positions: Vec<usize>) -> Vec<ProgramId> {
        positions.into_iter().map(|i| self.programs[i].id).collect()
    }

    /// Position of `id`. Only ids of programs in force reach the core's internals: inputs for
    /// others are dropped at the door (see [`Core::handle`]).
    fn pos(&self, id: ProgramId) -> usize {
        self.positions[&id]
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
        let programs = self.programs.iter().filter_map(|p| {
            let watchdog = p
                .watchdog_due
                .filter(|_| matches!(p.phase, Phase::Running { .. }));
            match (p.phase.deadline(), watchdog) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        });
        let shutdown = self
            .shutdown
            .as_ref()
            .filter(|s| !s.killed)
            .map(|s| s.drain_until.unwrap_or(s.deadline));
        programs
            .chain(shutdown)
            .chain(self.externals_deadline())
            .min()
    }

    /// Whether `pid` is a program's main process or `finish` hook (anything else reaped is an
    /// orphan the core has nothing to decide about).
    pub fn owns_pid(&self, pid: i32) -> bool {
        self.owner_of(pid).is_some()
    }

    /// The process group to check for emptiness when `pid`, a main process or finish hook, is
    /// reaped (a main process named by `MAINPID=` may lead another group than its run's).
    pub fn group_of(&self, pid: i32) -> Option<i32> {
        let p = &self.programs[self.owner_of(pid)?];
        match p.phase {
            Phase::Finishing { .. } => Some(pid),
            Phase::PreStopping(s) if s.hook == Some(pid) => Some(pid),
            phase => phase.pgid(),
        }
    }

    /// Whether `pid` is a `pre_stop` or `finish` hook (whatever it leaves in its process group
    /// is killed when it ends).
    pub fn is_hook(&self, pid: i32) -> bool {
        self.programs.iter().any(|p| {
            matches!(p.phase, Phase::Finishing { pid: Some(h), .. } if h == pid)
                || matches!(p.phase, Phase::PreStopping(s) if s.hook == Some(pid))
        })
    }

    fn owner_of(&self, pid: i32) -> Option<usize> {
        self.programs
            .iter()
            .position(|p| owned_by(p).any(|owned| owned == pid))
    }

    /// Every pid [`Core::owns_pid`] is true of, at once: one pass where many are looked up
    /// (with thousands of programs, one `owns_pid` a process is a pass over them all each).
    pub fn owned_pids(&self) -> std::collections::HashSet<i32> {
        self.programs.iter().flat_map(owned_by).collect()
    }

    /// Programs whose leader is gone and whose group must be checked for emptiness.
    pub fn draining_groups(&self) -> impl Iterator<Item = (ProgramId, i32)> + '_ {
        self.programs.iter().filter_map(|p| match p.phase {
            Phase::Stopping(Stopping {
                pgid, leader: None, ..
            }) => Some((p.id, pgid)),
            _ => None,
        })
    }

    /// The program an input names, when it is in the configuration in force (a late input for
    /// a program a reload removed is dropped).
    fn target_of(&self, input: &Input) -> Option<Option<usize>> {
        let id = match input {
            Input::Spawned { id, .. }
            | Input::SpawnFailed { id, .. }
            | Input::GroupGone { id }
            | Input::Ready { id, .. }
            | Input::Checked { id, .. }
            | Input::Measured { id, .. }
            | Input::Notified { id, .. }
            | Input::FinishSpawned { id, .. }
            | Input::PreStopSpawned { id, .. }
            | Input::Adopt { id, .. }
            | Input::AdoptRefused { id, .. }
            | Input::PreStopFailed { id, .. }
            | Input::FinishFailed { id }
            | Input::Signal { id, .. } => *id,
            _ => return Some(None),
        };
        self.positions.get(&id).map(|&i| Some(i))
    }

    /// Decides on `input`; returns what the shell must do, in order.
    pub fn handle(&mut self, input: Input, now: Instant) -> Vec<Action> {
        let mut acts = Vec::new();
        let Some(target) = self.target_of(&input) else {
            return acts;
        };
        let i = target.unwrap_or(usize::MAX);
        match input {
            Input::Boot => self.boot(now, &mut acts),
            Input::Tick => self.tick(now, &mut acts),
            Input::Spawned { pid, .. } => self.spawned(i, pid, now, &mut acts),
            Input::SpawnFailed {
                exit,
                error,
                exec_failed,
                ..
            } => self.spawn_failed(i, exit, &error, exec_failed, now, &mut acts),
            Input::Reaped {
                pid,
                exit,
                group_empty,
                oom_killed,
            } => self.reaped(pid, exit, group_empty, oom_killed, now, &mut acts),
            Input::GroupGone { .. } => self.group_gone(i, now, &mut acts),
            Input::Ready { run, .. } => self.ready(i, run, now, &mut acts),
            Input::Checked { run, result, .. } => self.checked(i, run, result, now, &mut acts),
            Input::Measured { run, figures, .. } => self.measured(i, run, figures, now, &mut acts),
            Input::Notified {
                message, main_pgid, ..
            } => self.notified(i, message, main_pgid, now, &mut acts),
            Input::FinishSpawned { pid, .. } => self.finish_spawned(i, pid),
            Input::PreStopSpawned { pid, .. } => self.pre_stop_spawned(i, pid),
            Input::Adopt { run, pid, pgid, .. } => self.adopt(i, run, pid, pgid, now, &mut acts),
            Input::AdoptRefused { run, why, .. } => {
                self.adoption_failed(i, (run, true), &why, now, &mut acts)
            }
            Input::PreStopFailed { error, .. } => self.pre_stop_failed(i, &error, now, &mut acts),
            Input::FinishFailed { .. } => self.finish_failed(i, now, &mut acts),
            Input::Shutdown { reason, signal } => {
                // Only a stop that begins with this request drains: a second request (after
                // the drain, or after a stop that began without one) must not put programs
                // already on their way down back up, nor say the drain again.
                let first = self.shutdown.is_none();
                self.begin_shutdown(0, &reason, now, &mut acts);
                if let Some(s) = &mut self.shutdown {
                    s.requested = true;
                    s.forwarded = s.forwarded.or(signal);
                }
                if first {
                    self.drain_first(now, &mut acts);
                }
            }
            Input::GiveUp {
                code,
                reason,
                message,
            } => {
                if !self.shutting_down() {
                    acts.push(Action::TerminationMessage(message));
                }
                self.begin_shutdown(i32::from(code), &reason, now, &mut acts);
            }
            Input::ForceKill => self.force_kill(now, &mut acts),
            Input::Start(ids) => self.start_by_hand(&ids, now, &mut acts),
            Input::Stop(ids) => self.stop_by_hand(&ids),
            Input::Restart(ids) => self.restart_by_hand(&ids),
            Input::Signal { signal, .. } => self.signal_by_hand(i, signal, &mut acts),
            Input::Reload(config) => self.begin_reload(*config, &mut acts),
            Input::ExternalChecked {
                name,
                passed,
                output,
                peer_run,
            } => self.external_checked(&name, passed, output, peer_run, now, &mut acts),
            Input::ExternalNoVerdict { name, output } => self.external_no_verdict(&name, &output),
        }
        self.settle(now, &mut acts);
        self.announce_waiting(&mut acts);
        acts
    }

    fn boot(&mut self, now: Instant, acts: &mut Vec<Action>) {
        self.boot_externals(now);
        for i in 0..self.programs.len() {
            if self.programs[i].spec.autostart {
                self.programs[i].target = Target::Up;
                self.set_phase(i, Phase::Waiting, now, String::new(), acts);
            }
        }
    }

    /// Moves program `i` to `phase`, at the level its new state calls for.
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
        // Debug builds (the tests, the chaos suite) hold the code to the documented table.
        debug_assert!(
            self::transitions::allowed(from, to),
            "{}: {from} -> {to} is not in supervisor::transitions::ALLOWED",
            p.name()
        );
        let message = notices::transition(p.name(), from, to, &why);
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
            health: None,
        }));
    }

    /// Sends `signal` to every process of program `i`'s current run (its group, and those that
    /// left it) and remembers it, so a death by that signal is not reported as a crash.
    fn signal_run(&mut self, i: usize, pgid: i32, signal: Signal, acts: &mut Vec<Action>) {
        self.programs[i].signals_sent |= 1 << (signal as i32);
        acts.push(Action::Signal {
            pgid,
            signal,
            cont: true,
            run_of: Some(self.programs[i].id),
        });
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
}

/// The processes of program `p` the core accounts for: its main process, or its `finish` or
/// `pre_stop` hook.
fn owned_by(p: &Program) -> impl Iterator<Item = i32> + '_ {
    let hook = match p.phase {
        Phase::Finishing { pid, .. } => pid,
        Phase::PreStopping(s) => s.hook,
        _ => None,
    };
    p.phase.pid().into_iter().chain(hook)
}

#[cfg(test)]
mod tests;

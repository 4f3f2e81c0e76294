//! Control requests: their types, and the answers, as plain functions of the core's state.
//!
//! A connection (on the control server's thread) sends a [`Control`] with a reply channel; the
//! owner loop calls the function for it here, feeds the core the inputs it returns, and replies.
//! Each answer is computed at once; waiting for a change to be applied happens in the
//! connection's task (see `api`), driven by the event stream and the [`Goal`]s returned here.

use std::time::Instant;

use tokio::sync::oneshot;

use super::core::program::{DownReason, Phase, Program, Target};
use super::core::{Core, Input};
use super::telemetry::{Metrics, ProbeAnswer};
use crate::config::Kind;
use crate::config::OnHealthFailure;
use crate::config::describe::{external_node, graph_node};
use crate::model::pattern::fnmatch;
use crate::model::protocol::{
    CheckInfo, ErrorKind, ExitInfo, GraphNode, HealthInfo, LimitFigures, LimitsInfo, NotifyInfo,
    ProgramStatus, RestartsByCause,
};
use crate::model::signals::{parse_signal, signal_name};
use crate::model::{Exit, ProgramId, State};

/// A request refused or failed: its kind (the client's exit status) and one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// One clear line.
    pub message: String,
}

impl Refusal {
    /// A refusal of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}

/// An answer or its refusal.
pub type Answer<T> = Result<T, Refusal>;

/// How far a `status` answer looks past what the core holds. Finding a program's processes
/// reads its cgroup's (or `/proc`'s) files, and its usage more of them: a few system calls a
/// program, which at thousands of programs are most of the answer's cost.
/// Only the answers that show them pay for them: waits, probes and peers ask for states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Detail {
    /// The core's state alone (no file read).
    States,
    /// And each program's processes (`status`: their count and pids).
    Processes,
    /// And each program's CPU time and memory (`status --usage`, `top`).
    Usage,
}

/// One moment of the init, as `status` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Sequence number of the last event announced before it.
    pub seq: u64,
    /// The programs asked for.
    pub programs: Vec<ProgramStatus>,
    /// The network watch, when there is one.
    pub network: Option<crate::model::protocol::NetworkStatus>,
    /// The external dependencies, by name (empty unless asked for).
    pub externals: Vec<crate::model::protocol::ExternalStatus>,
}

/// What a connection asks the owner loop.
pub enum Control {
    /// A snapshot of programs (all when empty); unknown names are refused.
    Status {
        /// Programs to show.
        names: Vec<String>,
        /// How much beyond the core's own state to look at.
        detail: Detail,
        /// Answer: sequence number of the last event, and the programs.
        reply: oneshot::Sender<Answer<(u64, Vec<ProgramStatus>)>>,
    },
    /// `status`: programs (all when `names` is empty), the network watch and, with every
    /// program, the externals, all taken in one turn of the owner loop, so the answer is one
    /// moment's (no state changes between its parts).
    Snapshot {
        /// Programs to show.
        names: Vec<String>,
        /// How much beyond the core's own state to look at.
        detail: Detail,
        /// Whether the externals are part of it.
        externals: bool,
        /// Answer.
        reply: oneshot::Sender<Answer<Snapshot>>,
    },
    /// Start, stop or restart by hand.
    Change {
        /// Which change.
        kind: ChangeKind,
        /// Programs to change.
        names: Vec<String>,
        /// Change every program.
        all: bool,
        /// Answer: what to wait for.
        reply: oneshot::Sender<Answer<Plan>>,
    },
    /// Send a signal by hand.
    Signal {
        /// Signal name, as the user wrote it.
        signal: String,
        /// Programs to signal.
        names: Vec<String>,
        /// Answer: what was sent to whom.
        reply: oneshot::Sender<Answer<String>>,
    },
    /// Whether every program is in its wanted state.
    Health {
        /// Count programs stopped by hand too.
        strict: bool,
        /// Answer: healthy, and what is not.
        reply: oneshot::Sender<(bool, Vec<String>)>,
    },
    /// Reload the configuration.
    Reload {
        /// Answer: the reload's summary.
        reply: oneshot::Sender<Answer<String>>,
    },
    /// Stop the container as SIGTERM would.
    Shutdown {
        /// Answer, once decided.
        reply: oneshot::Sender<String>,
    },
    /// The dependency graph with states.
    Graph {
        /// Answer: the nodes.
        reply: oneshot::Sender<Vec<GraphNode>>,
    },
    /// Liveness and readiness of the container (`/livez`, `/readyz`).
    Probe {
        /// Answer.
        reply: oneshot::Sender<ProbeAnswer>,
    },
    /// The numbers behind `/metrics`.
    Metrics {
        /// Answer.
        reply: oneshot::Sender<Metrics>,
    },
}

/// Start, stop or restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Start (with what it needs).
    Start,
    /// Stop (after what requires it).
    Stop,
    /// Restart (with what requires it).
    Restart,
}

/// What a change by hand waits for before the command returns.
#[derive(Debug, Clone)]
pub struct Plan {
    /// What was done, for the command's output.
    pub message: String,
    /// Every goal must hold.
    pub goals: Vec<Goal>,
}

/// One program reaching one of some states.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// The program.
    pub name: String,
    /// States that reach the goal.
    pub states: Vec<State>,
    /// States that mean it will not get there.
    pub fails: Vec<State>,
    /// The run must be newer than this (a restart).
    pub after_run: Option<u64>,
}

/// Ids of `names`, or a refusal naming the unknown ones and the known ones. The name of an
/// instanced program (`instances = N`) stands for all its instances, in index order; an
/// instance's own name (`web-2`) for that one; a `member_of` name for its members, in
/// configuration order. supervisorctl's `NAME:*` is NAME, and `GROUP:NAME` is NAME when it is
/// one of GROUP's. Each program is named once, however often asked.
pub fn resolve(core: &Core, names: &[String]) -> Answer<Vec<ProgramId>> {
    let mut ids: Vec<ProgramId> = Vec::new();
    let mut unknown: Vec<&str> = Vec::new();
    for n in names {
        let found = ids_named(core, n);
        if found.is_empty() {
            unknown.push(n);
        }
        for id in found {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    if !unknown.is_empty() {
        let mut known: Vec<&str> = core.programs().iter().map(Program::name).collect();
        for p in core.programs() {
            let shared = p.spec.instance.as_ref().map(|i| i.group.as_str());
            for name in shared.into_iter().chain(p.spec.member_of.as_deref()) {
                if !known.contains(&name) {
                    known.push(name);
                }
            }
        }
        return Err(Refusal::new(
            ErrorKind::UnknownProgram,
            format!(
                "unknown program{} {}; known programs: {}",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.join(", "),
                known.join(", ")
            ),
        ));
    }
    Ok(ids)
}

/// The program called `name`, or the instances of the instanced program called so, or the
/// members of the `member_of` name; supervisorctl's `NAME:*` and `GROUP:NAME` too.
fn ids_named(core: &Core, name: &str) -> Vec<ProgramId> {
    if let Some(all) = name.strip_suffix(":*") {
        return ids_named(core, all);
    }
    if let Some((group, one)) = name.split_once(':') {
        let members = ids_named(core, group);
        return ids_named(core, one)
            .into_iter()
            .filter(|id| members.contains(id))
            .collect();
    }
    if let Some(id) = core.id_of(name) {
        return vec![id];
    }
    if is_pattern(name) {
        return core
            .programs()
            .iter()
            .filter(|p| fnmatch(p.name(), name))
            .map(|p| p.id)
            .collect();
    }
    let members: Vec<ProgramId> = core
        .programs()
        .iter()
        .filter(|p| p.spec.member_of.as_deref() == Some(name))
        .map(|p| p.id)
        .collect();
    if !members.is_empty() {
        return members;
    }
    let mut members: Vec<(u32, ProgramId)> = core
        .programs()
        .iter()
        .filter_map(|p| {
            let i = p.spec.instance.as_ref()?;
            (i.group == name).then_some((i.index, p.id))
        })
        .collect();
    members.sort_unstable_by_key(|&(index, _)| index);
    members.into_iter().map(|(_, id)| id).collect()
}

/// Longest name taken as a pattern: names are at most 64 bytes, and a longer pattern (a local
/// user's megabyte of `*a*a…`) would cost the owner loop a quadratic match per program.
const PATTERN_MAX: usize = 128;

/// Whether a name given to a command is a shell pattern (`svc-*`, `web-?`, `[ab]*`), as
/// supervisorctl and systemctl users write them.
fn is_pattern(name: &str) -> bool {
    name.len() <= PATTERN_MAX && name.contains(['*', '?', '['])
}

/// `status`: the named programs (all when `names` is empty) as they are at `now`.
pub fn status(
    core: &Core,
    seq: u64,
    names: &[String],
    now: Instant,
) -> Answer<(u64, Vec<ProgramStatus>)> {
    let programs = if names.is_empty() {
        core.programs().iter().map(|p| status_of(p, now)).collect()
    } else {
        resolve(core, names)?
            .into_iter()
            .filter_map(|id| core.program(id))
            .map(|p| status_of(p, now))
            .collect()
    };
    Ok((seq, programs))
}

/// `start`, `stop`, `restart`: the input to feed and what the command waits for.
pub fn plan_change(
    core: &Core,
    kind: ChangeKind,
    names: &[String],
    all: bool,
) -> Answer<(Input, Plan)> {
    let targets = change_targets(core, names, all)?;
    let goals = change_goals(core, kind, &targets);
    let message = change_message(core, kind, &targets, &goals);
    let input = match kind {
        ChangeKind::Start => Input::Start(targets),
        ChangeKind::Stop => Input::Stop(targets),
        ChangeKind::Restart => Input::Restart(targets),
    };
    Ok((input, Plan { message, goals }))
}

/// The programs a change names: all of them with `--all`, else the names (or patterns)
/// given; refused while the container shuts down, or when nothing is named.
fn change_targets(core: &Core, names: &[String], all: bool) -> Answer<Vec<ProgramId>> {
    if core.shutting_down() {
        return Err(Refusal::new(
            ErrorKind::Refused,
            "the container is shutting down",
        ));
    }
    if names.is_empty() && !all {
        return Err(Refusal::new(
            ErrorKind::BadRequest,
            "name the programs, or use --all",
        ));
    }
    if all {
        Ok(core.programs().iter().map(|p| p.id).collect())
    } else {
        resolve(core, names)
    }
}

fn program_name(core: &Core, id: ProgramId) -> String {
    core.program(id)
        .map_or_else(String::new, |p| p.name().to_string())
}

/// What the command waits for: every program the change reaches (the targets, what
/// they take along, and for `start` what a stop of them took) in the state it aims at.
fn change_goals(core: &Core, kind: ChangeKind, targets: &[ProgramId]) -> Vec<Goal> {
    match kind {
        ChangeKind::Start => targets
            .iter()
            .copied()
            .chain(core.brought_back_with(targets))
            .filter_map(|id| goal_up(core, id, None))
            .collect(),
        ChangeKind::Stop => core
            .stopped_with(targets)
            .into_iter()
            .map(|id| Goal {
                name: program_name(core, id),
                states: vec![State::Stopped],
                fails: vec![],
                after_run: None,
            })
            .collect(),
        ChangeKind::Restart => core
            .restarted_with(targets)
            .into_iter()
            .filter_map(|id| goal_up(core, id, core.program(id).map(|p| p.run)))
            .collect(),
    }
}

/// The answer's sentence: what changed, what it took along and why, and what came back.
fn change_message(core: &Core, kind: ChangeKind, targets: &[ProgramId], goals: &[Goal]) -> String {
    let name = |id: ProgramId| program_name(core, id);
    let list: Vec<String> = targets.iter().map(|&id| name(id)).collect();
    // Programs the change takes along, named so the operator knows (dependents stopped
    // first, dependencies started first).
    let along: Vec<String> = match kind {
        ChangeKind::Start => core.started_with(targets).into_iter().map(name).collect(),
        _ => goals
            .iter()
            .map(|g| g.name.clone())
            .filter(|n| !list.contains(n))
            .rev()
            .collect(),
    };
    let (names, extra) = (list.join(", "), along.join(", "));
    let back: Vec<String> = match kind {
        ChangeKind::Start => core
            .brought_back_with(targets)
            .into_iter()
            .map(name)
            .collect(),
        _ => Vec::new(),
    };
    let back = if back.is_empty() {
        String::new()
    } else {
        format!(
            "; brought back {} (stopped along with {names})",
            back.join(", ")
        )
    };
    let said = match kind {
        ChangeKind::Start if extra.is_empty() => format!("started {names}"),
        ChangeKind::Stop if extra.is_empty() => format!("stopped {names}"),
        ChangeKind::Restart if extra.is_empty() => format!("restarted {names}"),
        ChangeKind::Start => format!("started {extra} (needed by {names}), then {names}"),
        ChangeKind::Stop => format!("stopped {extra} first (they require {names}), then {names}"),
        ChangeKind::Restart => format!("restarted {names} and {extra} (they require {names})"),
    };
    said + &back
}

/// Up means running for a service, completed for a oneshot.
fn goal_up(core: &Core, id: ProgramId, after_run: Option<u64>) -> Option<Goal> {
    let p = core.program(id)?;
    let states = match p.spec.kind {
        Kind::Service => vec![State::Running],
        Kind::Oneshot => vec![State::Completed],
    };
    Some(Goal {
        name: p.name().to_string(),
        states,
        fails: vec![State::Exited, State::Exhausted, State::Stopped],
        after_run,
    })
}

/// `signal`: the inputs to feed (one per program) and what was sent.
pub fn plan_signal(core: &Core, signal: &str, names: &[String]) -> Answer<(Vec<Input>, String)> {
    let sig = parse_signal(signal).map_err(|e| {
        Refusal::new(
            ErrorKind::BadRequest,
            format!("{e}; use a name such as SIGHUP or TERM"),
        )
    })?;
    let targets = resolve(core, names)?;
    let mut sent = Vec::new();
    for &id in &targets {
        let Some(p) = core.program(id) else { continue };
        let Some(pgid) = p.phase.pid().and(p.phase.pgid()) else {
            let why = format!("{} is not running (it is {})", p.name(), p.state());
            return Err(Refusal::new(ErrorKind::Failed, why));
        };
        sent.push(format!("{} (process group {pgid})", p.name()));
    }
    let inputs = targets
        .into_iter()
        .map(|id| Input::Signal { id, signal: sig })
        .collect();
    Ok((
        inputs,
        format!("sent {} to {}", sig.as_str(), sent.join(", ")),
    ))
}

/// `health`: whether every program is in its wanted state, and what is not.
pub fn health(core: &Core, strict: bool) -> (bool, Vec<String>) {
    let mut problems: Vec<String> = Vec::new();
    if core.draining() {
        problems.push("the container is stopping (draining before the stop)".into());
    }
    problems.extend(
        core.programs()
            .iter()
            .filter_map(|p| health_problem(p, strict)),
    );
    (problems.is_empty(), problems)
}

/// `graph`: every program with its state, then every external with its own.
pub fn graph(core: &Core) -> Vec<GraphNode> {
    let programs = core.programs().iter().map(|p| GraphNode {
        state: Some(p.state()),
        ..graph_node(&p.spec)
    });
    let externals = core.externals().iter().map(|e| GraphNode {
        external_state: Some(e.state.as_str().to_string()),
        ..external_node(&e.spec)
    });
    programs.chain(externals).collect()
}

/// `status`'s externals: each with the programs that depend on it.
pub fn externals(core: &Core, now: Instant) -> Vec<crate::model::protocol::ExternalStatus> {
    core.externals()
        .iter()
        .map(|e| {
            let dependents = core
                .programs()
                .iter()
                .filter(|p| p.spec.depends_on.iter().any(|d| d.name == e.spec.name))
                .map(|p| p.name().to_string())
                .collect();
            e.status(dependents, now)
        })
        .collect()
}

/// Why `p` is not in its wanted state, if it is not.
fn health_problem(p: &Program, strict: bool) -> Option<String> {
    let state = p.state();
    match p.target {
        // `autostart = false` wants it stopped until someone starts it: healthy, even strictly.
        Target::Down(DownReason::Autostart) => None,
        Target::Down(DownReason::Manual) if !strict => None,
        Target::Down(reason) => Some(format!("{} is {state} ({})", p.name(), reason.as_str())),
        Target::Up if p.is_unhealthy() => {
            let last = p
                .health
                .as_ref()
                .and_then(|h| h.last.as_ref())
                .map_or(String::new(), |l| format!(": {}", l.result.output));
            Some(format!("{} is unhealthy{last}", p.name()))
        }
        Target::Up => {
            let wanted = match p.spec.kind {
                Kind::Service => State::Running,
                Kind::Oneshot => State::Completed,
            };
            if state == wanted {
                return None;
            }
            let detail = match (&p.waiting_for, p.last_exit) {
                (Some(_), _) if state == State::Waiting && p.waiting_why.is_some() => {
                    format!(" (waiting for {})", p.waiting_why.as_deref().unwrap_or(""))
                }
                (Some(w), _) if state == State::Waiting => format!(" (for {w})"),
                (_, Some(e)) => format!(" (last: {e})"),
                _ => String::new(),
            };
            Some(format!("{} is {state}{detail}", p.name()))
        }
    }
}

fn status_of(p: &Program, now: Instant) -> ProgramStatus {
    let spec = &p.spec;
    let ms = |d: std::time::Duration| d.as_millis() as u64;
    let running = matches!(p.phase, Phase::Starting { .. } | Phase::Running { .. });
    ProgramStatus {
        name: spec.name.clone(),
        kind: spec.kind.as_str().to_string(),
        state: p.state(),
        pid: p.phase.pid(),
        pgid: p.phase.pgid(),
        run: p.run,
        since_ms: ms(now.saturating_duration_since(p.since)),
        uptime_ms: p
            .run_started
            .filter(|_| running)
            .map(|t| ms(now.saturating_duration_since(t))),
        restarts: p.history.total,
        restarts_in_window: p.history.in_window(spec.restart_window, now),
        max_restarts: spec.max_restarts,
        forced_restarts: p.forced_restarts,
        last_exit: p.last_exit.map(|e| exit_info(e, p.oom_killed)),
        readiness: spec.ready.as_ref().map(|r| r.probe.describe()),
        ready: matches!(p.phase, Phase::Running { .. }) || p.phase == Phase::Completed,
        backoff_remaining_ms: match p.phase {
            Phase::Backoff { until } => Some(ms(until.saturating_duration_since(now))),
            _ => None,
        },
        waiting_for: p.waiting_for.clone(),
        waiting_why: p
            .waiting_why
            .clone()
            .filter(|_| p.state() == State::Waiting),
        down_reason: match p.target {
            Target::Down(r) => Some(r.as_str().to_string()),
            Target::Up => None,
        },
        stopped_by_hand: p.target == Target::Down(DownReason::Manual),
        main: spec.main,
        health: health_info(p, now),
        notify: spec.speaks_notify().then(|| NotifyInfo {
            status: p.notified.status.clone(),
            reloading: p.notified.reloading,
            stopping: p.notified.stopping,
            errno: p.notified.errno,
        }),
        processes: None,
        pids: Vec::new(),
        tracking: None,
        memory_bytes: None,
        cpu_usec: None,
        restarts_by_cause: RestartsByCause {
            exit: p.causes.exit,
            readiness: p.causes.readiness,
            health: p.causes.health,
            dependency: p.causes.dependency,
            manual: p.causes.manual,
            limit: p.causes.limit,
        },
        limits: limits_info(p, now),
    }
}

/// A program's limits and its current run's last figures, for `status`.
fn limits_info(p: &Program, now: Instant) -> Option<LimitsInfo> {
    let ms = |d: std::time::Duration| d.as_millis() as u64;
    let limits = p.spec.limits.as_ref()?;
    Some(LimitsInfo {
        memory_bytes: limits.memory,
        fds: limits.fds,
        interval_ms: ms(limits.interval),
        memory_max_bytes: limits.memory_max,
        pids_max: limits.pids_max,
        last: p.measured.map(|(m, at)| LimitFigures {
            memory_bytes: m.memory_bytes,
            fds: m.fds,
            processes: m.processes,
            source: if m.from_cgroup { "cgroup" } else { "proc" }.into(),
            ago_ms: ms(now.saturating_duration_since(at)),
        }),
        over: p.over_limit.clone(),
    })
}

/// A program's liveness for `status`: `-` while it does not run.
fn health_info(p: &Program, now: Instant) -> Option<HealthInfo> {
    let settings = p.spec.health.as_ref()?;
    let check = match (&settings.check, settings.watchdog) {
        (Some(c), _) => c.describe(),
        (None, Some(w)) => format!(
            "watchdog {}",
            crate::supervisor::core::notices::fmt_duration(w)
        ),
        (None, None) => String::new(),
    };
    let running = matches!(p.phase, Phase::Running { .. });
    let h = p.health.as_ref();
    let wall = std::time::SystemTime::now();
    Some(HealthInfo {
        status: match h {
            Some(h) if running => h.status.to_string(),
            _ => "-".into(),
        },
        unhealthy: p.is_unhealthy(),
        check,
        on_failure: match settings.on_failure {
            OnHealthFailure::Restart => "restart".into(),
            OnHealthFailure::Mark => "mark".into(),
        },
        last: h.and_then(|h| h.last.as_ref()).map(|l| {
            let ago = now.saturating_duration_since(l.at);
            CheckInfo {
                passed: l.result.passed,
                output: l.result.output.clone(),
                took_ms: l.result.took.as_millis() as u64,
                ago_ms: ago.as_millis() as u64,
                time: humantime::format_rfc3339_millis(wall.checked_sub(ago).unwrap_or(wall))
                    .to_string(),
            }
        }),
        checks_total: h.map_or(0, |h| h.checks_total),
        failures_total: h.map_or(0, |h| h.failures_total),
    })
}

fn exit_info(e: Exit, oom_killed: bool) -> ExitInfo {
    let text = if oom_killed {
        format!("{e} (the OOM killer)")
    } else {
        e.to_string()
    };
    match e {
        Exit::Code(c) => ExitInfo {
            code: Some(c),
            signal: None,
            core_dumped: false,
            oom_killed,
            text,
        },
        Exit::Signal { sig, core_dumped } => ExitInfo {
            code: None,
            signal: Some(signal_name(sig)),
            core_dumped,
            oom_killed,
            text,
        },
    }
}

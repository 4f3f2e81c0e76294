//! Control requests, answered inside the owner loop: snapshots of program state, changes by
//! hand, signals, health, reload, shutdown, the graph. Each answer is computed from the core at
//! once; waiting for a change to be applied happens in the connection's task, not here.

use std::sync::Arc;
use std::time::Instant;

use super::core::Input;
use super::program::{DownReason, Phase, Program, Target};
use super::runner::Runner;
use super::state::State;
use crate::api::protocol::{ExitInfo, GraphNode, ProgramStatus};
use crate::api::server::{ChangeKind, Control, Goal, Plan};
use crate::config::{Kind, ReadyProbe, parse_signal, signal_name};
use crate::process::Exit;

impl Runner {
    /// Answers one control request.
    pub(super) fn on_control(&mut self, request: Control) {
        match request {
            Control::Status { names, reply } => {
                let _ = reply.send(self.snapshot(&names));
            }
            Control::Change {
                kind,
                names,
                all,
                reply,
            } => {
                let _ = reply.send(self.change(kind, &names, all));
            }
            Control::Signal {
                signal,
                names,
                reply,
            } => {
                let _ = reply.send(self.signal_by_hand(&signal, &names));
            }
            Control::Health { strict, reply } => {
                let _ = reply.send(self.health(strict));
            }
            Control::Reload { reply } => {
                let _ = reply.send(self.reload());
            }
            Control::Shutdown { reply } => {
                self.feed(Input::Shutdown {
                    reason: "requested over the control socket".into(),
                });
                let _ = reply.send("shutting down".into());
            }
            Control::Graph { reply } => {
                let _ = reply.send(self.graph_nodes());
            }
        }
    }

    /// Indices of `names`, or an error naming the unknown ones and the known ones.
    fn resolve(&self, names: &[String]) -> Result<Vec<usize>, String> {
        let unknown: Vec<&str> = names
            .iter()
            .filter(|n| self.core.index_of(n).is_none())
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let known: Vec<&str> = self.core.programs().iter().map(Program::name).collect();
            return Err(format!(
                "unknown program{} {}; known programs: {}",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.join(", "),
                known.join(", ")
            ));
        }
        Ok(names.iter().filter_map(|n| self.core.index_of(n)).collect())
    }

    fn snapshot(&self, names: &[String]) -> Result<(u64, Vec<ProgramStatus>), String> {
        let indices = if names.is_empty() {
            (0..self.core.programs().len()).collect()
        } else {
            self.resolve(names)?
        };
        let now = Instant::now();
        let programs = indices
            .into_iter()
            .map(|i| status_of(&self.core.programs()[i], now))
            .collect();
        Ok((self.seq, programs))
    }

    fn change(&mut self, kind: ChangeKind, names: &[String], all: bool) -> Result<Plan, String> {
        if self.core.shutting_down() {
            return Err("the container is shutting down".into());
        }
        if names.is_empty() && !all {
            return Err("name the programs, or use --all".into());
        }
        let targets = if all {
            (0..self.core.programs().len()).collect()
        } else {
            self.resolve(names)?
        };
        let graph = self.core.graph();
        let goals: Vec<Goal> = match kind {
            ChangeKind::Start => targets.iter().map(|&i| self.goal_up(i, None)).collect(),
            ChangeKind::Stop => {
                let mut set: Vec<usize> = Vec::new();
                for &i in &targets {
                    for j in graph.dependents_closure(i) {
                        if !set.contains(&j) {
                            set.push(j);
                        }
                    }
                }
                set.iter()
                    .map(|&j| Goal {
                        name: self.core.programs()[j].name().to_string(),
                        states: vec![State::Stopped],
                        fails: vec![],
                        after_run: None,
                    })
                    .collect()
            }
            ChangeKind::Restart => {
                let mut set: Vec<usize> = Vec::new();
                for &i in &targets {
                    for j in graph.dependents_closure(i) {
                        let parked = matches!(
                            self.core.programs()[j].target,
                            Target::Down(DownReason::Manual | DownReason::Autostart)
                        );
                        if (j == i || !parked) && !set.contains(&j) {
                            set.push(j);
                        }
                    }
                }
                set.iter()
                    .map(|&j| self.goal_up(j, Some(self.core.programs()[j].run)))
                    .collect()
            }
        };
        let list: Vec<String> = targets
            .iter()
            .map(|&i| self.core.programs()[i].name().to_string())
            .collect();
        // Programs the change takes along, named so the operator knows (dependents stopped
        // first, dependencies started first).
        let along: Vec<String> = match kind {
            ChangeKind::Start => targets
                .iter()
                .flat_map(|&i| graph.deps_closure(i))
                .filter(|j| !targets.contains(j))
                .filter(|&j| !self.core.programs()[j].wants_up())
                .map(|j| self.core.programs()[j].name().to_string())
                .collect(),
            _ => goals
                .iter()
                .map(|g: &Goal| g.name.clone())
                .filter(|n| !list.contains(n))
                .rev()
                .collect(),
        };
        let mut along_unique: Vec<String> = Vec::new();
        for n in along {
            if !along_unique.contains(&n) {
                along_unique.push(n);
            }
        }
        let (names, extra) = (list.join(", "), along_unique.join(", "));
        let message = match kind {
            _ if extra.is_empty() => match kind {
                ChangeKind::Start => format!("started {names}"),
                ChangeKind::Stop => format!("stopped {names}"),
                ChangeKind::Restart => format!("restarted {names}"),
            },
            ChangeKind::Start => format!("started {extra} (needed by {names}), then {names}"),
            ChangeKind::Stop => {
                format!("stopped {extra} first (they require {names}), then {names}")
            }
            ChangeKind::Restart => format!("restarted {names} and {extra} (they require {names})"),
        };
        let input = match kind {
            ChangeKind::Start => Input::Start(targets),
            ChangeKind::Stop => Input::Stop(targets),
            ChangeKind::Restart => Input::Restart(targets),
        };
        self.feed(input);
        Ok(Plan { message, goals })
    }

    /// Up means running for a service, completed for a oneshot.
    fn goal_up(&self, i: usize, after_run: Option<u64>) -> Goal {
        let p = &self.core.programs()[i];
        let states = match p.spec.kind {
            Kind::Service => vec![State::Running],
            Kind::Oneshot => vec![State::Completed],
        };
        Goal {
            name: p.name().to_string(),
            states,
            fails: vec![State::Exited, State::Exhausted, State::Stopped],
            after_run,
        }
    }

    fn signal_by_hand(&mut self, signal: &str, names: &[String]) -> Result<String, String> {
        let sig =
            parse_signal(signal).map_err(|e| format!("{e}; use a name such as SIGHUP or TERM"))?;
        let targets = self.resolve(names)?;
        let mut sent = Vec::new();
        for &i in &targets {
            let p = &self.core.programs()[i];
            let Some(pid) = p.phase.pid() else {
                return Err(format!("{} is not running (it is {})", p.name(), p.state()));
            };
            sent.push(format!("{} (process group {pid})", p.name()));
        }
        for i in targets {
            self.feed(Input::Signal {
                prog: i,
                signal: sig,
            });
        }
        Ok(format!("sent {} to {}", sig.as_str(), sent.join(", ")))
    }

    fn health(&self, strict: bool) -> (bool, Vec<String>) {
        let problems: Vec<String> = self
            .core
            .programs()
            .iter()
            .filter_map(|p| health_problem(p, strict))
            .collect();
        (problems.is_empty(), problems)
    }

    /// Re-reads the configuration; on success the core stops what was removed or changed, then
    /// switches. On failure the running configuration stays, and every error is returned.
    pub(super) fn reload(&mut self) -> Result<String, String> {
        if self.core.shutting_down() {
            return Err("the container is shutting down".into());
        }
        if self.core.reload_pending() {
            return Err("a reload is already in progress".into());
        }
        self.cold_memory = super::runner::ColdMemory::AfterStartup;
        let config = crate::config::load_with(&self.opts.load, &self.opts.overrides)
            .map_err(|e| e.to_string())?;
        let summary = self.core.reload_summary(&config);
        self.pending_config = Some(Arc::new(config.clone()));
        self.feed(Input::Reload(Box::new(config)));
        Ok(summary)
    }

    fn graph_nodes(&self) -> Vec<GraphNode> {
        self.core
            .programs()
            .iter()
            .map(|p| GraphNode {
                name: p.name().to_string(),
                kind: p.spec.kind.as_str().to_string(),
                state: Some(p.state()),
                depends_on: p
                    .spec
                    .depends_on
                    .iter()
                    .map(|d| (d.name.clone(), d.condition.as_str().to_string(), d.restart))
                    .collect(),
            })
            .collect()
    }
}

/// Why `p` is not in its wanted state, if it is not.
fn health_problem(p: &Program, strict: bool) -> Option<String> {
    let state = p.state();
    match p.target {
        // `autostart = false` wants it stopped until someone starts it: healthy, even strictly.
        Target::Down(DownReason::Autostart) => None,
        Target::Down(DownReason::Manual) if !strict => None,
        Target::Down(reason) => Some(format!("{} is {state} ({})", p.name(), reason.as_str())),
        Target::Up => {
            let wanted = match p.spec.kind {
                Kind::Service => State::Running,
                Kind::Oneshot => State::Completed,
            };
            if state == wanted {
                return None;
            }
            let detail = match (&p.waiting_for, p.last_exit) {
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
        pgid: p.phase.pid(),
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
        last_exit: p.last_exit.map(exit_info),
        readiness: spec.ready.as_ref().map(|r| match &r.probe {
            ReadyProbe::Tcp(a) => format!("tcp {a}"),
            ReadyProbe::Exec(argv) => format!("exec {}", argv.join(" ")),
            ReadyProbe::File(f) => format!("file {}", f.display()),
        }),
        ready: matches!(p.phase, Phase::Running { .. }) || p.phase == Phase::Completed,
        backoff_remaining_ms: match p.phase {
            Phase::Backoff { until } => Some(ms(until.saturating_duration_since(now))),
            _ => None,
        },
        waiting_for: p.waiting_for.clone(),
        down_reason: match p.target {
            Target::Down(r) => Some(r.as_str().to_string()),
            Target::Up => None,
        },
        stopped_by_hand: p.target == Target::Down(DownReason::Manual),
        main: spec.main,
    }
}

fn exit_info(e: Exit) -> ExitInfo {
    match e {
        Exit::Code(c) => ExitInfo {
            code: Some(c),
            signal: None,
            core_dumped: false,
            text: e.to_string(),
        },
        Exit::Signal { sig, core_dumped } => ExitInfo {
            code: None,
            signal: Some(signal_name(sig)),
            core_dumped,
            text: e.to_string(),
        },
    }
}

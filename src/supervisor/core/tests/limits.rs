//! The core's rules for `[program.NAME.limits]`: a run past a limit is stopped gracefully and
//! restarted as a failed run (cause `limit`, counted in the budget, with a crash report naming
//! the figure), until the budget ends in the container's exit.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::{Sim, svc};
use crate::config::ProgramSpec;
use crate::config::limits::{DEFAULT_INTERVAL, Limits};
use crate::model::{Exit, State};
use crate::supervisor::core::program::Measured;
use crate::supervisor::core::{Action, Input};

fn with_limits(mut p: ProgramSpec, memory: Option<u64>, fds: Option<u64>) -> ProgramSpec {
    p.limits = Some(Limits {
        memory,
        fds,
        interval: DEFAULT_INTERVAL,
        memory_max: None,
        pids_max: None,
    });
    p
}

impl Sim {
    fn measure(&mut self, name: &str, memory: Option<u64>, fds: Option<u64>) {
        let run = self.prog(name).run;
        self.measure_run(name, run, memory, fds);
    }

    fn measure_run(&mut self, name: &str, run: u64, memory: Option<u64>, fds: Option<u64>) {
        let id = self.idx(name);
        let figures = Measured {
            memory_bytes: memory,
            fds,
            processes: Some(1),
            from_cgroup: false,
        };
        self.input(Input::Measured { id, run, figures });
    }

    /// The stop the core asked for: the leader dies of the stop signal.
    fn die_of_stop(&mut self, name: &str) {
        let pid = self.pid(name);
        self.input(Input::Reaped {
            pid,
            exit: Exit::Signal {
                sig: Signal::SIGTERM as i32,
                core_dumped: false,
            },
            group_empty: true,
            oom_killed: false,
        });
    }

    fn crash_limits(&self) -> Vec<Option<String>> {
        self.log
            .iter()
            .filter_map(|a| match a {
                Action::Crashed { limit, .. } => Some(limit.clone()),
                _ => None,
            })
            .collect()
    }
}

const GIB: u64 = 1 << 30;

#[test]
fn memory_past_its_limit_restarts_through_the_budget_to_the_container_exit() {
    let mut p = with_limits(svc("api", &[]), Some(GIB), None);
    p.max_restarts = 1;
    let mut sim = Sim::new(vec![p]);
    let first = sim.pid("api");
    sim.measure("api", Some(GIB / 2), None);
    assert_eq!(
        sim.state("api"),
        State::Running,
        "under the limit nothing acts"
    );
    assert_eq!(
        sim.prog("api").measured.map(|(m, _)| m.memory_bytes),
        Some(Some(GIB / 2)),
        "the figure is kept for status"
    );
    // Exactly at the limit is not past it.
    sim.measure("api", Some(GIB), None);
    assert_eq!(sim.state("api"), State::Running);
    sim.measure("api", Some(1_299_227_607), None);
    assert_eq!(sim.state("api"), State::Stopping);
    assert!(sim.signals.contains(&(first, Signal::SIGTERM)));
    assert_eq!(
        sim.prog("api").over_limit.as_deref(),
        Some("memory 1.21 GiB over 1 GiB")
    );
    // A second figure while it stops changes nothing (one stop, one verdict).
    sim.measure("api", Some(2 * GIB), None);
    let terms = sim.signals.iter().filter(|s| s.0 == first).count();
    assert_eq!(terms, 1);
    sim.die_of_stop("api");
    assert_eq!(sim.state("api"), State::Backoff);
    assert_eq!(sim.prog("api").causes.limit, 1);
    assert_eq!(sim.prog("api").causes.exit, 0);
    assert_eq!(sim.prog("api").history.total, 1, "counted in the budget");
    assert_eq!(
        sim.crash_limits(),
        vec![Some("memory 1.21 GiB over 1 GiB".to_string())],
        "a stop for a limit gets a report naming it"
    );
    sim.advance(Duration::from_secs(1));
    assert_eq!(sim.state("api"), State::Running);
    assert!(
        sim.prog("api").over_limit.is_none(),
        "a new run starts clean"
    );
    assert!(sim.prog("api").measured.is_none());
    sim.measure("api", Some(2 * GIB), None);
    sim.die_of_stop("api");
    assert_eq!(sim.state("api"), State::Exhausted);
    assert_eq!(sim.exit, Some(75));
    let message = sim.log.iter().find_map(|a| match a {
        Action::TerminationMessage(m) => Some(m.clone()),
        _ => None,
    });
    let message = message.expect("a termination message");
    assert!(
        message.contains("memory 2 GiB over 1 GiB"),
        "the termination message names the limit and the figure: {message}"
    );
}

#[test]
fn descriptors_past_their_limit_restart_it() {
    let p = with_limits(svc("api", &[]), Some(GIB), Some(100));
    let mut sim = Sim::new(vec![p]);
    sim.measure("api", Some(GIB / 4), Some(100));
    assert_eq!(sim.state("api"), State::Running);
    sim.measure("api", Some(GIB / 4), Some(101));
    assert_eq!(sim.state("api"), State::Stopping);
    assert_eq!(
        sim.prog("api").over_limit.as_deref(),
        Some("fds 101 over 100")
    );
    let line = sim.log.iter().rev().find_map(|a| match a {
        Action::Notice(n) if n.transition.is_some() => Some(n.message.clone()),
        _ => None,
    });
    let line = line.expect("a state line");
    assert!(line.contains("over its limit: fds 101 over 100"), "{line}");
}

#[test]
fn a_late_figure_of_an_old_run_or_of_a_stopped_program_is_ignored() {
    let p = with_limits(svc("api", &[]), Some(GIB), None);
    let mut sim = Sim::new(vec![p]);
    let old = sim.prog("api").run;
    sim.measure_run("api", old + 1, Some(2 * GIB), None);
    assert_eq!(sim.state("api"), State::Running, "not this run's figure");
    let id = sim.idx("api");
    sim.input(Input::Stop(vec![id]));
    assert_eq!(sim.state("api"), State::Stopping);
    sim.measure("api", Some(2 * GIB), None);
    assert!(
        sim.prog("api").over_limit.is_none(),
        "a program stopped on purpose is not restarted for a limit"
    );
}

#[test]
fn a_program_without_limits_ignores_figures() {
    let mut sim = Sim::new(vec![svc("api", &[])]);
    sim.measure("api", Some(u64::MAX), Some(u64::MAX));
    assert_eq!(sim.state("api"), State::Running);
    assert!(sim.prog("api").measured.is_none());
}

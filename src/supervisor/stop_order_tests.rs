//! The way down: drain, then (dependents first) each program's `pre_stop` hook, its stop
//! signal, SIGKILL once its stop time is spent.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::super::core::{Action, Input};
use super::{Sim, svc};
use crate::config::{Condition, Config, InitSettings};
use crate::model::{Exit, State};

fn with_pre_stop(mut p: crate::config::ProgramSpec) -> crate::config::ProgramSpec {
    p.pre_stop = Some(vec!["/bin/deregister".into()]);
    p.pre_stop_timeout = Duration::from_secs(2);
    p.stop_timeout = Duration::from_secs(5);
    p
}

fn draining_sim(drain: Duration) -> Sim {
    let mut programs = vec![
        svc("db", &[]),
        with_pre_stop(svc("api", &[("db", Condition::Started, false)])),
    ];
    programs.sort_by(|a, b| a.name.cmp(&b.name));
    let mut sim = Sim::new(vec![]);
    let config = Config {
        init: InitSettings {
            drain,
            ..InitSettings::default()
        },
        programs,
        warnings: vec![],
    };
    sim.core = super::super::core::Core::new(&config, sim.now);
    sim.input(Input::Boot);
    sim
}

fn hooks(sim: &Sim) -> usize {
    sim.log
        .iter()
        .filter(|a| matches!(a, Action::RunPreStop { .. }))
        .count()
}

#[test]
fn drain_then_pre_stop_then_stop_signal_then_kill() {
    let mut sim = draining_sim(Duration::from_secs(3));
    let (api, db) = (sim.pid("api"), sim.pid("db"));
    sim.input(Input::Shutdown {
        reason: "test".into(),
        signal: None,
    });
    // Draining: nothing stops, the container reports not ready.
    assert_eq!(sim.state("api"), State::Running);
    assert!(sim.core.draining());
    assert!(!crate::supervisor::control::health(&sim.core, false).0);
    assert!(!crate::supervisor::telemetry::probe_answer(&sim.core).ready);
    assert!(sim.signals.is_empty());
    sim.advance(Duration::from_secs(3));
    // api (the dependent) first: its hook, no signal yet; db waits for it.
    assert_eq!(hooks(&sim), 1);
    assert_eq!(sim.state("api"), State::Stopping);
    assert!(sim.signals.is_empty(), "{:?}", sim.signals);
    let id = sim.idx("api");
    sim.input(Input::PreStopSpawned { id, pid: 900 });
    sim.input(Input::Reaped {
        pid: 900,
        exit: Exit::Code(0),
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.signals, vec![(api, Signal::SIGTERM)]);
    // It ignores the signal: SIGKILL 5 s after its stop began (the hook's time included).
    sim.advance(Duration::from_secs(4));
    assert_eq!(sim.signals.len(), 1);
    sim.advance(Duration::from_millis(1100));
    assert_eq!(sim.signals.last(), Some(&(api, Signal::SIGKILL)));
    sim.input(Input::Reaped {
        pid: api,
        exit: Exit::Signal {
            sig: Signal::SIGKILL as i32,
            core_dumped: false,
        },
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.signals.last(), Some(&(db, Signal::SIGTERM)), "then db");
}

#[test]
fn a_hook_that_overruns_is_killed_and_the_stop_goes_on() {
    let mut sim = draining_sim(Duration::ZERO);
    let api = sim.pid("api");
    let id = sim.idx("api");
    sim.input(Input::Stop(vec![id]));
    sim.input(Input::PreStopSpawned { id, pid: 901 });
    sim.advance(Duration::from_secs(2));
    assert_eq!(
        sim.signals,
        vec![(901, Signal::SIGKILL), (api, Signal::SIGTERM)]
    );
}

#[test]
fn a_second_stop_signal_during_the_drain_kills_at_once() {
    let mut sim = draining_sim(Duration::from_secs(3));
    sim.input(Input::Shutdown {
        reason: "test".into(),
        signal: None,
    });
    sim.input(Input::ForceKill);
    assert!(!sim.core.draining());
    assert!(sim.signals.iter().any(|(_, s)| *s == Signal::SIGKILL));
}

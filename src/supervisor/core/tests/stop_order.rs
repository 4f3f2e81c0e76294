//! The way down: drain, then (dependents first) each program's `pre_stop` hook, its stop
//! signal, SIGKILL once its stop time (or the shutdown's budget) is spent; and the container's
//! exit status when its main program ends.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::{OK, Sim, svc};
use crate::config::{Condition, Config, InitSettings};
use crate::model::{Exit, State};
use crate::supervisor::core::{Action, Input};

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
        programs: programs.into_iter().map(std::sync::Arc::new).collect(),
        externals: vec![],
        warnings: vec![],
    };
    sim.core = crate::supervisor::core::Core::new(&config, sim.now);
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

#[test]
fn shutdown_stops_in_reverse_order_and_kills_after_the_stop_timeout() {
    let mut stubborn = svc("api", &[("db", Condition::Ready, false)]);
    stubborn.stop_timeout = Duration::from_secs(2);
    let mut sim = Sim::new(vec![svc("db", &[]), stubborn]);
    let (db, api) = (sim.pid("db"), sim.pid("api"));
    sim.input(Input::Shutdown {
        signal: None,
        reason: "SIGTERM".into(),
    });
    assert_eq!(
        sim.signals,
        vec![(api, Signal::SIGTERM)],
        "dependents first"
    );
    assert_eq!(sim.state("db"), State::Running);
    sim.advance(Duration::from_secs(2));
    assert_eq!(sim.signals.last(), Some(&(api, Signal::SIGKILL)));
    sim.input(Input::Reaped {
        pid: api,
        exit: Exit::Signal {
            sig: 9,
            core_dumped: false,
        },
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.signals.last(), Some(&(db, Signal::SIGTERM)));
    assert_eq!(sim.exit, None);
    sim.input(Input::Reaped {
        pid: db,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.exit, Some(0));
    assert!(
        !sim.log.iter().any(|a| matches!(a, Action::Crashed { .. })),
        "our own signals are no crash"
    );
}

#[test]
fn the_shutdown_budget_cuts_every_stop_short() {
    let mut slow = svc("slow", &[]);
    slow.stop_timeout = Duration::from_secs(60);
    let mut sim = Sim::new(vec![slow]);
    let pid = sim.pid("slow");
    sim.input(Input::Shutdown {
        signal: None,
        reason: "SIGTERM".into(),
    });
    assert_eq!(
        sim.core.next_deadline(),
        Some(sim.now + Duration::from_secs(9))
    );
    sim.advance(Duration::from_secs(9));
    assert_eq!(sim.signals.last(), Some(&(pid, Signal::SIGKILL)));
}

#[test]
fn second_stop_signal_kills_at_once() {
    let mut sim = Sim::new(vec![svc("a", &[])]);
    let pid = sim.pid("a");
    sim.input(Input::Shutdown {
        signal: None,
        reason: "SIGTERM".into(),
    });
    sim.input(Input::ForceKill);
    assert_eq!(sim.signals.last(), Some(&(pid, Signal::SIGKILL)));
    assert_eq!(sim.exit, Some(0));
}

#[test]
fn main_program_status_becomes_the_exit_status() {
    let mut main = svc("main", &[]);
    main.main = true;
    main.restart = crate::config::RestartPolicy::Never;
    let mut sim = Sim::new(vec![main, svc("side", &[])]);
    let side = sim.pid("side");
    sim.exit_main("main", Exit::Code(3));
    assert_eq!(sim.state("main"), State::Exited);
    assert_eq!(sim.signals.last(), Some(&(side, Signal::SIGTERM)));
    sim.input(Input::Reaped {
        pid: side,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.exit, Some(3));
}

#[test]
fn main_killed_by_a_signal_exits_128_plus_signal() {
    let mut main = svc("main", &[]);
    main.main = true;
    main.restart = crate::config::RestartPolicy::Never;
    let mut sim = Sim::new(vec![main]);
    sim.exit_main(
        "main",
        Exit::Signal {
            sig: 9,
            core_dumped: false,
        },
    );
    assert_eq!(sim.exit, Some(137));
}

/// A second `shutdown` (by hand, after the drain, or after a stop that began without one)
/// changes nothing: no second drain, and no program put back up to be left `waiting`.
#[test]
fn a_second_shutdown_neither_drains_again_nor_brings_programs_back() {
    let mut sim = draining_sim(Duration::from_secs(3));
    let shutdown = || Input::Shutdown {
        reason: "test".into(),
        signal: None,
    };
    sim.input(shutdown());
    sim.advance(Duration::from_secs(3));
    assert!(!sim.core.draining());
    let drains = |sim: &Sim| {
        sim.log
            .iter()
            .filter(|a| matches!(a, Action::Notice(n) if n.message.starts_with("draining")))
            .count()
    };
    assert_eq!(drains(&sim), 1);
    sim.input(shutdown());
    assert!(!sim.core.draining(), "a second drain began");
    assert_eq!(drains(&sim), 1, "the drain was said twice");
    // api's hook ends; api stops, then db; nothing is left waiting.
    let (api, db) = (sim.pid("api"), sim.pid("db"));
    let id = sim.idx("api");
    sim.input(Input::PreStopSpawned { id, pid: 900 });
    for pid in [900, api, db] {
        sim.input(Input::Reaped {
            pid,
            exit: Exit::Code(0),
            group_empty: true,
            oom_killed: false,
        });
    }
    assert_eq!(sim.state("api"), State::Stopped);
    assert_eq!(sim.state("db"), State::Stopped);

    // A stop that began without a drain (the main program ended, say) takes none later.
    let mut sim = draining_sim(Duration::from_secs(3));
    sim.input(Input::ForceKill);
    sim.input(shutdown());
    assert!(!sim.core.draining(), "a drain began during a forced stop");
}

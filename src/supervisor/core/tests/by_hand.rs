//! Stopping, starting and restarting by hand: dependents go first and come back after, nothing
//! restarts on its own meanwhile, and a reload does not cancel a restart under way.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::{OK, Sim, svc, with_ready};
use crate::config::{Condition, Config, InitSettings};
use crate::model::{Exit, State};
use crate::supervisor::core::Input;

#[test]
fn stop_by_hand_stops_dependents_first_and_nothing_restarts() {
    let mut sim = Sim::new(vec![
        svc("db", &[]),
        svc("api", &[("db", Condition::Ready, false)]),
    ]);
    let (db, api) = (sim.pid("db"), sim.pid("api"));
    sim.input(Input::Stop(vec![sim.idx("db")]));
    assert_eq!(sim.signals, vec![(api, Signal::SIGTERM)]);
    sim.input(Input::Reaped {
        pid: api,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.signals.last(), Some(&(db, Signal::SIGTERM)));
    sim.input(Input::Reaped {
        pid: db,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("db"), State::Stopped);
    assert_eq!(sim.state("api"), State::Stopped);
    sim.advance(Duration::from_secs(60));
    assert_eq!(sim.spawned.len(), 2, "a stopped program is not restarted");
    assert_eq!(sim.core.programs()[0].history.total, 0);
    // Starting api pulls db in first.
    sim.input(Input::Start(vec![sim.idx("api")]));
    assert_eq!(sim.spawned, vec!["db", "api", "db", "api"]);
    assert_eq!(sim.state("api"), State::Running);
}

#[test]
fn restart_by_hand_brings_the_set_back_in_order() {
    let mut sim = Sim::new(vec![
        with_ready(svc("db", &[])),
        svc("api", &[("db", Condition::Ready, false)]),
    ]);
    sim.ready("db");
    let (db, api) = (sim.pid("db"), sim.pid("api"));
    sim.input(Input::Restart(vec![sim.idx("db")]));
    assert_eq!(sim.signals, vec![(api, Signal::SIGTERM)]);
    sim.input(Input::Reaped {
        pid: api,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    sim.input(Input::Reaped {
        pid: db,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("db"), State::Starting);
    assert_eq!(sim.state("api"), State::Waiting);
    sim.ready("db");
    assert_eq!(sim.state("api"), State::Running);
    assert_eq!(sim.prog("db").history.total, 0);
}

#[test]
fn a_reload_does_not_cancel_a_restart_by_hand_under_way() {
    let mut sim = Sim::new(vec![svc("stubborn", &[]), svc("other", &[])]);
    let pid = sim.pid("stubborn");
    sim.input(Input::Restart(vec![sim.idx("stubborn")]));
    assert_eq!(sim.state("stubborn"), State::Stopping);
    // An unchanged reload is applied at once, while the restart still waits for the stop.
    let config = Config {
        init: InitSettings::default(),
        programs: sim
            .core
            .programs()
            .iter()
            .map(|p| std::sync::Arc::new(p.spec.as_ref().clone()))
            .collect(),
        externals: vec![],
        warnings: vec![],
    };
    sim.input(Input::Reload(Box::new(config)));
    assert!(!sim.core.reload_pending());
    sim.input(Input::Reaped {
        pid,
        exit: Exit::Signal {
            sig: 15,
            core_dumped: false,
        },
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(
        sim.state("stubborn"),
        State::Running,
        "the restart must complete"
    );
    assert_ne!(sim.pid("stubborn"), pid);
}

#[test]
fn a_start_brings_back_the_dependents_its_stop_took_and_no_others() {
    let mut sim = Sim::new(vec![
        svc("db", &[]),
        svc("api", &[("db", Condition::Started, false)]),
        svc("worker", &[("api", Condition::Started, false)]),
        svc("parked", &[("db", Condition::Started, false)]),
    ]);
    let parked = sim.pid("parked");
    // `parked` is stopped by hand on its own first: the stop of db must not make it come back.
    sim.input(Input::Stop(vec![sim.idx("parked")]));
    sim.input(Input::Reaped {
        pid: parked,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    let (db, api, worker) = (sim.pid("db"), sim.pid("api"), sim.pid("worker"));
    sim.input(Input::Stop(vec![sim.idx("db")]));
    for pid in [worker, api, db] {
        sim.input(Input::Reaped {
            pid,
            exit: OK,
            group_empty: true,
            oom_killed: false,
        });
    }
    for name in ["db", "api", "worker", "parked"] {
        assert_eq!(sim.state(name), State::Stopped, "{name}");
    }
    let db_id = sim.idx("db");
    let back: Vec<String> = sim
        .core
        .brought_back_with(&[db_id])
        .into_iter()
        .map(|id| sim.core.program(id).unwrap().name().to_string())
        .collect();
    assert_eq!(back, vec!["api", "worker"]);
    sim.input(Input::Start(vec![db_id]));
    assert_eq!(sim.state("db"), State::Running);
    assert_eq!(sim.state("api"), State::Running);
    assert_eq!(sim.state("worker"), State::Running);
    assert_eq!(
        sim.state("parked"),
        State::Stopped,
        "stopped by its own stop"
    );
    // Once back, a later start of db brings nothing more.
    assert!(sim.core.brought_back_with(&[db_id]).is_empty());
}

//! `after`: ordering only. A program starts once what it is ordered after has started (or is
//! down, or will not come up), stops before it on the way down, and is neither stopped nor
//! restarted with it, nor held when it is down.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::{FAIL, OK, Sim, svc, with_ready};
use crate::config::{Condition, ProgramSpec};
use crate::model::State;
use crate::supervisor::core::Input;

fn after(mut p: ProgramSpec, on: &[&str]) -> ProgramSpec {
    p.after = on.iter().map(|s| s.to_string()).collect();
    p
}

#[test]
fn starts_once_what_it_follows_has_started_not_once_ready() {
    // redis waits for db; worker is ordered after redis (and its name sorts first).
    let mut sim = Sim::new(vec![
        with_ready(svc("db", &[])),
        with_ready(svc("redis", &[("db", Condition::Ready, false)])),
        after(svc("aworker", &[]), &["redis"]),
    ]);
    assert_eq!(sim.spawned, vec!["db"]);
    assert_eq!(sim.state("aworker"), State::Waiting);
    sim.ready("db");
    // redis started (not ready yet): that is enough.
    assert_eq!(sim.state("redis"), State::Starting);
    assert_eq!(sim.spawned, vec!["db", "redis", "aworker"]);
}

#[test]
fn what_is_down_or_never_comes_up_does_not_hold_it() {
    let mut off = svc("redis", &[]);
    off.autostart = false;
    let sim = Sim::new(vec![off, after(svc("worker", &[]), &["redis"])]);
    assert_eq!(sim.state("redis"), State::Stopped);
    assert_eq!(sim.state("worker"), State::Running);
    // redis held for good by a dependency that is stopped: not waited for either.
    let mut db = svc("db", &[]);
    db.autostart = false;
    let sim = Sim::new(vec![
        db,
        svc("redis", &[("db", Condition::Ready, false)]),
        after(svc("worker", &[]), &["redis"]),
    ]);
    assert_eq!(sim.state("redis"), State::Waiting);
    assert_eq!(sim.state("worker"), State::Running);
}

#[test]
fn no_stop_or_restart_goes_along_and_an_exhausted_one_holds_nothing() {
    let mut redis = svc("redis", &[]);
    redis.max_restarts = 0;
    redis.on_exhausted = crate::config::OnExhausted::Stop;
    let mut sim = Sim::new(vec![redis, after(svc("worker", &[]), &["redis"])]);
    let worker = sim.pid("worker");
    // A restart by hand of redis takes nothing along.
    sim.input(Input::Restart(vec![sim.idx("redis")]));
    let redis = sim.pid("redis");
    assert!(
        !sim.signals.iter().any(|&(p, _)| p == worker),
        "{:?}",
        sim.signals
    );
    sim.input(Input::Reaped {
        pid: redis,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("redis"), State::Running);
    // Stopping worker by hand leaves redis alone, and the other way round.
    sim.input(Input::Stop(vec![sim.idx("redis")]));
    assert_eq!(
        sim.signals.last(),
        Some(&(sim.pid("redis"), Signal::SIGTERM))
    );
    assert_eq!(sim.state("worker"), State::Running);
    let redis = sim.pid("redis");
    sim.input(Input::Reaped {
        pid: redis,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("redis"), State::Stopped);
    assert_eq!(sim.pid("worker"), worker);
    // Started again, it fails for good: worker, restarted, starts regardless.
    sim.input(Input::Start(vec![sim.idx("redis")]));
    sim.exit_main("redis", FAIL);
    assert_eq!(sim.state("redis"), State::Stopped);
    sim.exit_main("worker", FAIL);
    sim.advance(Duration::from_millis(100));
    assert_eq!(sim.state("worker"), State::Running);
}

#[test]
fn on_the_way_down_it_stops_before_what_it_follows() {
    let mut sim = Sim::new(vec![
        svc("redis", &[]),
        after(svc("worker", &[]), &["redis"]),
    ]);
    let (redis, worker) = (sim.pid("redis"), sim.pid("worker"));
    sim.input(Input::Shutdown {
        reason: "test".into(),
        signal: None,
    });
    assert_eq!(sim.signals, vec![(worker, Signal::SIGTERM)]);
    sim.input(Input::Reaped {
        pid: worker,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.signals.last(), Some(&(redis, Signal::SIGTERM)));
}

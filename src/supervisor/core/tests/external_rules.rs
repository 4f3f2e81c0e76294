//! External dependencies in the core: dependents wait with the last check's reason, start once
//! `successes` checks passed, restart (dependents first, no budget spent) when it goes down
//! after `failures`, only with `restart = true`; a peer's new run restarts them too;
//! `start_timeout` with `on_timeout = "exit"` ends the container with `[init] exit_code`.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::{Sim, svc};
use crate::config::{
    Condition, Config, ExternalCheck, ExternalSpec, HostPort, InitSettings, OnTimeout,
};
use crate::model::{Exit, State};
use crate::supervisor::core::{Core, Input};

fn db(start_timeout: Option<Duration>) -> ExternalSpec {
    ExternalSpec {
        name: "db".into(),
        check: ExternalCheck::Tcp(HostPort {
            host: "db".into(),
            port: 5432,
        }),
        interval: Duration::from_secs(2),
        timeout: Duration::from_secs(1),
        failures: 2,
        successes: 2,
        start_timeout,
        on_timeout: OnTimeout::Exit,
        defined_at: "a.toml:1".into(),
    }
}

fn sim_with_db(start_timeout: Option<Duration>) -> Sim {
    let mut sim = Sim::new(vec![]);
    let config = Config {
        init: InitSettings::default(),
        programs: vec![
            svc("app", &[("db", Condition::Ready, true)]).into(),
            svc("other", &[("db", Condition::Ready, false)]).into(),
            svc("web", &[("app", Condition::Ready, true)]).into(),
        ],
        externals: vec![db(start_timeout)],
        warnings: vec![],
    };
    sim.core = Core::new(&config, sim.now);
    sim.input(Input::Boot);
    sim
}

fn check(sim: &mut Sim, passed: bool, output: &str, peer_run: Option<&str>) {
    sim.input(Input::ExternalChecked {
        name: "db".into(),
        passed,
        output: output.into(),
        peer_run: peer_run.map(String::from),
    });
}

#[test]
fn dependents_wait_with_the_last_reason_and_start_after_successes() {
    let mut sim = sim_with_db(None);
    assert_eq!(sim.state("app"), State::Waiting);
    assert_eq!(
        sim.prog("app").waiting_why.as_deref(),
        Some("db: not checked yet")
    );
    check(&mut sim, false, "connection refused", None);
    assert_eq!(
        sim.prog("app").waiting_why.as_deref(),
        Some("db: tcp db:5432: connection refused")
    );
    check(&mut sim, true, "connected", None);
    assert_eq!(sim.state("app"), State::Waiting, "one pass of two");
    check(&mut sim, true, "connected", None);
    for name in ["app", "other", "web"] {
        assert_eq!(sim.state(name), State::Running, "{name}");
    }
    assert_eq!(sim.core.externals()[0].state.as_str(), "ready");
    assert_eq!(
        sim.core.next_deadline(),
        None,
        "no timer without start_timeout"
    );
}

#[test]
fn down_restarts_only_restart_dependents_in_reverse_order_without_spending_budgets() {
    let mut sim = sim_with_db(None);
    check(&mut sim, true, "connected", None);
    check(&mut sim, true, "connected", None);
    let (app, web, other) = (sim.pid("app"), sim.pid("web"), sim.pid("other"));
    check(&mut sim, false, "connection refused", None);
    assert!(sim.signals.is_empty(), "one failure of two");
    check(&mut sim, false, "connection refused", None);
    // web lives in app, which lives in db: web first; other has no restart = true.
    assert_eq!(sim.signals, vec![(web, Signal::SIGTERM)]);
    let term = Exit::Signal {
        sig: Signal::SIGTERM as i32,
        core_dumped: false,
    };
    for pid in [web, app] {
        sim.input(Input::Reaped {
            pid,
            exit: term,
            group_empty: true,
            oom_killed: false,
        });
    }
    assert_eq!(
        sim.signals,
        vec![(web, Signal::SIGTERM), (app, Signal::SIGTERM)]
    );
    assert_eq!(sim.state("app"), State::Waiting);
    assert_eq!(sim.state("web"), State::Waiting);
    assert_eq!(sim.pid("other"), other, "other kept running");
    check(&mut sim, true, "connected", None);
    check(&mut sim, true, "connected", None);
    let starts: Vec<&str> = sim.spawned.iter().skip(3).map(String::as_str).collect();
    assert_eq!(starts, ["app", "web"]);
    for name in ["app", "web"] {
        let p = sim.prog(name);
        assert_eq!((p.causes.dependency, p.history.total), (1, 0), "{name}");
    }
    assert!(
        sim.log.iter().any(|a| format!("{a:?}")
            .contains("app: running -> stopping: restarting because external db ended")),
        "the log names the external"
    );
}

#[test]
fn a_peers_new_run_restarts_the_dependents_while_it_stays_ready() {
    let mut sim = sim_with_db(None);
    check(&mut sim, true, "api is running (run 1)", Some("boot/1"));
    check(&mut sim, true, "api is running (run 1)", Some("boot/1"));
    let web = sim.pid("web");
    check(&mut sim, true, "api is running (run 1)", Some("boot/1"));
    assert!(sim.signals.is_empty());
    check(&mut sim, true, "api is running (run 2)", Some("boot/2"));
    assert_eq!(sim.signals, vec![(web, Signal::SIGTERM)]);
}

#[test]
fn start_timeout_with_exit_ends_the_container_with_exit_code() {
    let mut sim = sim_with_db(Some(Duration::from_secs(30)));
    let due = sim.core.next_deadline().expect("the start timeout");
    assert_eq!(due, sim.now + Duration::from_secs(30));
    sim.advance(Duration::from_secs(31));
    assert_eq!(sim.exit, Some(75));
}

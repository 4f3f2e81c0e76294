//! `ready = { uptime }` (supervisord's `startsecs`): a run that ends while `starting` failed to
//! start, whatever its exit, so `restart = "on-failure"` restarts it and the budget counts it;
//! other readiness kinds keep their meaning (an exit 0 while starting is a success).

use std::time::Duration;

use super::{FAIL, OK, Sim, svc, with_ready};
use crate::config::{Condition, OnExhausted, ReadyCheck, ReadyProbe, RestartPolicy};
use crate::model::State;
use crate::supervisor::core::Action;

/// `api` (on-failure, ready after 5s up, budget 2) and `web`, which waits for it to be ready.
fn startsecs_pair() -> Sim {
    let mut api = svc("api", &[]);
    api.restart = RestartPolicy::OnFailure;
    api.ready = Some(ReadyCheck {
        probe: ReadyProbe::Uptime(Duration::from_secs(5)),
        interval: Duration::from_millis(100),
    });
    api.max_restarts = 2;
    api.on_exhausted = OnExhausted::Stop;
    Sim::new(vec![api, svc("web", &[("api", Condition::Ready, false)])])
}

fn said(sim: &Sim, text: &str) -> bool {
    sim.log
        .iter()
        .any(|a| matches!(a, Action::Notice(n) if n.message.contains(text)))
}

#[test]
fn an_exit_0_before_the_uptime_is_a_failed_start_that_the_budget_counts() {
    let mut sim = startsecs_pair();
    assert_eq!(sim.state("api"), State::Starting);
    sim.advance(Duration::from_secs(1));
    sim.exit_main("api", OK);
    assert_eq!(sim.state("api"), State::Backoff, "on-failure restarts it");
    assert!(
        said(&sim, "exit status 0 after 1s, before its uptime of 5s"),
        "{:?}",
        sim.log
    );
    assert_eq!(sim.prog("api").causes.exit, 1);
    assert_eq!(sim.prog("api").causes.readiness, 0);
    // Two more quick exits (a failure among them) spend the budget of 2: three runs.
    for exit in [FAIL, OK] {
        sim.advance(Duration::from_secs(1));
        assert_eq!(sim.state("api"), State::Starting);
        sim.exit_main("api", exit);
    }
    assert_eq!(
        sim.state("api"),
        State::Stopped,
        "exhausted, on_exhausted = stop"
    );
    assert_eq!(sim.state("web"), State::Waiting, "api was never ready");
}

#[test]
fn once_up_for_the_uptime_it_is_ready_and_an_exit_0_is_a_success_again() {
    let mut sim = startsecs_pair();
    sim.advance(Duration::from_secs(5));
    // The probe task reports the run ready once it has stayed up.
    sim.ready("api");
    assert_eq!(sim.state("api"), State::Running);
    assert_eq!(sim.state("web"), State::Running);
    sim.exit_main("api", OK);
    assert_eq!(
        sim.state("api"),
        State::Exited,
        "exited 0 after ready: not restarted"
    );
}

#[test]
fn other_checks_keep_an_exit_0_while_starting_a_success() {
    let mut api = with_ready(svc("api", &[]));
    api.restart = RestartPolicy::OnFailure;
    let mut sim = Sim::new(vec![api]);
    assert_eq!(sim.state("api"), State::Starting);
    sim.exit_main("api", OK);
    assert_eq!(sim.state("api"), State::Exited);
}

//! Restart propagation: what lives in a program (`restart = true`, directly or through another)
//! stops dependents first when it ends, and comes back after it.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::{FAIL, Sim, svc};
use crate::config::Condition;
use crate::model::State;
use crate::supervisor::core::Input;

fn holder_with_two_inside() -> Sim {
    Sim::new(vec![
        svc("holder", &[]),
        svc("rib", &[("holder", Condition::Started, true)]),
        svc(
            "xmpp",
            &[
                ("holder", Condition::Started, true),
                ("rib", Condition::Started, false),
            ],
        ),
        svc("agent", &[("xmpp", Condition::Started, true)]),
    ])
}

#[test]
fn dependents_stop_first_and_everything_comes_back_after_the_holder() {
    let mut sim = holder_with_two_inside();
    let (rib, xmpp, agent) = (sim.pid("rib"), sim.pid("xmpp"), sim.pid("agent"));
    sim.exit_main("holder", FAIL);
    // agent (lives in xmpp, which lives in holder) goes first; rib waits for xmpp.
    assert_eq!(sim.signals, vec![(agent, Signal::SIGTERM)]);
    assert_eq!(sim.state("rib"), State::Running);
    for (pid, next) in [(agent, xmpp), (xmpp, rib)] {
        sim.input(Input::Reaped {
            pid,
            exit: crate::model::Exit::Signal {
                sig: Signal::SIGTERM as i32,
                core_dumped: false,
            },
            group_empty: true,
            oom_killed: false,
        });
        assert_eq!(
            sim.signals.last(),
            Some(&(next, Signal::SIGTERM)),
            "{:?}",
            sim.signals
        );
    }
    sim.input(Input::Reaped {
        pid: rib,
        exit: crate::model::Exit::Signal {
            sig: Signal::SIGTERM as i32,
            core_dumped: false,
        },
        group_empty: true,
        oom_killed: false,
    });
    // All down: they wait for the holder, which comes back after its backoff.
    for name in ["rib", "xmpp", "agent"] {
        assert_eq!(sim.state(name), State::Waiting, "{name}");
    }
    sim.advance(Duration::from_millis(200));
    for name in ["holder", "rib", "xmpp", "agent"] {
        assert_eq!(sim.state(name), State::Running, "{name}");
    }
    let starts: Vec<&str> = sim.spawned.iter().skip(4).map(String::as_str).collect();
    assert_eq!(starts, ["holder", "rib", "xmpp", "agent"]);
    for name in ["rib", "xmpp", "agent"] {
        let p = sim.prog(name);
        assert_eq!(
            (p.causes.dependency, p.history.total),
            (1, 0),
            "{name}: forced, not counted"
        );
    }
}

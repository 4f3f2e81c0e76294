//! The core's liveness rules: checks and the watchdog feed the restart policy and budget;
//! sd_notify messages move readiness, the main process and deadlines.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::{FAIL, Sim, svc};
use crate::config::{
    Condition, HealthProbe, HealthSettings, OnHealthFailure, ProgramSpec, ReadyCheck, ReadyProbe,
};
use crate::model::{Exit, State};
use crate::supervisor::core::health::CheckResult;
use crate::supervisor::core::notify_message::NotifyMessage;
use crate::supervisor::core::{Action, Input};

fn with_health(mut p: ProgramSpec, failures: u32, on_failure: OnHealthFailure) -> ProgramSpec {
    p.health = Some(HealthSettings {
        check: Some(HealthProbe::Tcp("127.0.0.1:9".parse().unwrap())),
        interval: Duration::from_secs(1),
        timeout: Duration::from_millis(500),
        failures,
        successes: 2,
        start_period: Duration::ZERO,
        on_failure,
        watchdog: None,
    });
    p
}

fn result(passed: bool) -> CheckResult {
    CheckResult {
        passed,
        output: if passed {
            "connected"
        } else {
            "cannot connect: connection refused"
        }
        .into(),
        took: Duration::from_millis(1),
    }
}

impl Sim {
    fn check(&mut self, name: &str, passed: bool) {
        let id = self.idx(name);
        let run = self.prog(name).run;
        self.input(Input::Checked {
            id,
            run,
            result: result(passed),
        });
    }

    fn notify(&mut self, name: &str, datagram: &[u8], main_pgid: Option<i32>) {
        let id = self.idx(name);
        self.input(Input::Notified {
            id,
            message: NotifyMessage::parse(datagram),
            main_pgid,
        });
    }

    fn health_of(&self, name: &str) -> String {
        self.prog(name)
            .health
            .as_ref()
            .map_or("-".into(), |h| h.status.to_string())
    }

    /// Plays the stop the core asked for: the group's leader dies of the signal.
    fn die_of_signal(&mut self, name: &str) {
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
}

#[test]
fn failing_checks_restart_through_the_budget_to_the_container_exit() {
    let mut p = with_health(svc("api", &[]), 3, OnHealthFailure::Restart);
    p.max_restarts = 1;
    let mut sim = Sim::new(vec![p]);
    assert!(sim.log.iter().any(|a| matches!(a, Action::Watch { .. })));
    let first = sim.pid("api");
    sim.check("api", false);
    sim.check("api", false);
    assert_eq!(sim.health_of("api"), "unhealthy 2/3");
    assert_eq!(
        sim.state("api"),
        State::Running,
        "below the threshold nothing acts"
    );
    sim.check("api", false);
    assert_eq!(sim.state("api"), State::Stopping);
    assert!(sim.signals.contains(&(first, Signal::SIGTERM)));
    sim.die_of_signal("api");
    // The stop ctrlinit sent is no crash, and the run counts as failed: a restart by policy.
    assert_eq!(sim.state("api"), State::Backoff);
    assert_eq!(sim.prog("api").causes.health, 1);
    assert_eq!(sim.prog("api").history.total, 1);
    assert!(!sim.log.iter().any(|a| matches!(a, Action::Crashed { .. })));
    sim.advance(Duration::from_secs(1));
    assert_eq!(sim.state("api"), State::Running);
    assert_eq!(sim.health_of("api"), "starting", "a new run starts over");
    for _ in 0..3 {
        sim.check("api", false);
    }
    sim.die_of_signal("api");
    assert_eq!(sim.state("api"), State::Exhausted);
    assert_eq!(sim.exit, Some(75));
    let message = sim.log.iter().find_map(|a| match a {
        Action::TerminationMessage(m) => Some(m.clone()),
        _ => None,
    });
    let message = message.expect("a termination message");
    assert!(
        message.contains("unhealthy")
            && message.contains("tcp 127.0.0.1:9: cannot connect: connection refused"),
        "the termination message names the check and its last output: {message}"
    );
}

#[test]
fn a_late_result_of_an_earlier_run_is_ignored() {
    let mut sim = Sim::new(vec![with_health(
        svc("api", &[]),
        1,
        OnHealthFailure::Restart,
    )]);
    let id = sim.idx("api");
    let old_run = sim.prog("api").run;
    sim.exit_main("api", FAIL);
    sim.advance(Duration::from_secs(1));
    assert_eq!(sim.state("api"), State::Running);
    sim.input(Input::Checked {
        id,
        run: old_run,
        result: result(false),
    });
    assert_eq!(sim.state("api"), State::Running);
    assert_eq!(sim.health_of("api"), "starting");
}

#[test]
fn mark_only_reports_and_recovers_after_its_successes() {
    let mut sim = Sim::new(vec![with_health(svc("api", &[]), 1, OnHealthFailure::Mark)]);
    sim.check("api", false);
    assert_eq!(sim.health_of("api"), "unhealthy");
    assert_eq!(sim.state("api"), State::Running, "mark never stops it");
    assert!(sim.signals.is_empty());
    assert!(sim.prog("api").is_unhealthy());
    let (healthy, problems) = crate::supervisor::control::health(&sim.core, false);
    assert!(!healthy);
    assert!(problems[0].contains("api is unhealthy"), "{problems:?}");
    sim.check("api", true);
    assert_eq!(sim.health_of("api"), "unhealthy", "successes = 2");
    sim.check("api", true);
    assert_eq!(sim.health_of("api"), "healthy");
    assert!(crate::supervisor::control::health(&sim.core, false).0);
    let told: Vec<String> = sim
        .log
        .iter()
        .filter_map(|a| match a {
            Action::Notice(n) => n.health.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(
        told,
        vec!["unhealthy", "healthy"],
        "events carry each change once"
    );
}

#[test]
fn an_unhealthy_restart_restarts_the_dependents_that_live_inside_it() {
    let mut sim = Sim::new(vec![
        with_health(svc("holder", &[]), 1, OnHealthFailure::Restart),
        svc("inner", &[("holder", Condition::Started, true)]),
    ]);
    let inner = sim.pid("inner");
    sim.check("holder", false);
    sim.die_of_signal("holder");
    assert!(
        sim.signals.contains(&(inner, Signal::SIGTERM)),
        "dependent stopped"
    );
    assert_eq!(sim.prog("inner").causes.dependency, 1);
}

#[test]
fn a_missed_watchdog_acts_at_once_and_pings_keep_it_away() {
    let mut p = svc("daemon", &[]);
    p.health = Some(HealthSettings {
        watchdog: Some(Duration::from_secs(10)),
        ..HealthSettings::default()
    });
    let mut sim = Sim::new(vec![p]);
    assert!(
        !sim.log.iter().any(|a| matches!(a, Action::Watch { .. })),
        "no check to run"
    );
    for _ in 0..3 {
        sim.advance(Duration::from_secs(6));
        sim.notify("daemon", b"WATCHDOG=1", None);
    }
    assert_eq!(sim.state("daemon"), State::Running);
    assert!(
        sim.core.next_deadline().is_some(),
        "the watchdog is a deadline"
    );
    sim.advance(Duration::from_secs(11));
    assert_eq!(sim.state("daemon"), State::Stopping);
    assert!(
        sim.prog("daemon")
            .unhealthy
            .as_deref()
            .unwrap()
            .contains("no WATCHDOG=1 within 10s")
    );
}

#[test]
fn sd_notify_readiness_status_main_pid_and_extended_deadlines() {
    let mut p = svc("redis", &[]);
    p.ready = Some(ReadyCheck {
        probe: ReadyProbe::Notify,
        interval: Duration::from_millis(100),
    });
    p.ready_timeout = Duration::from_secs(5);
    let mut sim = Sim::new(vec![p, svc("web", &[("redis", Condition::Ready, false)])]);
    assert_eq!(sim.state("redis"), State::Starting);
    sim.notify(
        "redis",
        b"STATUS=loading the dataset\nEXTEND_TIMEOUT_USEC=10000000",
        None,
    );
    assert_eq!(
        sim.prog("redis").notified.status.as_deref(),
        Some("loading the dataset")
    );
    sim.advance(Duration::from_secs(6));
    assert_eq!(
        sim.state("redis"),
        State::Starting,
        "the deadline was extended"
    );
    let launcher = sim.pid("redis");
    sim.notify("redis", b"MAINPID=4242", Some(4242));
    assert_eq!(sim.pid("redis"), 4242);
    sim.notify(
        "redis",
        b"READY=1\nSTATUS=Ready to accept connections",
        None,
    );
    assert_eq!(sim.state("redis"), State::Running);
    assert_eq!(sim.state("web"), State::Running, "its dependent starts");
    // The launcher's exit is no longer the run's end; the new main process's is.
    sim.input(Input::Reaped {
        pid: launcher,
        exit: Exit::Code(0),
        group_empty: false,
        oom_killed: false,
    });
    assert_eq!(sim.state("redis"), State::Running);
    sim.input(Input::Reaped {
        pid: 4242,
        exit: FAIL,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("redis"), State::Backoff);
}

#[test]
fn sd_notify_ready_counts_only_for_a_program_that_waits_for_it() {
    let mut sim = Sim::new(vec![super::with_ready(svc("api", &[]))]);
    sim.notify("api", b"READY=1", None);
    assert_eq!(
        sim.state("api"),
        State::Starting,
        "its readiness is a file, not sd_notify"
    );
}

#[test]
fn extend_timeout_during_a_pre_stop_hook_moves_the_hook_and_kill_deadlines() {
    let mut p = svc("api", &[]);
    p.pre_stop = Some(vec!["/bin/deregister".into()]);
    p.pre_stop_timeout = Duration::from_secs(2);
    p.stop_timeout = Duration::from_secs(5);
    let mut sim = Sim::new(vec![p]);
    let (api, id) = (sim.pid("api"), sim.idx("api"));
    sim.input(Input::Stop(vec![id]));
    sim.input(Input::PreStopSpawned { id, pid: 900 });
    sim.advance(Duration::from_secs(1));
    // While its hook runs, the program asks for 10 s more: until 11 s into the stop.
    sim.notify("api", b"EXTEND_TIMEOUT_USEC=10000000", None);
    sim.advance(Duration::from_millis(5500));
    assert!(
        sim.signals.is_empty(),
        "past pre_stop_timeout and stop_timeout, the hook still runs: {:?}",
        sim.signals
    );
    assert_eq!(sim.state("api"), State::Stopping);
    sim.input(Input::Reaped {
        pid: 900,
        exit: Exit::Code(0),
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.signals, vec![(api, Signal::SIGTERM)]);
    sim.advance(Duration::from_secs(4));
    assert_eq!(
        sim.signals.len(),
        1,
        "no SIGKILL before 11 s: {:?}",
        sim.signals
    );
    sim.advance(Duration::from_millis(600));
    assert_eq!(sim.signals.last(), Some(&(api, Signal::SIGKILL)));
}

#[test]
fn extend_timeout_during_a_pre_stop_hook_stays_within_the_containers_budget() {
    let mut p = svc("api", &[]);
    p.pre_stop = Some(vec!["/bin/deregister".into()]);
    p.pre_stop_timeout = Duration::from_secs(2);
    p.stop_timeout = Duration::from_secs(5);
    let mut sim = Sim::new(vec![p]);
    let (api, id) = (sim.pid("api"), sim.idx("api"));
    // The container's budget is 9 s (the default stop_timeout of [init]).
    sim.input(Input::Shutdown {
        reason: "test".into(),
        signal: None,
    });
    sim.input(Input::PreStopSpawned { id, pid: 900 });
    sim.notify("api", b"EXTEND_TIMEOUT_USEC=60000000", None);
    sim.advance(Duration::from_secs(8));
    assert!(sim.signals.is_empty(), "{:?}", sim.signals);
    sim.advance(Duration::from_millis(1100));
    assert!(
        sim.signals.contains(&(900, Signal::SIGKILL))
            && sim.signals.contains(&(api, Signal::SIGKILL)),
        "the budget's end still kills the hook and the program: {:?}",
        sim.signals
    );
}

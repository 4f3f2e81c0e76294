//! Unit tests of the pure core: a small simulator plays the shell (spawns get fake pids, signals
//! are recorded) and each test drives time by hand.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::program::Program;
use super::{Action, Core, Input};
use crate::config::{
    Backoff, Condition, Config, Dependency, InitSettings, Kind, OnExhausted, ProgramSpec,
    ReadyCheck, ReadyProbe,
};
use crate::model::Exit;
use crate::model::{ProgramId, State};

struct Sim {
    core: Core,
    now: Instant,
    next_pid: i32,
    /// Every action, in order.
    log: Vec<Action>,
    /// Spawn order by name.
    spawned: Vec<String>,
    signals: Vec<(i32, Signal)>,
    exit: Option<i32>,
    /// The last announced state of each program, to check every announced change starts there.
    shown: std::collections::HashMap<String, State>,
    /// Programs whose spawns fail as a missing executable does.
    failing: Vec<String>,
}

fn svc(name: &str, deps: &[(&str, Condition, bool)]) -> ProgramSpec {
    let mut p = ProgramSpec::new(name, vec![format!("/bin/{name}")], Kind::Service);
    p.depends_on = deps
        .iter()
        .map(|(d, c, r)| Dependency {
            name: d.to_string(),
            condition: *c,
            restart: *r,
        })
        .collect();
    p.backoff = Backoff {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(1),
        factor: 2.0,
    };
    p
}

fn oneshot(name: &str) -> ProgramSpec {
    let mut p = svc(name, &[]);
    p.kind = Kind::Oneshot;
    p.restart = crate::config::RestartPolicy::OnFailure;
    p
}

fn with_ready(mut p: ProgramSpec) -> ProgramSpec {
    p.ready = Some(ReadyCheck {
        probe: ReadyProbe::File("/run/x".into()),
        interval: Duration::from_millis(100),
    });
    p.ready_timeout = Duration::from_secs(5);
    p
}

impl Sim {
    fn new(mut programs: Vec<ProgramSpec>) -> Self {
        programs.sort_by(|a, b| a.name.cmp(&b.name));
        let config = Config {
            init: InitSettings::default(),
            programs: programs.into_iter().map(std::sync::Arc::new).collect(),
            externals: vec![],
            warnings: vec![],
        };
        let now = Instant::now();
        let mut sim = Sim {
            core: Core::new(&config, now),
            now,
            next_pid: 100,
            log: vec![],
            spawned: vec![],
            signals: vec![],
            exit: None,
            shown: Default::default(),
            failing: vec![],
        };
        sim.input(Input::Boot);
        sim
    }

    /// A simulator in which spawning any of `failing` fails with exit status 127.
    fn with_failing_spawns(programs: Vec<ProgramSpec>, failing: &[&str]) -> Self {
        let mut sim = Sim::new(vec![]);
        sim.failing = failing.iter().map(|s| s.to_string()).collect();
        let mut programs = programs;
        programs.sort_by(|a, b| a.name.cmp(&b.name));
        let config = Config {
            init: InitSettings::default(),
            programs: programs.into_iter().map(std::sync::Arc::new).collect(),
            externals: vec![],
            warnings: vec![],
        };
        sim.core = Core::new(&config, sim.now);
        sim.input(Input::Boot);
        sim
    }

    fn idx(&self, name: &str) -> ProgramId {
        self.core.id_of(name).unwrap()
    }

    fn prog(&self, name: &str) -> &Program {
        self.core.program(self.idx(name)).unwrap()
    }

    fn state(&self, name: &str) -> State {
        self.prog(name).state()
    }

    fn pid(&self, name: &str) -> i32 {
        self.prog(name).phase.pid().expect("no pid")
    }

    /// Feeds an input and plays the shell: spawns succeed at once, and groups whose leader is
    /// gone are empty unless `lingering` holds them.
    fn input(&mut self, input: Input) {
        self.input_with(input, &[]);
    }

    fn input_with(&mut self, input: Input, lingering: &[i32]) {
        let mut queue = vec![input];
        while let Some(mut input) = queue.pop() {
            // Whatever the test wrote, a reaped leader's group is empty unless it lingers.
            if let Input::Reaped {
                pid, group_empty, ..
            } = &mut input
            {
                *group_empty = !lingering.contains(pid);
            }
            for a in self.core.handle(input, self.now) {
                match &a {
                    Action::Spawn { id } => {
                        self.next_pid += 1;
                        let name = self.core.program(*id).unwrap().name().to_string();
                        let spawned = if self.failing.contains(&name) {
                            Input::SpawnFailed {
                                id: *id,
                                exit: Exit::Code(127),
                                error: "cannot execute \"/bin/ghost\": No such file or directory"
                                    .into(),
                                exec_failed: true,
                            }
                        } else {
                            Input::Spawned {
                                id: *id,
                                pid: self.next_pid,
                            }
                        };
                        self.spawned.push(name);
                        queue.insert(0, spawned);
                    }
                    Action::Signal { pgid, signal, .. } => self.signals.push((*pgid, *signal)),
                    Action::Exit { code, .. } => self.exit = Some(*code),
                    Action::Notice(n) => {
                        if let (Some(name), Some((from, to))) = (&n.program, n.transition) {
                            let shown = self.shown.insert(name.clone(), to);
                            assert_eq!(
                                shown.unwrap_or(State::Stopped),
                                from,
                                "{}: an announced change must start from the state last shown",
                                n.message
                            );
                            assert!(
                                super::transitions::allowed(from, to),
                                "{}: {from} -> {to} is not in the transition table",
                                n.message
                            );
                        }
                    }
                    _ => {}
                }
                self.log.push(a);
            }
            if queue.is_empty() {
                let gone: Vec<ProgramId> = self
                    .core
                    .draining_groups()
                    .filter(|(_, pgid)| !lingering.contains(pgid))
                    .map(|(i, _)| i)
                    .collect();
                queue.extend(gone.into_iter().map(|id| Input::GroupGone { id }));
            }
        }
    }

    fn exit_main(&mut self, name: &str, exit: Exit) {
        let pid = self.pid(name);
        self.input(Input::Reaped {
            pid,
            exit,
            group_empty: true,
            oom_killed: false,
        });
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        self.input(Input::Tick);
    }

    fn ready(&mut self, name: &str) {
        let id = self.idx(name);
        let run = self.prog(name).run;
        self.input(Input::Ready { id, run });
    }
}

const FAIL: Exit = Exit::Code(1);
const OK: Exit = Exit::Code(0);

#[test]
fn oneshot_then_chain_starts_in_order() {
    let mut sim = Sim::new(vec![
        oneshot("prov"),
        with_ready(svc("db", &[("prov", Condition::Completed, false)])),
        svc("api", &[("db", Condition::Ready, false)]),
    ]);
    assert_eq!(sim.spawned, vec!["prov"]);
    assert_eq!(sim.state("prov"), State::Starting);
    assert_eq!(sim.state("db"), State::Waiting);
    sim.exit_main("prov", OK);
    assert_eq!(sim.state("prov"), State::Completed);
    assert_eq!(sim.spawned, vec!["prov", "db"]);
    assert_eq!(sim.state("db"), State::Starting);
    assert_eq!(sim.state("api"), State::Waiting);
    sim.ready("db");
    assert_eq!(sim.state("db"), State::Running);
    assert_eq!(sim.spawned, vec!["prov", "db", "api"]);
    assert_eq!(sim.state("api"), State::Running);
}

#[test]
fn diamond_waits_for_both_sides() {
    let mut sim = Sim::new(vec![
        oneshot("prov"),
        with_ready(svc("left", &[("prov", Condition::Completed, false)])),
        with_ready(svc("right", &[("prov", Condition::Completed, false)])),
        svc(
            "top",
            &[
                ("left", Condition::Ready, false),
                ("right", Condition::Ready, false),
            ],
        ),
    ]);
    sim.exit_main("prov", OK);
    assert_eq!(sim.spawned, vec!["prov", "left", "right"]);
    sim.ready("left");
    assert_eq!(sim.state("top"), State::Waiting);
    sim.ready("right");
    assert_eq!(sim.state("top"), State::Running);
}

#[test]
fn started_condition_does_not_wait_for_readiness() {
    let sim = Sim::new(vec![
        with_ready(svc("db", &[])),
        svc("api", &[("db", Condition::Started, false)]),
    ]);
    assert_eq!(sim.state("db"), State::Starting);
    assert_eq!(sim.state("api"), State::Running);
}

#[test]
fn crash_backs_off_then_restarts() {
    let mut sim = Sim::new(vec![svc("api", &[])]);
    let first = sim.pid("api");
    sim.exit_main("api", FAIL);
    assert_eq!(sim.state("api"), State::Backoff);
    // Nothing was left of its group: no stop signal to send.
    assert!(!sim.signals.contains(&(first, Signal::SIGTERM)));
    sim.advance(Duration::from_millis(50));
    assert_eq!(sim.state("api"), State::Backoff);
    sim.advance(Duration::from_millis(60));
    assert_eq!(sim.state("api"), State::Running);
    assert_ne!(sim.pid("api"), first);
    assert_eq!(sim.core.programs()[0].history.total, 1);
}

#[test]
fn exhaustion_stops_dependents_first_and_exits_with_the_escalation_code() {
    let mut crashy = svc("crashy", &[]);
    crashy.max_restarts = 2;
    crashy.backoff.initial = Duration::ZERO;
    crashy.backoff.max = Duration::ZERO;
    let mut sim = Sim::new(vec![
        crashy,
        svc("web", &[("crashy", Condition::Started, false)]),
    ]);
    let web = sim.pid("web");
    for _ in 0..2 {
        sim.exit_main("crashy", FAIL);
        assert_eq!(
            sim.state("crashy"),
            State::Running,
            "zero backoff restarts at once"
        );
    }
    sim.exit_main("crashy", FAIL);
    assert_eq!(sim.state("crashy"), State::Exhausted);
    assert!(sim.log.iter().any(|a| matches!(a, Action::TerminationMessage(m) if m.contains("crashy exhausted: 2 restarts in 60s"))));
    // web is stopped as part of the shutdown; nothing exits until it is gone.
    assert_eq!(sim.state("web"), State::Stopping);
    assert!(sim.signals.contains(&(web, Signal::SIGTERM)));
    assert_eq!(sim.exit, None);
    sim.input(Input::Reaped {
        pid: web,
        exit: Exit::Signal {
            sig: 15,
            core_dumped: false,
        },
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("web"), State::Stopped);
    assert_eq!(sim.exit, Some(75));
}

#[test]
fn giving_up_on_the_network_stops_in_reverse_order_and_exits_with_its_code() {
    let mut sim = Sim::new(vec![
        svc("db", &[]),
        svc("web", &[("db", Condition::Started, false)]),
    ]);
    let (db, web) = (sim.pid("db"), sim.pid("web"));
    sim.input(Input::GiveUp {
        code: 76,
        reason: "the network is lost".into(),
        message: "network lost: eth0 gone at …".into(),
    });
    let messages = |sim: &Sim| {
        sim.log
            .iter()
            .filter(|a| matches!(a, Action::TerminationMessage(m) if m.starts_with("network lost")))
            .count()
    };
    assert_eq!(messages(&sim), 1);
    // Dependents first: db is not signalled while web still runs.
    assert_eq!(sim.state("web"), State::Stopping);
    assert!(!sim.signals.contains(&(db, Signal::SIGTERM)));
    let termed = Exit::Signal {
        sig: 15,
        core_dumped: false,
    };
    for pid in [web, db] {
        sim.input(Input::Reaped {
            pid,
            exit: termed,
            group_empty: true,
            oom_killed: false,
        });
    }
    assert_eq!(sim.exit, Some(76));
    // A second verdict while going down changes nothing.
    sim.input(Input::GiveUp {
        code: 9,
        reason: String::new(),
        message: "network lost again".into(),
    });
    assert_eq!(messages(&sim), 1);
}

#[test]
fn on_exhausted_stop_leaves_the_rest_running() {
    let mut crashy = svc("crashy", &[]);
    crashy.max_restarts = 0;
    crashy.on_exhausted = OnExhausted::Stop;
    let mut sim = Sim::new(vec![crashy, svc("web", &[])]);
    sim.exit_main("crashy", FAIL);
    assert_eq!(sim.state("crashy"), State::Stopped);
    assert_eq!(sim.state("web"), State::Running);
    assert_eq!(sim.exit, None);
}

#[test]
fn stale_readiness_results_are_ignored() {
    let mut sim = Sim::new(vec![with_ready(svc("db", &[]))]);
    let old_run = sim.core.programs()[0].run;
    sim.exit_main("db", FAIL);
    sim.advance(Duration::from_millis(100));
    assert_eq!(sim.state("db"), State::Starting);
    sim.input(Input::Ready {
        id: sim.idx("db"),
        run: old_run,
    });
    assert_eq!(
        sim.state("db"),
        State::Starting,
        "a result for the previous run must not count"
    );
    sim.ready("db");
    assert_eq!(sim.state("db"), State::Running);
}

#[test]
fn readiness_timeout_is_a_failed_run() {
    let mut sim = Sim::new(vec![with_ready(svc("db", &[]))]);
    let pid = sim.pid("db");
    sim.advance(Duration::from_secs(5));
    assert_eq!(sim.state("db"), State::Stopping);
    assert_eq!(sim.signals.last(), Some(&(pid, Signal::SIGTERM)));
    sim.input(Input::Reaped {
        pid,
        exit: Exit::Signal {
            sig: 15,
            core_dumped: false,
        },
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("db"), State::Backoff);
    assert_eq!(sim.core.programs()[0].history.total, 1);
}

#[test]
fn a_lingering_child_is_stopped_and_killed_before_the_restart() {
    let mut sim = Sim::new(vec![svc("api", &[])]);
    let pid = sim.pid("api");
    sim.input_with(
        Input::Reaped {
            pid,
            exit: FAIL,
            group_empty: true,
            oom_killed: false,
        },
        &[pid],
    );
    assert_eq!(
        sim.state("api"),
        State::Stopping,
        "the group still has a member"
    );
    assert_eq!(sim.signals, vec![(pid, Signal::SIGTERM)]);
    sim.now += Duration::from_secs(5);
    sim.input_with(Input::Tick, &[pid]);
    assert_eq!(sim.signals.last(), Some(&(pid, Signal::SIGKILL)));
    assert_eq!(sim.state("api"), State::Stopping);
    // The child dies of the SIGKILL; the group is empty now.
    sim.input(Input::Reaped {
        pid: pid + 50,
        exit: Exit::Signal {
            sig: 9,
            core_dumped: false,
        },
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("api"), State::Backoff);
}

#[test]
fn restart_propagates_to_dependents_after_the_holder_is_ready_again() {
    let mut sim = Sim::new(vec![
        with_ready(svc("netns", &[])),
        svc("app", &[("netns", Condition::Ready, true)]),
        svc("bystander", &[("netns", Condition::Ready, false)]),
    ]);
    sim.ready("netns");
    let app = sim.pid("app");
    let bystander = sim.pid("bystander");
    sim.exit_main(
        "netns",
        Exit::Signal {
            sig: 9,
            core_dumped: false,
        },
    );
    assert_eq!(sim.state("app"), State::Stopping);
    assert_eq!(
        sim.state("bystander"),
        State::Running,
        "no restart = true edge"
    );
    sim.input(Input::Reaped {
        pid: app,
        exit: Exit::Signal {
            sig: 15,
            core_dumped: false,
        },
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("app"), State::Waiting);
    sim.advance(Duration::from_millis(100));
    assert_eq!(sim.state("netns"), State::Starting);
    assert_eq!(sim.state("app"), State::Waiting);
    sim.ready("netns");
    assert_eq!(sim.state("app"), State::Running);
    assert_eq!(sim.pid("bystander"), bystander);
    let app_prog = sim.prog("app");
    assert_eq!(
        app_prog.history.total, 0,
        "a propagated restart is not counted"
    );
    assert_eq!(app_prog.forced_restarts, 1);
}

#[test]
fn exec_failure_counts_as_a_failed_run() {
    let mut p = svc("ghost", &[]);
    p.max_restarts = 0;
    let sim = Sim::with_failing_spawns(vec![p], &["ghost"]);
    assert_eq!(sim.state("ghost"), State::Exhausted);
    assert_eq!(sim.exit, Some(75));
    // It never ran: nothing claims it was running, and the failure is said before the verdict.
    let messages: Vec<&str> = sim
        .log
        .iter()
        .filter_map(|a| match a {
            Action::Notice(n) => Some(n.message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        !messages.iter().any(|m| m.contains("-> running")),
        "{messages:?}"
    );
    let error = messages.iter().position(|m| m.contains("fix: install"));
    let verdict = messages
        .iter()
        .position(|m| m.contains("ghost: starting -> exhausted"));
    assert!(error.is_some() && error < verdict, "{messages:?}");
}

#[test]
fn the_same_start_failure_is_told_once() {
    let mut p = svc("ghost", &[]);
    p.max_restarts = 3;
    let mut sim = Sim::with_failing_spawns(vec![p], &["ghost"]);
    for _ in 0..3 {
        sim.advance(Duration::from_secs(2));
    }
    let told = sim
        .log
        .iter()
        .filter(|a| matches!(a, Action::Notice(n) if n.message.contains("fix: install")))
        .count();
    assert_eq!(told, 1);
    assert_eq!(sim.state("ghost"), State::Exhausted);
}

#[test]
fn signals_nobody_sent_are_crashes() {
    let mut sim = Sim::new(vec![svc("api", &[])]);
    let pid = sim.pid("api");
    sim.exit_main(
        "api",
        Exit::Signal {
            sig: 11,
            core_dumped: false,
        },
    );
    assert!(
        sim.log
            .iter()
            .any(|a| matches!(a, Action::Crashed { pid: p, .. } if *p == pid))
    );
}

#[test]
fn finish_hook_runs_before_the_restart() {
    let mut p = svc("api", &[]);
    p.finish = Some(vec!["/bin/deregister".into()]);
    let mut sim = Sim::new(vec![p]);
    sim.exit_main("api", Exit::Code(4));
    assert!(sim.log.contains(&Action::RunFinish {
        id: sim.idx("api"),
        exit: Some(Exit::Code(4))
    }));
    assert_eq!(sim.state("api"), State::Stopping);
    sim.input(Input::FinishSpawned {
        id: sim.idx("api"),
        pid: 555,
    });
    sim.input(Input::Reaped {
        pid: 555,
        exit: OK,
        group_empty: true,
        oom_killed: false,
    });
    assert_eq!(sim.state("api"), State::Backoff);
}

#[test]
fn finish_hook_is_killed_at_its_deadline() {
    let mut p = svc("api", &[]);
    p.finish = Some(vec!["/bin/hang".into()]);
    let mut sim = Sim::new(vec![p]);
    sim.exit_main("api", FAIL);
    sim.input(Input::FinishSpawned {
        id: sim.idx("api"),
        pid: 777,
    });
    sim.advance(Duration::from_secs(5));
    assert!(sim.signals.contains(&(777, Signal::SIGKILL)));
    assert_eq!(sim.state("api"), State::Backoff);
}

#[test]
fn autostart_false_stays_stopped_and_dependents_say_why_they_wait() {
    let mut manual = svc("manual", &[]);
    manual.autostart = false;
    let mut sim = Sim::new(vec![
        manual,
        svc("user", &[("manual", Condition::Started, false)]),
    ]);
    assert_eq!(sim.state("manual"), State::Stopped);
    assert_eq!(sim.state("user"), State::Waiting);
    assert!(sim.log.iter().any(|a| matches!(a, Action::Notice(n) if n.message.contains("user: stopped -> waiting: waiting for manual to be started (manual is stopped: autostart = false)"))));
    sim.input(Input::Start(vec![sim.idx("manual")]));
    assert_eq!(sim.state("user"), State::Running);
}

#[test]
fn no_deadline_when_idle() {
    let sim = Sim::new(vec![svc("a", &[]), svc("b", &[])]);
    assert_eq!(
        sim.core.next_deadline(),
        None,
        "an idle supervisor must not wake up"
    );
}

mod after;

mod by_hand;

mod liveness_rules;

mod propagation;

mod stop_order;

mod uptime;

mod external_rules;

mod limits;

//! The way down, checked with timestamps: on a container stop, `[init] drain` first (health and
//! `/readyz` report not ready while programs keep running), then each program in reverse
//! dependency order: its `pre_stop` hook (bounded by `pre_stop_timeout`), its stop signal,
//! SIGKILL once its `stop_timeout` (counted from the start of its stop, hook included) is
//! spent, and its `finish` hook after it exited. A `pre_stop` hook also runs on a stop or
//! restart by hand.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

/// `EVENT PROGRAM NANOS` lines, appended by hooks and traps to `{dir}/order`.
const WAY_DOWN: &str = r#"
[init]
stop_timeout = "9s"
drain = "3s"
http = "127.0.0.1:{port}"

[program.engine]
command = ["/bin/sh", "-c", "trap 'echo term engine $(date +%s%N) >> {dir}/order; exit 0' TERM; touch {dir}/engine.up; while :; do sleep 0.05; done"]
pre_stop = ["/bin/sh", "-c", "echo pre_stop $CTRLINIT_PROGRAM $(date +%s%N) >> {dir}/order; echo deregistered $CTRLINIT_PID"]
finish = ["/bin/sh", "-c", "echo finish engine $(date +%s%N) >> {dir}/order"]

[program.agent]
depends_on = ["engine"]
command = ["/bin/sh", "-c", "trap '' TERM; touch {dir}/agent.up; while :; do sleep 0.05; done"]
pre_stop = ["/bin/sh", "-c", "echo pre_stop $CTRLINIT_PROGRAM $(date +%s%N) >> {dir}/order; exec sleep 30"]
pre_stop_timeout = "500ms"
stop_timeout = "1500ms"
finish = ["/bin/sh", "-c", "echo finish agent $(date +%s%N) $CTRLINIT_EXIT_SIGNAL >> {dir}/order"]
"#;

/// Nanoseconds since the epoch, as `date +%s%N` prints them.
fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The status line of `GET path` on `port`.
fn http_status(port: u16, path: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return "no connection".into();
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines().next().unwrap_or_default().to_string()
}

#[test]
fn drain_pre_stop_stop_signal_kill_and_finish_come_in_order_within_their_budgets() {
    let port = free_port();
    let init = init()
        .file("a.toml", &WAY_DOWN.replace("{port}", &port.to_string()))
        .start();
    wait_for_file(&init.dir().join("engine.up"));
    wait_for_file(&init.dir().join("agent.up"));
    init.wait_states(&["engine=running", "agent=running"]);
    assert!(
        http_status(port, "/readyz").contains(" 200"),
        "ready before the stop"
    );

    let t0 = now_ns();
    let began = Instant::now();
    init.signal("TERM");
    init.wait_for_line("draining for 3s before stopping");
    // While draining: not ready, programs untouched. (Checked only if the answers came well
    // inside the drain, which a very loaded machine might not manage.)
    let (code, out) = init.ctl(&["health"]);
    let readyz = http_status(port, "/readyz");
    let drain_seen = began.elapsed();
    if drain_seen < Duration::from_millis(2500) {
        assert_eq!(code, 1, "health during the drain: {out}");
        assert!(out.contains("draining"), "{out}");
        assert!(
            readyz.contains(" 503"),
            "/readyz during the drain: {readyz}"
        );
        assert!(
            file_lines(&init.dir().join("order")).is_empty(),
            "nothing stopped yet"
        );
    }
    let mut init = init;
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let took = began.elapsed();

    let lines = file_lines(&init.dir().join("order"));
    let at = |event: &str, prog: &str| -> u128 {
        lines
            .iter()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next()? == event && w.next()? == prog).then(|| w.next()?.parse().ok())?
            })
            .unwrap_or_else(|| panic!("no `{event} {prog}` in {lines:?}\n{}", init.output()))
    };
    let ms = |ns: u128| ns / 1_000_000;
    let (pre_agent, finish_agent) = (at("pre_stop", "agent"), at("finish", "agent"));
    let (pre_engine, term_engine, finish_engine) = (
        at("pre_stop", "engine"),
        at("term", "engine"),
        at("finish", "engine"),
    );
    // The drain comes first, for its whole length.
    assert!(
        ms(pre_agent - t0) >= 2950,
        "first pre_stop {} ms after TERM",
        ms(pre_agent - t0)
    );
    // agent (the dependent) goes down first: its hook is killed after pre_stop_timeout, TERM is
    // ignored, SIGKILL comes once its 1.5 s stop time (from its hook's start) is spent.
    assert!(finish_agent > pre_agent);
    let agent_down = ms(finish_agent - pre_agent);
    assert!(
        (1400..6000).contains(&agent_down),
        "agent's stop took {agent_down} ms: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("finish agent") && l.ends_with("SIGKILL")),
        "{lines:?}"
    );
    init.wait_for_line("agent: pre_stop hook did not end in time; killed it");
    // Then engine: pre_stop, its stop signal, its finish, in that order.
    assert!(
        pre_engine > finish_agent,
        "engine stops after agent is down: {lines:?}"
    );
    assert!(term_engine > pre_engine, "{lines:?}");
    assert!(finish_engine > term_engine, "{lines:?}");
    // The hook's output is in the program's log.
    init.wait_for_line("| deregistered");
    // All inside the container's budget.
    assert!(took < Duration::from_secs(9), "the stop took {took:?}");
}

#[test]
fn a_pre_stop_hook_runs_on_a_stop_and_a_restart_by_hand_and_its_failure_does_not_hold_the_stop() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.svc]
command = ["/bin/sh", "-c", "trap 'echo term >> {dir}/order; exit 0' TERM; echo $$$$ >> {dir}/runs; while :; do sleep 0.05; done"]
pre_stop = ["/bin/sh", "-c", "echo pre_stop $CTRLINIT_PID >> {dir}/order"]

[program.broken]
command = ["/bin/sh", "-c", "trap 'echo term >> {dir}/broken; exit 0' TERM; while :; do sleep 0.05; done"]
pre_stop = ["/does/not/exist"]
"#,
        )
        .start();
    init.wait_states(&["svc=running", "broken=running"]);
    let first = wait_for_lines_in(&init.dir().join("runs"), 1)[0].clone();
    let (code, out) = init.ctl(&["restart", "svc"]);
    assert_eq!(code, 0, "{out}");
    let runs = wait_for_lines_in(&init.dir().join("runs"), 2);
    let (code, out) = init.ctl(&["stop", "svc", "broken"]);
    assert_eq!(code, 0, "{out}");
    init.wait_states(&["svc=stopped", "broken=stopped"]);
    assert_eq!(
        file_lines(&init.dir().join("order")),
        vec![
            format!("pre_stop {first}"),
            "term".to_string(),
            format!("pre_stop {}", runs[1]),
            "term".to_string()
        ]
    );
    // A hook that cannot start is said, and the stop goes on.
    init.wait_for_line("pre_stop hook failed to start");
    assert_eq!(file_lines(&init.dir().join("broken")), vec!["term"]);
}

#[test]
fn a_drain_must_fit_in_the_stop_budget_and_a_pre_stop_timeout_in_the_stop_timeout() {
    let (_dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[init]
stop_timeout = "5s"
drain = "5s"

[program.a]
command = ["/bin/true"]
pre_stop = ["/bin/true"]
stop_timeout = "2s"
pre_stop_timeout = "3s"
"#,
    )]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("init.drain"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("program.a.pre_stop_timeout"),
        "{}",
        ran.stderr
    );
}

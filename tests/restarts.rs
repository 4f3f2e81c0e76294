//! Restarts against the real binary: crash loop → escalation, restart propagation along
//! `restart = true` dependencies, a leader dying while a child lingers, `finish` hooks, and
//! readiness timeouts.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// db ← api ← crashy: crashy starts once the others run, then fails every time.
/// db and api note their SIGTERM in `{dir}/stopped` and exit; they are ready once their trap is
/// set, so the escalation cannot catch them before it.
fn crash_loop(init_table: &str) -> String {
    format!(
        r#"
{init_table}

[program.db]
command = ["/bin/sh", "-c", "trap 'echo db >> {{dir}}/stopped; exit 0' TERM; touch {{dir}}/db.up; while :; do sleep 0.05; done"]
ready = {{ file = "{{dir}}/db.up", interval = "10ms" }}

[program.api]
command = ["/bin/sh", "-c", "trap 'echo api >> {{dir}}/stopped; exit 0' TERM; touch {{dir}}/api.up; while :; do sleep 0.05; done"]
depends_on = ["db"]
ready = {{ file = "{{dir}}/api.up", interval = "10ms" }}

[program.crashy]
command = ["/bin/sh", "-c", "until [ -e {{dir}}/go ]; do sleep 0.01; done; echo run >> {{dir}}/runs; exit 1"]
depends_on = ["api"]
max_restarts = 2
backoff = {{ initial = "0s", max = "0s" }}
"#
    )
}

fn escalation(init_table: &str, code: i32) {
    let builder = init().file("a.toml", &crash_loop(init_table));
    // Where Kubernetes' termination message file exists, the reason is written there.
    let termination_log = builder.dir().join("termination-log");
    std::fs::write(&termination_log, "").unwrap();
    let mut init = builder
        .env(
            "CTRLINIT_TERMINATION_LOG",
            termination_log.to_str().unwrap(),
        )
        .start();
    // crashy starts failing only once the harness has seen ctrlinit alive.
    std::fs::write(init.dir().join("go"), "").unwrap();
    assert_eq!(init.wait_exit(DEADLINE), code);
    // Everything up to the last line has been captured.
    init.wait_for_line(&format!("exiting with status {code}"));
    let out = init.output();
    // max_restarts = 2 allows three runs.
    assert_eq!(file_lines(&init.dir().join("runs")).len(), 3, "{out}");
    let line = "crashy exhausted: 2 restarts in 60s (last: exit status 1 after";
    assert!(out.contains(line), "no exhaustion line; output:\n{out}");
    assert!(
        out.contains(&format!("stopping the container with exit code {code}")),
        "{out}"
    );
    let message = std::fs::read_to_string(&termination_log).unwrap();
    assert!(
        message.starts_with(line)
            && message
                .trim_end()
                .ends_with(&format!("stopping the container with exit code {code}")),
        "termination log: {message:?}"
    );
    // The other programs were stopped gracefully, dependents first, before ctrlinit exited.
    assert_eq!(
        file_lines(&init.dir().join("stopped")),
        vec!["api", "db"],
        "{out}"
    );
    let lines = init.lines();
    let exhausted = index_of_line(&lines, "crashy: running -> exhausted").expect("exhausted");
    let api_stopped = index_of_line(&lines, "api: stopping -> stopped").expect("api stopped");
    let db_stopping = index_of_line(&lines, "db: running -> stopping").expect("db stopping");
    let exit = index_of_line(&lines, &format!("exiting with status {code}")).expect("exit line");
    assert!(
        exhausted < api_stopped && api_stopped < db_stopping && db_stopping < exit,
        "{out}"
    );
    assert!(init.namespace_pids().is_empty());
}

#[test]
fn crash_loop_escalates_with_exit_code_75_after_stopping_dependents() {
    escalation("", 75);
}

#[test]
fn crash_loop_escalates_with_custom_exit_code() {
    escalation("[init]\nexit_code = 42", 42);
}

#[test]
fn on_exhausted_stop_leaves_it_down_and_the_container_up() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.crashy]
command = ["/bin/sh", "-c", "echo run >> {dir}/runs; exit 4"]
max_restarts = 1
on_exhausted = "stop"
backoff = { initial = "0s", max = "0s" }

[program.other]
command = ["/bin/sh", "-c", "echo $$$$ > {dir}/other.pid; exec sleep 1000"]
"#,
        )
        .start();
    init.wait_for_line("crashy exhausted: 1 restarts in 60s (last: exit status 4 after");
    init.wait_for_line("leaving it stopped");
    let other = init.wait_for_pid_file("other.pid");
    assert_eq!(file_lines(&init.dir().join("runs")).len(), 2);
    assert!(alive(other));
    assert!(!init.output().contains("shutting down"));
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
}

#[test]
fn restart_true_dependents_come_back_after_the_holder_is_ready_again() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.holder]
command = ["/bin/sh", "-c", "echo holder-start >> {dir}/events; sleep 0.2; echo holder-ready >> {dir}/events; echo $$$$ > {dir}/holder.pid; touch {dir}/holder.ready; exec sleep 1000"]
ready = { file = "{dir}/holder.ready", interval = "10ms" }
backoff = { initial = "100ms" }

[program.app]
command = ["/bin/sh", "-c", "trap 'echo app-stop >> {dir}/events; exit 0' TERM; echo app-start >> {dir}/events; while :; do sleep 0.05; done"]
# A restart caused by the holder must not count against app's own budget.
max_restarts = 0

[program.app.depends_on]
holder = { condition = "ready", restart = true }

[program.plain]
command = ["/bin/sh", "-c", "echo plain-start >> {dir}/events; echo $$$$ > {dir}/plain.pid; exec sleep 1000"]
depends_on = ["holder"]
"#,
        )
        .start();
    init.wait_for_line("app: starting -> running");
    let plain = init.wait_for_pid_file("plain.pid");
    let holder = init.wait_for_pid_file("holder.pid");
    let events = wait_for_lines_in(&init.dir().join("events"), 4);
    assert_eq!(events[0..2], ["holder-start", "holder-ready"]);

    // The readiness file of the first run must not satisfy the second.
    std::fs::remove_file(init.dir().join("holder.ready")).unwrap();
    assert!(send_signal(holder, libc::SIGKILL));

    init.wait_for_line("app: running -> stopping: restarting because holder ended");
    init.wait_for_nth_line("app: waiting -> starting", 2, DEADLINE);
    let events = wait_until("app to start a second time", DEADLINE, || {
        let e = file_lines(&init.dir().join("events"));
        (e.iter().filter(|l| *l == "app-start").count() == 2).then_some(e)
    });
    let nth = |what: &str, n: usize| {
        events
            .iter()
            .enumerate()
            .filter(|(_, l)| *l == what)
            .nth(n - 1)
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("no #{n} {what} in {events:?}"))
    };
    let app_stop = nth("app-stop", 1);
    let second_ready = nth("holder-ready", 2);
    let second_app = nth("app-start", 2);
    assert!(nth("holder-start", 2) < second_ready);
    assert!(
        second_ready < second_app,
        "app came back before holder was ready: {events:?}"
    );
    assert!(app_stop < second_app, "{events:?}");
    // The plain dependent (no restart = true) was left alone.
    assert!(alive(plain));
    assert_eq!(init.wait_for_pid_file("plain.pid"), plain);
    assert_eq!(events.iter().filter(|l| *l == "plain-start").count(), 1);
    // And app's budget of 0 restarts was not spent by the propagated restart.
    assert!(!init.output().contains("exhausted"), "{}", init.output());
    assert_eq!(init.count_lines("app: stopping -> stopped"), 0);
}

#[test]
fn a_lingering_child_is_stopped_before_the_restart() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.leaky]
command = ["/bin/sh", "-c", "if [ -f {dir}/child ]; then if kill -0 $(cat {dir}/child) 2>/dev/null; then echo alive; else echo gone; fi > {dir}/check.tmp; mv {dir}/check.tmp {dir}/check; exec sleep 1000; fi; sleep 1000 & echo $! > {dir}/child; exit 3"]
backoff = { initial = "0s" }
"#,
        )
        .start();
    init.wait_for_line("ended (exit status 3) after");
    let check = wait_for_file(&init.dir().join("check"));
    assert_eq!(check.trim(), "gone", "{}", init.output());
    assert!(init.count_lines("still running") == 0, "{}", init.output());
    init.wait_for_line("leaky: restarting at once: exit status 3");
}

/// Wall-clock nanoseconds written by `date +%s%N` into `path` (one per line); the n-th.
fn stamp(path: &std::path::Path, n: usize) -> u128 {
    wait_for_lines_in(path, n)[n - 1].trim().parse().unwrap()
}

#[test]
fn a_lingering_child_that_ignores_term_is_killed_after_stop_timeout() {
    // Run 1 starts a child that ignores SIGTERM, notes the time and exits 3; run 2 notes the
    // time it started and whether that child is still there.
    let init = init()
        .file(
            "a.toml",
            r#"
[program.leaky]
command = ["/bin/sh", "-c", "if [ -f {dir}/child ]; then date +%s%N >> {dir}/times; if kill -0 $(cat {dir}/child) 2>/dev/null; then echo alive; else echo gone; fi > {dir}/check.tmp; mv {dir}/check.tmp {dir}/check; exec sleep 1000; fi; (trap '' TERM; touch {dir}/ignoring; exec sleep 1000) & until [ -e {dir}/ignoring ]; do sleep 0.01; done; echo $! > {dir}/child.tmp; mv {dir}/child.tmp {dir}/child; date +%s%N >> {dir}/times; exit 3"]
stop_timeout = "1s"
backoff = { initial = "0s" }
"#,
        )
        .start();
    let check = wait_for_file(&init.dir().join("check"));
    assert_eq!(check.trim(), "gone", "{}", init.output());
    init.wait_for_line("leaky: still running 1s after SIGTERM; sending SIGKILL to process group");
    let times = init.dir().join("times");
    let took = Duration::from_nanos((stamp(&times, 2) - stamp(&times, 1)) as u64);
    assert!(
        took >= Duration::from_millis(1000),
        "restarted {took:?} after the leader ended, before stop_timeout"
    );
    assert!(took < Duration::from_secs(6), "restart took {took:?}");
}

#[test]
fn finish_hook_runs_after_every_exit_before_the_restart() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.flaky]
command = ["/bin/sh", "-c", "n=$(cat {dir}/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > {dir}/n; echo run$n >> {dir}/events; case $n in 1) exit 3;; 2) kill -KILL $$$$;; esac; exec sleep 1000"]
finish = ["/bin/sh", "-c", "echo \"finish $CTRLINIT_PROGRAM code=$CTRLINIT_EXIT_CODE signal=$CTRLINIT_EXIT_SIGNAL\" >> {dir}/events"]
backoff = { initial = "0s", max = "0s" }
"#,
        )
        .start();
    let events = wait_for_lines_in(&init.dir().join("events"), 5);
    assert_eq!(
        events,
        vec![
            "run1",
            "finish flaky code=3 signal=",
            "run2",
            "finish flaky code= signal=SIGKILL",
            "run3",
        ]
    );
    init.wait_for_line("flaky: finish hook ended (exit status 0)");
    // The stop at shutdown is an exit too.
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    assert_eq!(
        file_lines(&init.dir().join("events")).last().unwrap(),
        "finish flaky code= signal=SIGTERM"
    );
}

#[test]
fn a_hanging_finish_hook_is_killed_after_stop_timeout() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.p]
command = ["/bin/sh", "-c", "echo run >> {dir}/runs; exit 1"]
finish = ["/bin/sh", "-c", "echo hook >> {dir}/runs; exec sleep 1000"]
stop_timeout = "500ms"
backoff = { initial = "0s", max = "0s" }
"#,
        )
        .start();
    let start = Instant::now();
    init.wait_for_line("p: finish hook did not end in time; killed it");
    let runs = wait_for_lines_in(&init.dir().join("runs"), 3);
    assert_eq!(runs[0..3], ["run", "hook", "run"]);
    assert!(start.elapsed() >= Duration::from_millis(450));
}

#[test]
fn not_ready_within_ready_timeout_counts_as_a_failed_run() {
    let builder = init().file(
        "a.toml",
        r#"
[program.slow]
command = ["/bin/sh", "-c", "echo run >> {dir}/runs; exec sleep 1000"]
ready = { file = "{dir}/never", interval = "10ms" }
ready_timeout = "300ms"
max_restarts = 1
backoff = { initial = "100ms" }

[program.dependent]
command = ["/bin/sh", "-c", "touch {dir}/dependent-started; exec sleep 1000"]
depends_on = ["slow"]
"#,
    );
    let before = Instant::now();
    let mut init = builder.start();
    init.wait_for_line(
        "slow: starting -> stopping: not ready within 300ms; stopping it (counts as a failed run)",
    );
    let waited = before.elapsed();
    assert!(
        waited >= Duration::from_millis(300),
        "timed out {waited:?} after the start"
    );
    assert!(
        waited < Duration::from_secs(6),
        "timed out {waited:?} after the start"
    );
    init.wait_for_line(
        "slow: stopping -> backoff: not ready within 300ms; restart 1 of 1 within 60s in 100ms",
    );
    // The second run times out too: the budget is spent.
    assert_eq!(init.wait_exit(DEADLINE), 75);
    init.wait_for_line("exiting with status 75");
    let out = init.output();
    assert!(
        out.contains("slow exhausted: 1 restarts in 60s (last: not ready within 300ms)"),
        "{out}"
    );
    assert_eq!(file_lines(&init.dir().join("runs")).len(), 2);
    assert!(
        out.contains("dependent: stopped -> waiting: waiting for slow to be ready"),
        "{out}"
    );
    assert!(!init.dir().join("dependent-started").exists());
}

#[test]
fn an_exit_before_the_uptime_is_a_failed_start_and_a_run_that_stays_is_ready() {
    // supervisord's startsecs: `quick` exits 0 at once, which with on-failure would be a
    // success; before its uptime it is a failed start, counted until the budget is spent.
    let init = init()
        .file(
            "a.toml",
            r#"
[program.quick]
command = ["/bin/sh", "-c", "echo run >> {dir}/runs; exit 0"]
restart = "on-failure"
ready = { uptime = "2s" }
max_restarts = 2
backoff = { initial = "50ms" }
on_exhausted = "stop"

[program.after-quick]
command = ["sleep", "1000"]
depends_on = ["quick"]

[program.steady]
command = ["sleep", "1000"]
ready = { uptime = "300ms" }

[program.web]
command = ["sleep", "1000"]
depends_on = ["steady"]
"#,
        )
        .start();
    let started = Instant::now();
    init.wait_states(&["steady=running", "web=running"]);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "ready before its uptime"
    );
    // A state holds before its line is necessarily read from ctrlinit's output.
    init.wait_for_line("web: waiting -> starting");
    let lines = init.lines();
    let ready = index_of_line(&lines, "steady: starting -> running: ready after")
        .unwrap_or_else(|| panic!("steady became ready:\n{}", lines.join("\n")));
    let web = index_of_line(&lines, "web: waiting -> starting").expect("web started");
    assert!(ready < web, "web waited for steady to be ready");

    init.wait_states(&["quick=stopped"]);
    init.wait_for_line("quick exhausted: 2 restarts");
    let out = init.output();
    assert_eq!(file_lines(&init.dir().join("runs")).len(), 3, "{out}");
    assert!(
        out.contains("quick: starting -> backoff: exit status 0 after")
            && out.contains("before its uptime of 2s; restart 1 of 2"),
        "{out}"
    );
    assert!(
        out.contains("quick exhausted: 2 restarts in 60s (last: exit status 0 after"),
        "{out}"
    );
    let quick = init.program_json("quick");
    assert_eq!(quick["restarts_by_cause"]["exit"], 2, "{quick}");
    assert_eq!(quick["readiness"], "uptime 2s", "{quick}");
    assert_eq!(init.program_json("after-quick")["state"], "waiting");
    // The container stays up: on_exhausted = "stop".
    assert_eq!(init.program_json("web")["state"], "running");
}

#[test]
fn an_exhausted_main_program_ends_the_container_with_exit_code_not_its_own_status() {
    let mut init = init()
        .file(
            "a.toml",
            r#"
[program.job]
main = true
restart = "always"
command = ["/bin/sh", "-c", "echo run >> {dir}/runs; exit 4"]
max_restarts = 1
backoff = { initial = "0s", max = "0s" }

[program.side]
command = ["/bin/sleep", "1000"]
"#,
        )
        .start();
    assert_eq!(init.wait_exit(DEADLINE), 75, "{}", init.output());
    assert_eq!(file_lines(&init.dir().join("runs")).len(), 2);
    let out = init.output();
    assert!(
        out.contains("job exhausted: 1 restarts in 60s (last: exit status 4")
            && out.contains("stopping the container with exit code 75"),
        "{out}"
    );
    assert!(out.contains("side: stopping -> stopped: shutdown"), "{out}");
}

/// What lives in a holder stops dependents first when the holder ends, as a shutdown does, and
/// none starts again before all are down.
#[test]
fn a_propagated_restart_stops_dependents_first() {
    let init = init()
        .file(
            "a.toml",
            r#"
[program.holder]
command = ["/bin/sh", "-c", "echo $$$$ > {dir}/holder.pid; exec sleep 1000"]
backoff = { initial = "100ms" }

[program.rib]
command = ["/bin/sh", "-c", "trap 'sleep 0.2; echo rib-stop >> {dir}/events; exit 0' TERM; echo rib-start >> {dir}/events; while :; do sleep 0.05; done"]
depends_on = { holder = { condition = "started", restart = true } }

[program.xmpp]
command = ["/bin/sh", "-c", "trap 'sleep 0.2; echo xmpp-stop >> {dir}/events; exit 0' TERM; echo xmpp-start >> {dir}/events; while :; do sleep 0.05; done"]
depends_on = { holder = { condition = "started", restart = true }, rib = "started" }
"#,
        )
        .start();
    init.wait_states(&["holder=running", "rib=running", "xmpp=running"]);
    let holder = init.wait_for_pid_file("holder.pid");
    wait_for_lines_in(&init.dir().join("events"), 2);
    assert!(send_signal(holder, libc::SIGKILL));
    let events = wait_until("both back", DEADLINE, || {
        let e = file_lines(&init.dir().join("events"));
        (e.iter().filter(|l| l.ends_with("-start")).count() == 4).then_some(e)
    });
    assert_eq!(
        events[2..4],
        ["xmpp-stop", "rib-stop"],
        "xmpp (which needs rib) stops first, and nothing starts before both are down: {events:?}"
    );
    // Both start again after that. Which shell writes its line first is theirs to race (xmpp
    // needs rib only started); that rib is started first is ctrlinit's, and its log says so.
    let mut starts = events[4..].to_vec();
    starts.sort();
    assert_eq!(starts, ["rib-start", "xmpp-start"], "{events:?}");
    init.wait_states(&["holder=running", "rib=running", "xmpp=running"]);
    let lines = init.lines();
    let last = |needle: &str| {
        lines
            .iter()
            .rposition(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?}: {lines:#?}"))
    };
    assert!(
        last("rib: starting -> running") < last("xmpp: waiting -> starting"),
        "{lines:#?}"
    );
}

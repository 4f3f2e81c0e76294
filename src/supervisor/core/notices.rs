//! The words of the supervisor's notices, in one place: what ctrlinit says when it decides
//! something (the core calls these; it writes no sentence itself). Each function returns one
//! line, or a line and its `fix:` continuation.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::config::{ProgramSpec, RestartPolicy};
use crate::model::{Exit, State};

/// A short human duration: `1.5s`, `250ms`, `2m`.
pub fn fmt_duration(d: Duration) -> String {
    if d >= Duration::from_secs(600) && d.subsec_millis() == 0 {
        humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
    } else if d >= Duration::from_secs(1) {
        let s = d.as_secs_f64();
        if s.fract() == 0.0 {
            format!("{}s", s as u64)
        } else {
            format!("{s:.1}s")
        }
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// `api: running -> backoff: why` (or without the why).
pub fn transition(name: &str, from: State, to: State, why: &str) -> String {
    if why.is_empty() {
        format!("{name}: {from} -> {to}")
    } else {
        format!("{name}: {from} -> {to}: {why}")
    }
}

/// A program did not start; with the fix when its command itself could not be executed.
pub fn start_failed(spec: &ProgramSpec, error: &str, exec_failed: bool) -> String {
    let mut msg = format!("{}: {error}", spec.name);
    if exec_failed {
        msg.push_str(&format!(
            "\n    fix: install {:?} in the image (executable), or correct {}; `ctrlinit check` warns about commands it cannot find",
            spec.command[0],
            spec.written_as("command")
        ));
    }
    msg
}

/// Why a spawned program is where it is.
pub fn spawned(pid: i32, waits_until_ready: bool) -> String {
    if waits_until_ready {
        format!("spawned pid {pid}; waiting until ready")
    } else {
        format!("spawned pid {pid}")
    }
}

/// A readiness check passed.
pub fn ready_after(took: Duration) -> String {
    format!("ready after {}", fmt_duration(took))
}

/// A readiness check did not pass in time.
pub fn not_ready_within(timeout: Duration) -> String {
    format!(
        "not ready within {}; stopping it (counts as a failed run)",
        fmt_duration(timeout)
    )
}

/// The finish hook ended.
pub fn finish_ended(name: &str, exit: Exit) -> String {
    format!("{name}: finish hook ended ({exit})")
}

/// The finish hook overran its time.
pub fn finish_killed(name: &str) -> String {
    format!("{name}: finish hook did not end in time; killed it")
}

/// A forking daemon's pid file did not come in time.
pub fn no_pid_file(spec: &ProgramSpec) -> String {
    let file = spec
        .pidfile
        .as_deref()
        .map_or_else(String::new, |p| p.display().to_string());
    format!(
        "no pid file {file} of this run within {} (counts as a failed run)",
        fmt_duration(spec.ready_timeout)
    )
}

/// A forking daemon's launcher exited 0.
pub fn launcher_forked(name: &str, pid: i32, pidfile: Option<&std::path::Path>) -> String {
    let file = pidfile.map_or_else(String::new, |p| p.display().to_string());
    format!("{name}: launcher pid {pid} exited 0; reading the daemon's pid from {file}")
}

/// A forking daemon was adopted and has a readiness check to pass.
pub fn adopted(name: &str, pid: i32) -> String {
    format!("{name}: adopted daemon pid {pid} as its main process; waiting until ready")
}

/// A forking daemon was adopted and is running.
pub fn adopted_running(pid: i32, took: Duration) -> String {
    format!(
        "adopted daemon pid {pid} (from its pid file) after {}",
        fmt_duration(took)
    )
}

/// The `pre_stop` hook is over (`why`), and the stop signal went out.
pub fn pre_stop_over(name: &str, why: &str, signal: Signal, pgid: i32) -> String {
    format!("{name}: {}", stop_sent(why, signal, pgid))
}

/// Entering the `pre_stop` hook, before the stop signal.
pub fn running_pre_stop(why: &str, timeout: Duration) -> String {
    format!(
        "{why}; running its pre_stop hook first (at most {})",
        fmt_duration(timeout)
    )
}

/// Entering the finish hook.
pub const RUNNING_FINISH: &str = "running its finish hook";

/// The leader of a group being stopped ended.
pub fn leader_ended(name: &str, pid: i32, exit: Exit) -> String {
    format!("{name}: pid {pid} ended ({exit})")
}

/// The leader ended by itself; the rest of its group is being stopped.
pub fn ended_with_group_left(pid: i32, exit: Exit, uptime: Duration) -> String {
    format!(
        "pid {pid} ended ({exit}) after {}; stopping the rest of its process group",
        fmt_duration(uptime)
    )
}

/// A dependent stopped because what it lives in ended.
pub fn restarting_because(dependency: &str) -> String {
    format!("restarting because {dependency} ended")
}

/// What is known about how a run ended.
#[derive(Debug, Clone, Copy)]
pub struct RunEnding<'a> {
    /// Its exit, if it exited by itself.
    pub exit: Option<Exit>,
    /// It never ran (exec or setup failed).
    pub failed_to_start: bool,
    /// The OOM killer took it.
    pub oom_killed: bool,
    /// It counts as failed whatever its exit (not ready in time, or unhealthy).
    pub forced_failure: bool,
    /// Why ctrlinit stopped it as unhealthy, if it did.
    pub unhealthy: Option<&'a str>,
    /// The limit ctrlinit stopped it for, if it did (`memory 1.21 GiB over 1 GiB`).
    pub over_limit: Option<&'a str>,
    /// Its pid file was refused (said already, with why, when it was).
    pub adoption_refused: bool,
    /// The `ready = { uptime }` it ended short of, if it did.
    pub short_of_uptime: Option<Duration>,
    /// How long it ran.
    pub ran_for: Duration,
    /// Its `ready_timeout`.
    pub ready_timeout: Duration,
}

/// How a run ended, for the verdict that follows.
pub fn how_run_ended(end: RunEnding<'_>) -> String {
    if let Some(cause) = end.unhealthy {
        return format!("unhealthy after {}: {cause}", fmt_duration(end.ran_for));
    }
    if let Some(over) = end.over_limit {
        return format!("over its limit after {}: {over}", fmt_duration(end.ran_for));
    }
    match end.exit {
        Some(e) if end.failed_to_start => format!("failed to start ({e})"),
        Some(e) if end.oom_killed => format!(
            "{e}: killed by the OOM killer after {}",
            fmt_duration(end.ran_for)
        ),
        Some(e) if end.short_of_uptime.is_some() => format!(
            "{e} after {}, before its uptime of {}",
            fmt_duration(end.ran_for),
            fmt_duration(end.short_of_uptime.unwrap_or_default())
        ),
        Some(e) if !end.forced_failure => format!("{e} after {}", fmt_duration(end.ran_for)),
        _ if end.adoption_refused => "its pid file was refused".into(),
        _ => format!("not ready within {}", fmt_duration(end.ready_timeout)),
    }
}

/// A program's liveness changed: `api: health: healthy -> unhealthy 1/3: http …: HTTP 500`.
pub fn health_changed(name: &str, from: &str, to: &str, check: &str, output: &str) -> String {
    if output.is_empty() {
        format!("{name}: health: {from} -> {to} ({check})")
    } else {
        format!("{name}: health: {from} -> {to}: {check}: {output}")
    }
}

/// Why an unhealthy program is restarted, as its stop line says.
pub fn unhealthy_restart(cause: &str) -> String {
    format!("unhealthy: {cause}; restarting it (counts toward its restart budget)")
}

/// What an unhealthy verdict says about the check: `http …: HTTP 500 (3 failures in a row)`.
pub fn unhealthy_cause(check: &str, output: &str, failures: u32) -> String {
    let tail = if failures > 1 {
        format!(" ({failures} failures in a row)")
    } else {
        String::new()
    };
    if output.is_empty() {
        format!("{check} failed{tail}")
    } else {
        format!("{check}: {output}{tail}")
    }
}

/// The sd_notify watchdog was not fed in time.
pub fn watchdog_missed(every: Duration) -> String {
    format!("no WATCHDOG=1 within {}", fmt_duration(every))
}

/// The program sent `WATCHDOG=trigger`.
pub const WATCHDOG_TRIGGERED: &str = "it sent WATCHDOG=trigger";

/// The program reported an error number over sd_notify.
pub fn notify_errno(name: &str, errno: i32) -> String {
    let words = std::io::Error::from_raw_os_error(errno).to_string();
    let words = words
        .split(" (os error")
        .next()
        .unwrap_or(&words)
        .to_string();
    format!("{name}: reports ERRNO={errno} ({words})")
}

/// The program named a new main process over sd_notify.
pub fn main_pid_changed(name: &str, from: i32, to: i32) -> String {
    format!("{name}: main process is now pid {to} (was {from}, MAINPID=)")
}

/// The run ended and policy does not restart it.
pub fn not_restarted(how: &str, spec: &ProgramSpec) -> String {
    let word = match spec.restart {
        RestartPolicy::Always => "always",
        RestartPolicy::OnFailure => "on-failure",
        RestartPolicy::Never => "never",
    };
    format!("{how}; restart = {word:?} does not restart it")
}

/// The run ended and policy restarts it after `delay`.
pub fn restart_after(how: &str, in_window: u32, spec: &ProgramSpec, delay: Duration) -> String {
    format!(
        "{how}; restart {in_window} of {} within {} in {}",
        spec.max_restarts,
        fmt_duration(spec.restart_window),
        fmt_duration(delay)
    )
}

/// A restart with no delay (no backoff state to show).
pub fn restarting_at_once(name: &str, why: &str) -> String {
    format!("{name}: restarting at once: {why}")
}

/// The budget is spent: the first half of the line.
fn exhausted(spec: &ProgramSpec, in_window: u32, how: &str) -> String {
    format!(
        "{} exhausted: {in_window} restarts in {} (last: {how})",
        spec.name,
        fmt_duration(spec.restart_window)
    )
}

/// The budget is spent and the container stops (also the termination message).
pub fn exhausted_exit(spec: &ProgramSpec, in_window: u32, how: &str, code: u8) -> String {
    format!(
        "{}; stopping the container with exit code {code}",
        exhausted(spec, in_window, how)
    )
}

/// The budget is spent and the program stays down.
pub fn exhausted_stop(spec: &ProgramSpec, in_window: u32, how: &str) -> String {
    format!(
        "{}; leaving it stopped (on_exhausted = \"stop\")",
        exhausted(spec, in_window, how)
    )
}

/// The shutdown reason after an exhaustion (the state change said the rest).
pub fn exhausted_reason(name: &str) -> String {
    format!("{name} exhausted its restart budget")
}

/// The shutdown reason after the main program ended.
pub fn main_ended(name: &str, code: i32) -> String {
    format!("main program {name} ended; stopping the container with its status {code}")
}

/// The container starts to stop.
pub fn shutting_down(reason: &str) -> String {
    format!("shutting down: {reason}")
}

/// The reason in a [`shutting_down`] line (for the run ledger), when `message` is one.
pub fn shutdown_reason_of(message: &str) -> Option<&str> {
    message.strip_prefix("shutting down: ")
}

/// A requested stop begins with the drain.
pub fn draining(drain: Duration) -> String {
    format!(
        "draining for {} before stopping: health and /readyz report not ready meanwhile",
        fmt_duration(drain)
    )
}

/// The drain is over.
pub const DRAINED: &str = "drain over; stopping the programs";

/// A second stop signal.
pub const FORCE_KILL: &str = "second stop signal: killing everything now";

/// The shutdown reason of a forced kill without a shutdown before it.
pub const FORCE_KILL_REASON: &str = "killing everything at once";

/// A program killed when the stop budget ran out.
pub const KILLED_OUT_OF_TIME: &str = "killed: out of time";

/// The container's stop budget ran out.
pub fn stop_budget_spent(budget: Duration) -> String {
    format!(
        "stop budget of {} spent; killing what is left",
        fmt_duration(budget)
    )
}

/// A group outlived its stop timeout.
pub fn sending_sigkill(spec: &ProgramSpec, pgid: i32) -> String {
    // With a pre_stop hook, the stop time counts from the hook's start.
    let since = match spec.pre_stop {
        Some(_) => format!(
            "its stop began (pre_stop hook, then {})",
            spec.stop_signal.as_str()
        ),
        None => spec.stop_signal.as_str().to_string(),
    };
    format!(
        "{}: still running {} after {since}; sending SIGKILL to process group {pgid}",
        spec.name,
        fmt_duration(spec.stop_timeout),
    )
}

/// Group members outlived SIGKILL (uninterruptible sleep).
pub fn group_survived_kill(name: &str, pgid: i32, grace: Duration) -> String {
    format!(
        "{name}: process group {pgid} survived SIGKILL for {}; moving on without it",
        fmt_duration(grace)
    )
}

/// The leader itself outlived SIGKILL (`pid`: the leader, when still known).
pub fn leader_survived_kill(name: &str, pid: Option<i32>, grace: Duration) -> String {
    let who = pid.map_or_else(|| "its main process".to_string(), |p| format!("pid {p}"));
    format!(
        "{name}: {who} survived SIGKILL for {}; waiting for it to end",
        fmt_duration(grace)
    )
}

/// A stop began: why, and the signal sent.
pub fn stop_sent(why: &str, signal: Signal, pgid: i32) -> String {
    format!("{why}; sent {} to process group {pgid}", signal.as_str())
}

/// Why a program stops during a shutdown.
pub const CONTAINER_STOPPING: &str = "container stopping";

/// A program brought back by a restart by hand.
pub const RESTARTED_BY_HAND: &str = "restarted by hand";

/// A program started by hand.
pub const STARTED_BY_HAND: &str = "started by hand";

/// A program added or changed by a reload, starting.
pub const NEW_BY_RELOAD: &str = "new or changed by a reload";

/// What a waiting program waits for, once said to wait.
pub fn waiting_for(name: &str, why: &str) -> String {
    format!("{name}: waiting for {why}")
}

/// The reason shown when entering `waiting`.
pub fn waits_for(why: &str) -> String {
    format!("waiting for {why}")
}

/// The dependency that does not hold: `db to be ready (db is starting)`.
pub fn unmet_dependency(dep: &str, want: &str, state: State, down_reason: Option<&str>) -> String {
    match down_reason {
        Some(r) => format!("{dep} to be {want} ({dep} is {state}: {r})"),
        None => format!("{dep} to be {want} ({dep} is {state})"),
    }
}

/// A reload's one-line summary.
pub fn reload_summary(
    added: &[String],
    removed: &[String],
    changed: &[String],
    unchanged: usize,
    fixed_keys: &[&str],
) -> String {
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let mut summary = format!(
        "added {}; removed {}; changed {}; {unchanged} unchanged",
        list(added),
        list(removed),
        list(changed),
    );
    for key in fixed_keys {
        summary.push_str(&format!(
            "; [init] {key} changed: it takes effect at the next start"
        ));
    }
    summary
}

/// A reload begins.
pub fn reloading(summary: &str) -> String {
    format!("reloading: {summary}")
}

/// Why a program past a limit is restarted, as its stop line says.
pub fn limit_restart(over: &str) -> String {
    format!("over its limit: {over}; restarting it (counts toward its restart budget)")
}

/// A byte count as people read it: `1.21 GiB`, `1 GiB`, `640 KiB`, `900 B`.
pub fn fmt_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && n >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    let value = n as f64 / (1u64 << (10 * unit)) as f64;
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sentences name a pid as a number, never as Rust's `Some(…)`.
    #[test]
    fn pids_read_as_numbers() {
        let grace = Duration::from_secs(2);
        let known = leader_survived_kill("api", Some(1201), grace);
        assert!(known.contains("api: pid 1201 survived"), "{known}");
        let unknown = leader_survived_kill("api", None, grace);
        assert!(!unknown.contains("None"), "{unknown}");
    }

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(fmt_bytes(1 << 30), "1 GiB");
        assert_eq!(fmt_bytes(1_299_227_607), "1.21 GiB");
        assert_eq!(fmt_bytes(640 << 10), "640 KiB");
        assert_eq!(fmt_bytes(900), "900 B");
        assert_eq!(fmt_bytes(u64::MAX), "16777216 TiB");
    }
}

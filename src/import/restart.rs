//! The restart budget: supervisord's `startretries` (failed starts in a row before FATAL) as
//! ctrlinit's `max_restarts` within a `restart_window` that holds that many quick failures, and
//! what exhaustion does (`on_exhausted`).

use super::globals::Globals;
use super::ini::Opt;
use super::keys::{Got, Keys};
use super::toml_out::{Table, Val};

/// `startretries` as `max_restarts`, in a `restart_window` that counts quick failures: the time
/// `startretries` failed starts take (each run up to `startsecs`, with ctrlinit's backoff between
/// them), so that a program that ran longer and then failed is restarted again and again, as
/// supervisord restarts a program that reached RUNNING.
pub fn budget(
    k: &mut Keys<'_>,
    t: &mut Table,
    retries: Option<(Got<i64>, Opt)>,
    startsecs: i64,
    globals: &Globals,
) {
    let (retries, opt) = match retries {
        Some((Got::Now(n), o)) => (n.max(0), Some(o)),
        Some((Got::Later(text), o)) => {
            t.set_with(
                "max_restarts",
                Val::Str(text.to_ctrlinit()),
                "startretries, read when ctrlinit loads",
            );
            k.note(
                &o,
                "restart_window is not written: it depends on the number",
                "set restart_window to how long quick failures take",
            );
            on_exhausted(t, globals);
            return;
        }
        None => (3, None),
    };
    let counted = retries.max(1) as u32;
    let secs = restart_window(counted, startsecs.max(0) as u64);
    let default = if opt.is_some() {
        ""
    } else {
        " (supervisord's default)"
    };
    t.set_with(
        "max_restarts",
        Val::Int(counted as i64),
        &format!("startretries = {retries}{default}: failed starts in a row before FATAL"),
    );
    if startsecs <= 0
        && let Some(o) = k.opt("startsecs").cloned()
    {
        // supervisord counted every start as a success, so it never reached FATAL.
        k.note(
            &o,
            format!(
                "0 with autorestart: supervisord took every start for a success and restarted it forever; the written budget stops it after {} runs in {secs}s (max_restarts = {counted}, restart_window = \"{secs}s\"), then on_exhausted applies",
                counted + 1
            ),
            "to restart it for good, raise max_restarts (or shorten restart_window) in its table",
        );
    }
    t.set_with(
        "restart_window",
        Val::Str(format!("{secs}s")),
        &format!(
            "holds {counted} quick failure{} (startsecs = {startsecs}s, with ctrlinit's backoff); a longer run is restarted again, as supervisord did",
            if counted == 1 { "" } else { "s" }
        ),
    );
    if retries == 0
        && let Some(o) = opt
    {
        k.note(
            &o,
            "0: supervisord gave up at the first failed start; ctrlinit tries once more (max_restarts = 0 would never restart it, even after a long run)",
            "",
        );
    }
    on_exhausted(t, globals);
}

/// `on_exhausted`: "stop", as FATAL left a program down, or "exit" when an event listener ended
/// supervisord on FATAL.
pub fn on_exhausted(t: &mut Table, globals: &Globals) {
    match &globals.exit_on_fatal {
        Some(listener) => t.set_with(
            "on_exhausted",
            Val::Str("exit".into()),
            &format!("[eventlistener:{listener}] ended supervisord when a program was FATAL: ctrlinit ends the container"),
        ),
        None => t.set_with(
            "on_exhausted",
            Val::Str("stop".into()),
            "supervisord left a FATAL program down; \"exit\" would end the container instead",
        ),
    }
}

/// The restart window for `retries` failed starts of `startsecs` each: their runs, ctrlinit's
/// default backoff between them (500ms doubling to 30s), and a second of margin.
pub fn restart_window(retries: u32, startsecs: u64) -> u64 {
    let mut delay = 0.5f64;
    let mut total = 0.0;
    for _ in 0..retries {
        total += delay;
        delay = (delay * 2.0).min(30.0);
    }
    (retries as f64 * startsecs as f64 + total).ceil() as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_covers_the_quick_failures() {
        // 3 runs of 1s after the first, and 0.5s + 1s + 2s of backoff: 6.5s, then a second.
        assert_eq!(restart_window(3, 1), 8);
        assert_eq!(restart_window(1, 0), 2);
        // 10 runs of 10s, and 0.5 + 1 + 2 + 4 + 8 + 16 + 4 × 30 = 151.5s of backoff.
        assert_eq!(restart_window(10, 10), 253);
    }
}

//! The `[program.NAME.health]` table: a liveness check, its thresholds, and the sd_notify
//! watchdog.

use super::checks::{http_target, tcp_target};
use super::reader::{Reader, Value, get, join};
use super::spec::{HealthProbe, HealthSettings, OnHealthFailure};

/// The keys of a `[program.NAME.health]` table.
pub(super) const HEALTH_KEYS: &[&str] = &[
    "check",
    "interval",
    "timeout",
    "failures",
    "successes",
    "start_period",
    "on_failure",
    "watchdog",
];

const CHECK_KINDS: &[&str] = &["http", "tcp", "exec", "heartbeat", "silence"];

const CHECK_FIX: &str = r#"use one of { http = "http://127.0.0.1:8080/healthz" }, { tcp = "127.0.0.1:8080" }, { exec = ["cmd", "arg"] }, { heartbeat = "/run/x.beat", max_age = "30s" }, { silence = "120s" }"#;

/// Reads `[program.NAME.health]` at `path`.
pub(super) fn read_health(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Option<HealthSettings> {
    let table = r.table(v, path)?;
    r.reject_unknown_keys(table, path, HEALTH_KEYS);
    let mut h = HealthSettings::default();
    let key = |k: &str| join(path, k);
    // Every key is read, so every error in the table is reported at once.
    let mut ok = true;
    if let Some(v) = get(table, "check") {
        h.check = read_check(r, v, &key("check"));
        ok &= h.check.is_some();
    }
    for (name, slot) in [
        ("interval", &mut h.interval),
        ("timeout", &mut h.timeout),
        ("start_period", &mut h.start_period),
    ] {
        if let Some(v) = get(table, name) {
            match r.duration(v, &key(name)) {
                Some(d) => *slot = d,
                None => ok = false,
            }
        }
    }
    for (name, slot) in [
        ("failures", &mut h.failures),
        ("successes", &mut h.successes),
    ] {
        if let Some(v) = get(table, name) {
            match r.integer(v, &key(name), 1..1001) {
                Some(n) => *slot = n as u32,
                None => ok = false,
            }
        }
    }
    if let Some(v) = get(table, "on_failure") {
        let choices = [
            ("restart", OnHealthFailure::Restart),
            ("mark", OnHealthFailure::Mark),
        ];
        match r.choice(v, &key("on_failure"), &choices) {
            Some(c) => h.on_failure = c,
            None => ok = false,
        }
    }
    if let Some(v) = get(table, "watchdog") {
        h.watchdog = r.positive_duration(v, &key("watchdog"), "30s");
        ok &= h.watchdog.is_some();
    }
    if !ok {
        return None;
    }
    if h.check.is_none() && h.watchdog.is_none() {
        r.error(
            &v.span(),
            path,
            "a health table needs a check or a watchdog".into(),
            Some(format!(
                "add check = {{ tcp = \"127.0.0.1:8080\" }} (or another kind: {}), or watchdog = \"30s\" for a program that sends WATCHDOG=1",
                CHECK_KINDS.join(", ")
            )),
        );
        return None;
    }
    if h.interval.is_zero() {
        let span = get(table, "interval").map_or(v.span(), |iv| iv.span());
        r.error(
            &span,
            &key("interval"),
            "a check interval of 0 would check without pause".into(),
            Some("use an interval such as \"10s\"".into()),
        );
        return None;
    }
    Some(h)
}

/// `check = { KIND = … }`.
fn read_check(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Option<HealthProbe> {
    let table = r.table(v, path)?;
    let mut known = CHECK_KINDS.to_vec();
    known.push("max_age");
    r.reject_unknown_keys(table, path, &known);
    let kinds: Vec<&str> = CHECK_KINDS
        .iter()
        .copied()
        .filter(|k| get(table, k).is_some())
        .collect();
    if kinds.len() != 1 {
        r.error(
            &v.span(),
            path,
            format!(
                "a health check needs exactly one probe, found {}",
                kinds.len()
            ),
            Some(CHECK_FIX.into()),
        );
        return None;
    }
    let kind = kinds[0];
    let key = join(path, kind);
    let pv = get(table, kind)?;
    if kind != "heartbeat"
        && let Some(extra) = get(table, "max_age")
    {
        r.error(
            &extra.span(),
            &join(path, "max_age"),
            format!("max_age belongs to a heartbeat check, not to {kind}"),
            Some(
                "remove max_age, or use { heartbeat = \"/run/x.beat\", max_age = \"30s\" }".into(),
            ),
        );
        return None;
    }
    Some(match kind {
        "http" => HealthProbe::Http(http_target(r, pv, &key)?),
        "tcp" => HealthProbe::Tcp(tcp_target(r, pv, &key)?),
        "exec" => HealthProbe::Exec(r.command(pv, &key)?),
        "heartbeat" => {
            let file = crate::sys::init::resolve(r.string(pv, &key)?);
            let Some(age) = get(table, "max_age") else {
                r.error(
                    &v.span(),
                    path,
                    "a heartbeat check needs max_age: how old the file may get".into(),
                    Some(format!(
                        "write {{ heartbeat = {:?}, max_age = \"30s\" }}",
                        file.display().to_string()
                    )),
                );
                return None;
            };
            let max_age = r.positive_duration(age, &join(path, "max_age"), "30s")?;
            HealthProbe::Heartbeat {
                path: file,
                max_age,
            }
        }
        _ => HealthProbe::Silence(r.positive_duration(pv, &key, "30s")?),
    })
}

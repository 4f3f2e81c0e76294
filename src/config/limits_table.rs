//! Reading `[program.NAME.limits]` (see [`super::limits`] for what the keys mean): every error
//! in the table at once, each with its line, key and fix.

use super::limits::{DEFAULT_INTERVAL, Limits, MAX_BYTES, MAX_FDS, MAX_PIDS, MIN_INTERVAL};
use super::reader::{Reader, Value, get, join};

/// The keys of a `[program.NAME.limits]` table.
pub(super) const LIMITS_KEYS: &[&str] = &["memory", "fds", "interval", "memory_max", "pids_max"];

/// Reads `[program.NAME.limits]` at `path`; every error in the table is reported at once.
pub(super) fn read_limits(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Option<Limits> {
    let table = r.table(v, path)?;
    r.reject_unknown_keys(table, path, LIMITS_KEYS);
    let key = |k: &str| join(path, k);
    let mut ok = true;
    let mut limits = Limits {
        memory: None,
        fds: None,
        interval: DEFAULT_INTERVAL,
        memory_max: None,
        pids_max: None,
    };
    for (name, slot, zero) in [
        ("memory", &mut limits.memory, "restart the program at once"),
        (
            "memory_max",
            &mut limits.memory_max,
            "let the program run nothing",
        ),
    ] {
        if let Some(v) = get(table, name) {
            *slot = bytes(r, v, &key(name), zero);
            ok &= slot.is_some();
        }
    }
    for (name, slot, max, example, zero) in [
        (
            "fds",
            &mut limits.fds,
            MAX_FDS,
            "20000",
            "restart the program at once",
        ),
        (
            "pids_max",
            &mut limits.pids_max,
            MAX_PIDS,
            "512",
            "let the program start no process",
        ),
    ] {
        if let Some(v) = get(table, name) {
            *slot = count(r, v, &key(name), (max, example), zero);
            ok &= slot.is_some();
        }
    }
    if let Some(v) = get(table, "interval") {
        match r.duration(v, &key("interval")) {
            Some(d) if d >= MIN_INTERVAL => limits.interval = d,
            Some(_) => {
                r.error(
                    &v.span(),
                    &key("interval"),
                    "limits are looked at no more often than once a second".into(),
                    Some("use an interval of \"1s\" or more, such as \"10s\"".into()),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(limits)
}

/// A memory figure: a size from 1 byte to [`MAX_BYTES`]; `zero` says what 0 would do.
fn bytes(r: &mut Reader<'_>, v: &Value<'_>, key: &str, zero: &str) -> Option<u64> {
    // A plain integer is read wide, so 10^20 is told as too large rather than as no number.
    let n = match wide_integer(v) {
        Some(n) => n.clamp(0, u64::MAX as i128) as u64,
        None => r.size(v, key)?,
    };
    let problem = if n == 0 {
        format!("a limit of 0 would {zero}")
    } else if n > MAX_BYTES {
        "a limit over 1 PiB is no limit on any machine".into()
    } else {
        return Some(n);
    };
    r.error(
        &v.span(),
        key,
        problem,
        Some(r#"use a size such as "512MiB" or "2GiB", or remove the key for no limit"#.into()),
    );
    None
}

/// A count from 1 to `max`; `zero` says what 0 would do.
fn count(
    r: &mut Reader<'_>,
    v: &Value<'_>,
    key: &str,
    (max, example): (u64, &str),
    zero: &str,
) -> Option<u64> {
    let n = match wide_integer(v) {
        Some(n) => n,
        None => i128::from(r.integer(v, key, i64::MIN..i64::MAX)?),
    };
    if n >= 1 && n <= max as i128 {
        return Some(n as u64);
    }
    let problem = if n < 1 {
        format!("a limit of {n} would {zero}")
    } else {
        format!("{n} is over the largest the kernel allows ({max})")
    };
    r.error(
        &v.span(),
        key,
        problem,
        Some(format!(
            "use a count from 1 to {max}, such as {example}, or remove the key for no limit"
        )),
    );
    None
}

/// A TOML integer, read as wide as 10^20 and more (`None`: not an integer literal).
fn wide_integer(v: &Value<'_>) -> Option<i128> {
    match v.get_ref() {
        toml::de::DeValue::Integer(i) => {
            // Too wide even for i128: as good as infinite.
            Some(i128::from_str_radix(i.as_str(), i.radix()).unwrap_or(i128::MAX))
        }
        _ => None,
    }
}

//! The `[init]` table: settings of the init itself.

use std::path::PathBuf;

use super::identity::resolve_group;
use toml::de::DeTable;

use super::reader::{Reader, Value, get};
use super::spec::{ConsoleMode, InitSettings, OrphanPolicy};

/// The keys of `[init]`.
pub(super) const INIT_KEYS: &[&str] = &[
    "stop_timeout",
    "exit_code",
    "log_dir",
    "crash_dir",
    "console",
    "socket",
    "socket_group",
    "max_cores",
    "max_reports",
    "crash_max_size",
    "log_level",
    "inherit_env",
    "log_mode",
    "crash_mode",
    "http",
    "notify_socket",
    "main_stdio",
    "drain",
    "orphans",
    "orphan_grace",
    "network",
    "ledger",
    "ledger_max_size",
    "syslog",
    "syslog_stream",
];

/// Reads `[init]`, recording errors; `None` when it held no usable table.
pub(super) fn read_init(r: &mut Reader<'_>, v: &Value<'_>) -> Option<InitSettings> {
    let table = r.table(v, "init")?;
    r.reject_unknown_keys(table, "init", INIT_KEYS);
    let mut init = InitSettings::default();
    if let Some(v) = get(table, "stop_timeout") {
        init.stop_timeout = r
            .duration(v, "init.stop_timeout")
            .unwrap_or(init.stop_timeout);
    }
    if let Some(v) = get(table, "exit_code")
        && let Some(n) = r.integer(v, "init.exit_code", 1..256)
    {
        init.exit_code = n as u8;
    }
    if let Some(v) = get(table, "inherit_env") {
        init.inherit_env = r.boolean(v, "init.inherit_env").unwrap_or(true);
    }
    read_places(r, table, &mut init);
    if let Some(v) = get(table, "http") {
        init.http = super::checks::tcp_target(r, v, "init.http");
    }
    if let Some(v) = get(table, "drain")
        && let Some(d) = r.duration(v, "init.drain")
    {
        if d >= init.stop_timeout {
            r.error(
                &v.span(),
                "init.drain",
                format!(
                    "the drain is part of the stop budget (stop_timeout = {}s), so it must be shorter",
                    init.stop_timeout.as_secs_f64()
                ),
                Some("lower drain, or raise [init] stop_timeout (and the engine's grace period with it)".into()),
            );
        } else {
            init.drain = d;
        }
    }
    if let Some(v) = get(table, "orphans") {
        let choices = [("reap", OrphanPolicy::Reap), ("kill", OrphanPolicy::Kill)];
        init.orphans = r
            .choice(v, "init.orphans", &choices)
            .unwrap_or(init.orphans);
    }
    if let Some(v) = get(table, "orphan_grace")
        && let Some(d) = r.duration(v, "init.orphan_grace")
    {
        init.orphan_grace = d;
    }
    if let Some(v) = get(table, "main_stdio") {
        init.main_stdio =
            super::schema::read_stdio(r, v, "init.main_stdio").unwrap_or(init.main_stdio);
    }
    read_output(r, table, &mut init);
    read_crash_limits(r, table, &mut init);
    if let Some(v) = get(table, "network") {
        init.network = super::network::read_network(r, v);
    }
    init.syslog = read_socket_path(r, table, "syslog");
    init.syslog_stream = read_socket_path(r, table, "syslog_stream");
    Some(init)
}

/// Where things go: `log_dir`, `crash_dir`, `socket`, `socket_group`.
fn read_places(r: &mut Reader<'_>, table: &DeTable<'_>, init: &mut InitSettings) {
    let path = |r: &mut Reader<'_>, key: &str, default: &PathBuf| {
        get(table, key).map_or_else(
            || default.clone(),
            |v| {
                r.string(v, &format!("init.{key}"))
                    .map_or_else(|| default.clone(), crate::sys::init::resolve)
            },
        )
    };
    init.chosen.log_dir = get(table, "log_dir").is_some();
    init.chosen.crash_dir = get(table, "crash_dir").is_some();
    init.chosen.socket = get(table, "socket").is_some();
    init.log_dir = path(r, "log_dir", &init.log_dir);
    init.crash_dir = path(r, "crash_dir", &init.crash_dir);
    init.socket = path(r, "socket", &init.socket);
    if get(table, "notify_socket").is_some() {
        init.notify_socket = Some(path(r, "notify_socket", &init.notify_socket_path()));
    }
    if let Some(v) = get(table, "socket_group") {
        init.socket_group = r.string(v, "init.socket_group");
        if let Some(g) = &init.socket_group
            && resolve_group(g).is_none()
        {
            r.error(
                &v.span(),
                "init.socket_group",
                format!("unknown group {g:?}"),
                Some("name a group from /etc/group, or a numeric gid".into()),
            );
        }
    }
}

/// What ctrlinit shows: `console`, `log_level`.
fn read_output(r: &mut Reader<'_>, table: &DeTable<'_>, init: &mut InitSettings) {
    if let Some(v) = get(table, "console") {
        let choices = [
            ("prefix", ConsoleMode::Prefix),
            ("json", ConsoleMode::Json),
            ("plain", ConsoleMode::Plain),
            ("off", ConsoleMode::Off),
        ];
        init.console = r
            .choice(v, "init.console", &choices)
            .unwrap_or(init.console);
    }
    if let Some(v) = get(table, "log_level") {
        let choices = [
            ("error", "error"),
            ("warn", "warn"),
            ("info", "info"),
            ("debug", "debug"),
            ("trace", "trace"),
        ];
        if let Some(level) = r.choice(v, "init.log_level", &choices) {
            init.log_level = Some(level.to_string());
        }
    }
}

/// A file mode written as octal (`"0640"`, or `0o640`): ctrlinit must keep read and write for
/// itself, and nothing beyond `0777`.
fn read_mode(r: &mut Reader<'_>, v: &Value<'_>, key: &str) -> Option<u32> {
    let digits = match v.get_ref() {
        toml::de::DeValue::Integer(i) => i.as_str().to_string(),
        _ => r.string(v, key)?,
    };
    match u32::from_str_radix(digits.trim().trim_start_matches("0o"), 8) {
        Ok(m) if m <= 0o777 && m & 0o600 == 0o600 => Some(m),
        _ => {
            r.error(
                &v.span(),
                key,
                format!("{digits:?} is not a file mode ctrlinit can write files with"),
                Some(r#"write an octal mode that keeps read and write for the owner, such as "0640" or "0600""#.into()),
            );
            None
        }
    }
}

/// What the crash directory keeps: `max_cores`, `max_reports`, `crash_max_size`.
fn read_crash_limits(r: &mut Reader<'_>, table: &DeTable<'_>, init: &mut InitSettings) {
    if let Some(v) = get(table, "max_cores") {
        init.max_cores = r
            .integer(v, "init.max_cores", 0..100_000)
            .map_or(init.max_cores, |n| n as u32);
    }
    if let Some(v) = get(table, "max_reports") {
        init.max_reports = r
            .integer(v, "init.max_reports", 0..100_000)
            .map_or(init.max_reports, |n| n as u32);
    }
    if let Some(v) = get(table, "log_mode") {
        init.log_mode = read_mode(r, v, "init.log_mode").unwrap_or(init.log_mode);
    }
    if let Some(v) = get(table, "crash_mode") {
        init.crash_mode = read_mode(r, v, "init.crash_mode").unwrap_or(init.crash_mode);
    }
    if let Some(v) = get(table, "ledger") {
        init.ledger = r.boolean(v, "init.ledger").unwrap_or(init.ledger);
    }
    if let Some(v) = get(table, "ledger_max_size") {
        init.ledger_max_size = r
            .size(v, "init.ledger_max_size")
            .unwrap_or(init.ledger_max_size)
            .max(4096);
    }
    if let Some(v) = get(table, "crash_max_size") {
        init.crash_max_size = r
            .size(v, "init.crash_max_size")
            .unwrap_or(init.crash_max_size);
    }
}

/// `syslog` or `syslog_stream`: an absolute path a unix socket can be bound at; `""` or absent:
/// off.
fn read_socket_path(r: &mut Reader<'_>, table: &DeTable<'_>, key: &str) -> Option<PathBuf> {
    let v = get(table, key)?;
    let name = format!("init.{key}");
    let s = r.string(v, &name)?;
    if s.is_empty() {
        return None;
    }
    let fault = if !s.starts_with('/') {
        Some("is not an absolute path")
    } else if s.len() >= crate::sys::socket_file::SUN_PATH {
        Some("is too long for a unix socket (at most 106 bytes)")
    } else if s.contains('\0') {
        Some("holds a NUL byte")
    } else {
        None
    };
    if let Some(fault) = fault {
        r.error(
            &v.span(),
            &name,
            format!("{s:?} {fault}"),
            Some(format!(
                "give an absolute path such as {key} = \"/dev/log\", or \"\" for none"
            )),
        );
        return None;
    }
    Some(PathBuf::from(s))
}

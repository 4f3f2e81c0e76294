//! The config schema of a program: reads one `[program.NAME]` table into a typed draft. The
//! `[init]` table is `init_table`'s, identities `identity`'s, checks `checks`'; cross-file checks
//! (duplicates, dependencies, cycles) happen in `load`.

use std::ops::Range;

use nix::sys::resource::Resource;
use toml::de::{DeTable, DeValue};

use super::checks::{check_uptime_fits, read_ready};
use super::exec_limits::{KeyLines, too_long, too_long_error};
use super::health::read_health;
use super::identity::{IdentityKeys, read_run_as};
use super::names::{name_problem, short};
use super::reader::{Reader, Value, get, join};
use super::spec::{
    Backoff, Condition, Kind, LogSettings, OnExhausted, ProgramSpec, RestartPolicy, RlimitSetting,
    StderrMode, StdioMode,
};
use super::supervisord_keys::supervisord_key;

/// The keys of a `[program.NAME.log]` table.
pub(super) const LOG_KEYS: &[&str] = &[
    "console",
    "file",
    "stderr",
    "max_size",
    "keep",
    "timestamps",
];

/// The keys of a `[program.NAME]` table.
pub(super) const PROGRAM_KEYS: &[&str] = &[
    "command",
    "type",
    "autostart",
    "main",
    "depends_on",
    "after",
    "member_of",
    "ready",
    "ready_timeout",
    "health",
    "restart",
    "success_codes",
    "backoff",
    "max_restarts",
    "restart_window",
    "on_exhausted",
    "finish",
    "pre_stop",
    "pre_stop_timeout",
    "stop_signal",
    "stop_timeout",
    "user",
    "group",
    "supplementary_groups",
    "inherit_env",
    "stdio",
    "pidfile",
    "workdir",
    "env",
    "env_file",
    "umask",
    "rlimits",
    "log",
    "core_dumps",
    "max_cores",
    "max_reports",
    "limits",
    // Read by `instances.rs`, before the rest of the table.
    "instances",
];

/// A dependency as written; its condition is settled once every program's type is known.
#[derive(Debug, Clone)]
pub(super) struct DependencyDraft {
    pub name: String,
    pub condition: Option<Condition>,
    pub restart: bool,
    /// Line of the dependency's name, for messages.
    pub line: usize,
}

/// A program read from one file, before cross-file checks.
pub(super) struct ProgramDraft {
    pub spec: ProgramSpec,
    pub deps: Vec<DependencyDraft>,
    /// `after`: ordering only (no condition, no restart).
    pub after: Vec<DependencyDraft>,
    pub max_cores: Option<u32>,
    pub max_reports: Option<u32>,
    /// `inherit_env`, when the table sets it (else `[init]`'s).
    pub inherit_env: Option<bool>,
    /// Where its keys were written, for the checks made once every file is read.
    pub lines: KeyLines,
}

/// Reads one `[program.NAME]` table.
pub(super) fn read_program(
    r: &mut Reader<'_>,
    name: &str,
    name_span: Range<usize>,
    v: &Value<'_>,
) -> Option<ProgramDraft> {
    // A name of any length (a mistake) is cut in keys, as in messages.
    let path = format!("program.{}", short(name));
    if let Some((message, fix)) = name_problem(name) {
        r.error(&name_span, &path, message, Some(fix));
    }
    let table = r.table(v, &path)?;
    r.reject_unknown_keys_with(table, &path, PROGRAM_KEYS, supervisord_key);
    let key = |k: &str| join(&path, k);

    // `forking` is a service whose launcher forks the daemon into the background.
    let (kind, forking) = match get(table, "type") {
        Some(v) => r
            .choice(
                v,
                &key("type"),
                &[
                    ("service", (Kind::Service, false)),
                    ("oneshot", (Kind::Oneshot, false)),
                    ("forking", (Kind::Service, true)),
                ],
            )
            .unwrap_or((Kind::Service, false)),
        None => (Kind::Service, false),
    };
    let command = match get(table, "command") {
        Some(v) => r.command(v, &key("command")),
        None => {
            r.error(
                &name_span,
                &key("command"),
                "a program needs a command".into(),
                Some(r#"add command = ["/path/to/program", "arg"]"#.into()),
            );
            None
        }
    };
    let mut spec = ProgramSpec::new(name, command.unwrap_or_default(), kind);
    spec.defined_at = r.location(&name_span);
    read_forking(r, table, &path, forking, &mut spec);

    read_flags(r, table, &path, &mut spec);
    read_restart(r, table, &path, &mut spec);
    read_stop(r, table, &path, &mut spec);
    read_environment(r, table, &path, &mut spec);
    read_readiness(r, table, &path, &mut spec);
    if let Some(v) = get(table, "log") {
        spec.log = read_log(r, v, &key("log"));
    }
    if let Some(v) = get(table, "limits") {
        spec.limits = super::limits_table::read_limits(r, v, &key("limits"));
    }
    if let Some(v) = get(table, "core_dumps") {
        spec.core_dumps = r.boolean(v, &key("core_dumps")).unwrap_or(false);
    }
    let max_cores = get(table, "max_cores")
        .and_then(|v| r.integer(v, &key("max_cores"), 0..100_000))
        .map(|n| n as u32);
    let max_reports = get(table, "max_reports")
        .and_then(|v| r.integer(v, &key("max_reports"), 0..100_000))
        .map(|n| n as u32);
    let (deps, after) = read_order(r, table, &path);
    let inherit_env = get(table, "inherit_env").and_then(|v| r.boolean(v, &key("inherit_env")));
    let lines = key_lines(r, table, &name_span);
    Some(ProgramDraft {
        spec,
        deps,
        after,
        max_cores,
        max_reports,
        inherit_env,
        lines,
    })
}

/// Where the keys checked once every file is read were written.
fn key_lines(r: &Reader<'_>, table: &DeTable<'_>, name_span: &Range<usize>) -> KeyLines {
    let line = |k: &str| get(table, k).map(|v| r.line_of(v.span().start));
    KeyLines {
        table: r.line_of(name_span.start),
        command: line("command"),
        env: line("env"),
        env_file: line("env_file"),
    }
}

/// `ready` and `ready_timeout`.
fn read_readiness(r: &mut Reader<'_>, table: &DeTable<'_>, path: &str, spec: &mut ProgramSpec) {
    let key = |k: &str| join(path, k);
    if let Some(v) = get(table, "ready") {
        spec.ready = read_ready(r, v, &key("ready"));
        if spec.ready.is_some() && spec.kind == Kind::Oneshot {
            r.error(
                &v.span(),
                &key("ready"),
                "a oneshot has no readiness check: it is ready when it has completed".into(),
                Some("remove `ready`, or make this program a service".into()),
            );
        }
    }
    if let Some(v) = get(table, "ready_timeout") {
        spec.ready_timeout = r
            .duration(v, &key("ready_timeout"))
            .unwrap_or(spec.ready_timeout);
    }
    if let (Some(v), Some(check)) = (get(table, "ready"), &spec.ready) {
        check_uptime_fits(r, v, &key("ready"), check, spec.ready_timeout);
    }
    if let Some(v) = get(table, "health") {
        spec.health = read_health(r, v, &key("health"));
        if spec.health.is_some() && spec.kind == Kind::Oneshot {
            r.error(
                &v.span(),
                &key("health"),
                "a oneshot has no liveness check: it runs to completion".into(),
                Some("remove the health table, or make this program a service".into()),
            );
        }
    }
}

fn read_flags(r: &mut Reader<'_>, table: &DeTable<'_>, path: &str, spec: &mut ProgramSpec) {
    if let Some(v) = get(table, "autostart") {
        spec.autostart = r.boolean(v, &join(path, "autostart")).unwrap_or(true);
    }
    if let Some(v) = get(table, "main") {
        spec.main = r.boolean(v, &join(path, "main")).unwrap_or(false);
    }
    if let Some(v) = get(table, "stdio") {
        spec.stdio = read_stdio(r, v, &join(path, "stdio")).unwrap_or(spec.stdio);
    }
    if let Some(v) = get(table, "member_of") {
        let key = join(path, "member_of");
        spec.member_of = r.string(v, &key).filter(|name| match name_problem(name) {
            Some((message, fix)) => {
                r.error(&v.span(), &key, message, Some(fix));
                false
            }
            None => true,
        });
    }
}

/// `type = "forking"` and its `pidfile`: one needs the other.
fn read_forking(
    r: &mut Reader<'_>,
    table: &DeTable<'_>,
    path: &str,
    forking: bool,
    spec: &mut ProgramSpec,
) {
    let key = |k: &str| join(path, k);
    let pidfile = get(table, "pidfile");
    match (forking, pidfile) {
        (true, Some(v)) => spec.pidfile = r.string(v, &key("pidfile")).map(crate::sys::init::resolve),
        (true, None) => {
            let span = get(table, "type").map_or(0..0, |v| v.span());
            r.error(
                &span,
                &key("type"),
                "a forking program needs a pidfile: it is how ctrlinit finds the daemon once its launcher exits".into(),
                Some(r#"add pidfile = "/run/NAME.pid" (where the daemon writes its pid)"#.into()),
            );
        }
        (false, Some(v)) => r.error(
            &v.span(),
            &key("pidfile"),
            "a pidfile is only read for type = \"forking\"".into(),
            Some("remove pidfile, or set type = \"forking\" for a daemon that forks into the background".into()),
        ),
        (false, None) => {}
    }
}

/// `stdio = "pipe" | "inherit"`.
pub(super) fn read_stdio(r: &mut Reader<'_>, v: &Value<'_>, key: &str) -> Option<StdioMode> {
    let choices = [("pipe", StdioMode::Pipe), ("inherit", StdioMode::Inherit)];
    r.choice(v, key, &choices)
}

fn read_restart(r: &mut Reader<'_>, table: &DeTable<'_>, path: &str, spec: &mut ProgramSpec) {
    let key = |k: &str| join(path, k);
    if let Some(v) = get(table, "restart") {
        let choices = [
            ("always", RestartPolicy::Always),
            ("on-failure", RestartPolicy::OnFailure),
            ("never", RestartPolicy::Never),
        ];
        spec.restart = r
            .choice(v, &key("restart"), &choices)
            .unwrap_or(spec.restart);
    }
    if let Some(v) = get(table, "success_codes") {
        if let DeValue::Array(items) = v.get_ref() {
            let codes: Vec<i32> = items
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    r.integer(c, &format!("{}[{i}]", key("success_codes")), 0..256)
                })
                .map(|n| n as i32)
                .collect();
            spec.success_codes = codes;
        } else {
            r.error(
                &v.span(),
                &key("success_codes"),
                "expected an array of exit codes".into(),
                Some("write e.g. success_codes = [0, 2]".into()),
            );
        }
    }
    if let Some(v) = get(table, "backoff") {
        spec.backoff = read_backoff(r, v, &key("backoff"));
    }
    if let Some(v) = get(table, "max_restarts") {
        spec.max_restarts = r
            .integer(v, &key("max_restarts"), 0..1_000_000)
            .map_or(spec.max_restarts, |n| n as u32);
    }
    if let Some(v) = get(table, "restart_window") {
        spec.restart_window = r
            .duration(v, &key("restart_window"))
            .unwrap_or(spec.restart_window);
    }
    if let Some(v) = get(table, "on_exhausted") {
        let choices = [("exit", OnExhausted::Exit), ("stop", OnExhausted::Stop)];
        spec.on_exhausted = r
            .choice(v, &key("on_exhausted"), &choices)
            .unwrap_or(spec.on_exhausted);
    }
}

fn read_backoff(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Backoff {
    let mut backoff = Backoff::default();
    let Some(table) = r.table(v, path) else {
        return backoff;
    };
    r.reject_unknown_keys(table, path, &["initial", "max", "factor"]);
    if let Some(v) = get(table, "initial") {
        backoff.initial = r
            .duration(v, &join(path, "initial"))
            .unwrap_or(backoff.initial);
    }
    if let Some(v) = get(table, "max") {
        backoff.max = r.duration(v, &join(path, "max")).unwrap_or(backoff.max);
    }
    if let Some(v) = get(table, "factor") {
        match r.float(v, &join(path, "factor")) {
            Some(f) if (1.0..=100.0).contains(&f) => backoff.factor = f,
            Some(_) => r.error(
                &v.span(),
                &join(path, "factor"),
                "the factor must be between 1.0 and 100.0".into(),
                Some("use 1.0 for a constant delay, 2.0 to double it each restart".into()),
            ),
            None => {}
        }
    }
    if backoff.initial > backoff.max {
        r.error(
            &v.span(),
            path,
            format!(
                "initial delay {} is longer than max {}",
                humantime::format_duration(backoff.initial),
                humantime::format_duration(backoff.max)
            ),
            Some("make `initial` at most `max`".into()),
        );
    }
    backoff
}

fn read_stop(r: &mut Reader<'_>, table: &DeTable<'_>, path: &str, spec: &mut ProgramSpec) {
    let key = |k: &str| join(path, k);
    if let Some(v) = get(table, "finish") {
        spec.finish = r.command(v, &key("finish"));
    }
    if let Some(v) = get(table, "stop_signal") {
        spec.stop_signal = r.signal(v, &key("stop_signal")).unwrap_or(spec.stop_signal);
    }
    if let Some(v) = get(table, "stop_timeout") {
        spec.stop_timeout = r
            .duration(v, &key("stop_timeout"))
            .unwrap_or(spec.stop_timeout);
    }
    read_pre_stop(r, table, path, spec);
}

/// `pre_stop` and `pre_stop_timeout`: the hook runs within the program's stop time, so its
/// timeout must leave some of it to the stop signal (by default it gets half).
fn read_pre_stop(r: &mut Reader<'_>, table: &DeTable<'_>, path: &str, spec: &mut ProgramSpec) {
    let key = |k: &str| join(path, k);
    if let Some(v) = get(table, "pre_stop") {
        spec.pre_stop = r.command(v, &key("pre_stop"));
    }
    spec.pre_stop_timeout = spec.stop_timeout / 2;
    if let Some(v) = get(table, "pre_stop_timeout")
        && let Some(d) = r.duration(v, &key("pre_stop_timeout"))
    {
        if d >= spec.stop_timeout {
            r.error(
                &v.span(),
                &key("pre_stop_timeout"),
                format!(
                    "the pre_stop hook runs within the stop_timeout ({}s), so it must be shorter",
                    spec.stop_timeout.as_secs_f64()
                ),
                Some("lower pre_stop_timeout, or raise stop_timeout to leave the program time to stop after its hook".into()),
            );
        } else {
            spec.pre_stop_timeout = d;
        }
    }
}

fn read_environment(r: &mut Reader<'_>, table: &DeTable<'_>, path: &str, spec: &mut ProgramSpec) {
    let key = |k: &str| join(path, k);
    if let Some(v) = get(table, "workdir") {
        spec.workdir = r.string(v, &key("workdir")).map(crate::sys::init::resolve);
    }
    if let Some(v) = get(table, "env_file") {
        spec.env_file = r.string(v, &key("env_file")).map(crate::sys::init::resolve);
        // One that exists must be a file: a FIFO would hang the start, a device never end.
        if let Some(path) = &spec.env_file
            && let Some(kind) = crate::sys::files::not_regular(path)
        {
            r.error(
                &v.span(),
                &key("env_file"),
                format!("{} is {kind}, not a regular file", path.display()),
                Some("point env_file at a file of KEY=VALUE lines".into()),
            );
        }
    }
    if let Some(v) = get(table, "env") {
        spec.env = read_env(r, v, &key("env"));
    }
    if let Some(v) = get(table, "umask") {
        spec.umask = read_umask(r, v, &key("umask"));
    }
    if let Some(v) = get(table, "rlimits") {
        spec.rlimits = read_rlimits(r, v, &key("rlimits"));
    }
    let user = get(table, "user").and_then(|v| Some((r.string(v, &key("user"))?, v.span())));
    let group = get(table, "group").and_then(|v| Some((r.string(v, &key("group"))?, v.span())));
    let supplementary = get(table, "supplementary_groups").and_then(|v| {
        let DeValue::Array(items) = v.get_ref() else {
            r.string_list(v, &key("supplementary_groups"));
            return None;
        };
        let names = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let k = format!("{}[{i}]", key("supplementary_groups"));
                Some((r.string(item, &k)?, item.span()))
            })
            .collect();
        Some(names)
    });
    let keys = IdentityKeys {
        user,
        group,
        supplementary,
    };
    spec.run_as = read_run_as(r, path, &keys);
}

fn read_env(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Vec<(String, String)> {
    let Some(table) = r.table(v, path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in table.iter() {
        let name: &str = k.get_ref();
        let key = join(path, &short(name));
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            r.error(
                &k.span(),
                &key,
                format!("{name:?} is not a valid environment variable name"),
                Some("use a name without '=' such as API_PORT".into()),
            );
            continue;
        }
        let value = match v.get_ref() {
            DeValue::Integer(i) => Some(i.as_str().to_string()),
            DeValue::Float(f) => Some(f.as_str().to_string()),
            DeValue::Boolean(b) => Some(b.to_string()),
            _ => r.string(v, &key),
        };
        let Some(value) = value else { continue };
        // As the kernel sees it: one `NAME=VALUE` string.
        if too_long(name.len() + 1 + value.len()) {
            let (message, fix) = too_long_error("the variable", name.len() + 1 + value.len());
            r.error(&v.span(), &key, message, Some(fix));
            continue;
        }
        out.push((name.to_string(), value));
    }
    out
}

fn read_umask(r: &mut Reader<'_>, v: &Value<'_>, key: &str) -> Option<u32> {
    let digits = match v.get_ref() {
        DeValue::Integer(i) if i.radix() == 8 => i.as_str().to_string(),
        // `umask = 22` means what `umask 022` means in a shell.
        DeValue::Integer(i) => i.as_str().to_string(),
        _ => r.string(v, key)?,
    };
    match u32::from_str_radix(digits.trim().trim_start_matches("0o"), 8) {
        Ok(m) if m <= 0o777 => Some(m),
        _ => {
            r.error(
                &v.span(),
                key,
                format!("{digits:?} is not an octal file mode mask"),
                Some(r#"write an octal mask such as "022" or "077""#.into()),
            );
            None
        }
    }
}

fn read_rlimits(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Vec<RlimitSetting> {
    const NAMES: &[(&str, Resource)] = &[
        ("nofile", Resource::RLIMIT_NOFILE),
        ("nproc", Resource::RLIMIT_NPROC),
        ("memlock", Resource::RLIMIT_MEMLOCK),
        ("stack", Resource::RLIMIT_STACK),
        ("as", Resource::RLIMIT_AS),
        ("fsize", Resource::RLIMIT_FSIZE),
        ("cpu", Resource::RLIMIT_CPU),
        ("data", Resource::RLIMIT_DATA),
        ("rss", Resource::RLIMIT_RSS),
        ("msgqueue", Resource::RLIMIT_MSGQUEUE),
        ("nice", Resource::RLIMIT_NICE),
        ("rtprio", Resource::RLIMIT_RTPRIO),
        ("sigpending", Resource::RLIMIT_SIGPENDING),
    ];
    let Some(table) = r.table(v, path) else {
        return Vec::new();
    };
    let known: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
    r.reject_unknown_keys(table, path, &known);
    let mut out = Vec::new();
    for (name, resource) in NAMES {
        let Some(v) = get(table, name) else { continue };
        let key = join(path, name);
        let value = match v.get_ref() {
            DeValue::String(s) if s.trim() == "unlimited" => Some(None),
            DeValue::String(_) => r.size(v, &key).map(Some),
            _ => r.integer(v, &key, 0..i64::MAX).map(|n| Some(n as u64)),
        };
        if let Some(value) = value {
            out.push(RlimitSetting {
                resource: *resource,
                value,
            });
        }
    }
    out
}

fn read_log(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> LogSettings {
    let mut log = LogSettings::default();
    let Some(table) = r.table(v, path) else {
        return log;
    };
    r.reject_unknown_keys(table, path, LOG_KEYS);
    let key = |k: &str| join(path, k);
    if let Some(v) = get(table, "console") {
        log.console = r.boolean(v, &key("console")).unwrap_or(log.console);
    }
    if let Some(v) = get(table, "file") {
        log.file = r.boolean(v, &key("file")).unwrap_or(log.file);
    }
    if let Some(v) = get(table, "timestamps") {
        log.timestamps = r.boolean(v, &key("timestamps")).unwrap_or(log.timestamps);
    }
    if let Some(v) = get(table, "stderr") {
        let choices = [
            ("merge", StderrMode::Merge),
            ("separate", StderrMode::Separate),
            ("stdout", StderrMode::Stdout),
        ];
        log.stderr = r.choice(v, &key("stderr"), &choices).unwrap_or(log.stderr);
    }
    if let Some(v) = get(table, "max_size") {
        match r.size(v, &key("max_size")) {
            Some(n) if n >= 4096 => log.max_size = n,
            Some(_) => r.error(
                &v.span(),
                &key("max_size"),
                "a log file must be allowed at least 4KiB".into(),
                Some(r#"use a size such as "10MiB""#.into()),
            ),
            None => {}
        }
    }
    if let Some(v) = get(table, "keep") {
        log.keep = r
            .integer(v, &key("keep"), 0..1000)
            .map_or(log.keep, |n| n as u32);
    }
    log
}

fn read_depends_on(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Vec<DependencyDraft> {
    match v.get_ref() {
        DeValue::Array(items) => names_only(r, items, path),
        DeValue::Table(table) => table
            .iter()
            .filter_map(|(k, v)| read_dependency_entry(r, k.get_ref(), &k.span(), v, path))
            .collect(),
        other => {
            r.error(
                &v.span(),
                path,
                format!("expected an array or a table, found {}", other.type_str()),
                Some(
                    r#"write depends_on = ["db"] or [program.NAME.depends_on] db = "ready""#.into(),
                ),
            );
            Vec::new()
        }
    }
}

/// `depends_on` and `after`, as written.
fn read_order(
    r: &mut Reader<'_>,
    table: &DeTable<'_>,
    path: &str,
) -> (Vec<DependencyDraft>, Vec<DependencyDraft>) {
    let deps = match get(table, "depends_on") {
        Some(v) => read_depends_on(r, v, &join(path, "depends_on")),
        None => Vec::new(),
    };
    let after = match get(table, "after") {
        Some(v) => read_after(r, v, &join(path, "after")),
        None => Vec::new(),
    };
    (deps, after)
}

/// `after = ["redis"]`: names only.
fn read_after(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Vec<DependencyDraft> {
    let DeValue::Array(items) = v.get_ref() else {
        r.error(
            &v.span(),
            path,
            format!(
                "expected an array of names, found {}",
                v.get_ref().type_str()
            ),
            Some(r#"write after = ["redis"]"#.into()),
        );
        return Vec::new();
    };
    names_only(r, items, path)
}

/// An array of names (`depends_on = ["db"]`, `after = ["redis"]`): each a dependency with the
/// default condition and no restart, at its own line.
fn names_only(r: &mut Reader<'_>, items: &[Value<'_>], path: &str) -> Vec<DependencyDraft> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let name = r.string(item, &format!("{path}[{i}]"))?;
            Some(DependencyDraft {
                name,
                condition: None,
                restart: false,
                line: r.line_of(item.span().start),
            })
        })
        .collect()
}

fn read_dependency_entry(
    r: &mut Reader<'_>,
    name: &str,
    name_span: &Range<usize>,
    v: &Value<'_>,
    path: &str,
) -> Option<DependencyDraft> {
    let key = join(path, name);
    let conditions = [
        ("started", Condition::Started),
        ("ready", Condition::Ready),
        ("completed", Condition::Completed),
    ];
    let (condition, restart) = match v.get_ref() {
        DeValue::String(_) => (Some(r.choice(v, &key, &conditions)?), false),
        DeValue::Table(t) => {
            r.reject_unknown_keys(t, &key, &["condition", "restart"]);
            let condition = match get(t, "condition") {
                Some(c) => Some(r.choice(c, &join(&key, "condition"), &conditions)?),
                None => None,
            };
            let restart = match get(t, "restart") {
                Some(b) => r.boolean(b, &join(&key, "restart"))?,
                None => false,
            };
            (condition, restart)
        }
        other => {
            r.error(
                &v.span(),
                &key,
                format!(
                    "expected a condition or a table, found {}",
                    other.type_str()
                ),
                Some(r#"write "ready", or { condition = "ready", restart = true }"#.into()),
            );
            return None;
        }
    };
    Some(DependencyDraft {
        name: name.to_string(),
        condition,
        restart,
        line: r.line_of(name_span.start),
    })
}

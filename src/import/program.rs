//! One `[program:x]` section as a `[program.NAME]` table: each supervisord setting read with
//! its own rules (`datatypes`), expanded in its round (`scope`), and written as the ctrlinit key
//! nearest to it, with a comment where the two differ and a note in the report for what is not
//! carried over exactly.

use std::cell::Cell;
use std::path::PathBuf;

use super::datatypes::{self, AutoRestart, LogTarget};
use super::environment::key_value_pairs;
use super::expand::Value;
use super::globals::Globals;
use super::ini::{Opt, Section};
use super::keys::{Got, Keys};
use super::logs::{DEFAULT_BACKUPS, DEFAULT_MAX_BYTES, Stream, log_table};
use super::report::{InputError, Note};
use super::restart::budget;
use super::scope::{Process, ProcessNum, Scope};
use super::shlex::{SPLIT, tokens};
use super::text::{Piece, Text};
use super::toml_out::{Table, Val};
use crate::config::instances::MAX_INSTANCES;

/// A program section to translate.
pub struct Program<'a> {
    /// The section.
    pub section: &'a Section,
    /// `[DEFAULT]`'s values.
    pub defaults: &'a [Opt],
    /// Its supervisord name (after `program:`).
    pub supervisord_name: String,
    /// The `[group:x]` it is in, if any.
    pub group: Option<String>,
    /// Its ctrlinit name.
    pub name: String,
}

/// A translated program.
#[derive(Debug, Clone)]
pub struct Translated {
    /// Its ctrlinit name.
    pub name: String,
    /// `[program:x]`.
    pub label: String,
    /// Where its section starts.
    pub at: (PathBuf, usize),
    /// `[program.NAME]`, then its `env` and `log` tables.
    pub tables: Vec<Table>,
    /// `priority` (`None` when it comes from the environment).
    pub priority: Option<i64>,
    /// `autostart`.
    pub autostart: bool,
    /// Whether it became a oneshot.
    pub oneshot: bool,
    /// Whether `stopasgroup` and `killasgroup` were both true (what ctrlinit always does).
    pub signals_group: bool,
    /// `stopwaitsecs`, when set (and known now).
    pub stop_seconds: Option<i64>,
}

/// Keys supervisord reads in a program section; anything else it ignores.
const KNOWN: &[&str] = &[
    "command",
    "process_name",
    "numprocs",
    "numprocs_start",
    "priority",
    "autostart",
    "autorestart",
    "startsecs",
    "startretries",
    "exitcodes",
    "stopsignal",
    "stopwaitsecs",
    "stopasgroup",
    "killasgroup",
    "user",
    "redirect_stderr",
    "stdout_logfile",
    "stdout_logfile_maxbytes",
    "stdout_logfile_backups",
    "stdout_capture_maxbytes",
    "stdout_events_enabled",
    "stdout_syslog",
    "stderr_logfile",
    "stderr_logfile_maxbytes",
    "stderr_logfile_backups",
    "stderr_capture_maxbytes",
    "stderr_events_enabled",
    "stderr_syslog",
    "environment",
    "directory",
    "umask",
    "serverurl",
];
/// Translates `p`; `None` when it defines no process (or is in error).
pub fn translate(
    p: &Program<'_>,
    globals: &Globals,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) -> Option<Translated> {
    let label = format!("[{}]", p.section.name);
    let errors_before = errors.len();
    let used = Cell::new(false);
    let group_name = p
        .group
        .clone()
        .unwrap_or_else(|| p.supervisord_name.clone());
    let mut k = Keys {
        section: p.section,
        defaults: p.defaults,
        label: label.clone(),
        errors,
        notes,
    };
    let early = Scope {
        program_name: &p.supervisord_name,
        group_name: &group_name,
        global_env: &globals.env,
        process: None,
        process_num_used: &used,
    };
    let at = (p.section.file.clone(), p.section.line);
    let mut t = Table::new(&["program", &p.name]);
    t.comments
        .push(format!("{label} of {}:{}", at.0.display(), at.1));

    // Unknown keys: supervisord ignores them; so does the output, and says so.
    for o in &p.section.options {
        if !KNOWN.contains(&o.key.as_str()) {
            let hint = match o.key.as_str() {
                "username" => " (did you mean user?)",
                "group" => " (ctrlinit has group = \"...\", for the program's primary group)",
                "pidfile" => " (ctrlinit is PID 1 and needs no pid file)",
                _ => "",
            };
            k.note(
                o,
                format!(
                    "not a supervisord setting, so supervisord ignored it{hint}; not carried over"
                ),
                "",
            );
        }
    }

    // How many processes.
    let numprocs = k.typed("numprocs", &early, datatypes::integer);
    let start = match k.typed("numprocs_start", &early, datatypes::integer) {
        Some((Got::Now(n), _)) => Got::Now(n),
        Some((Got::Later(t), _)) => Got::Later(t),
        None => Got::Now(0),
    };
    let (instances, count): (Option<Val>, Value) = match &numprocs {
        None => (None, Value::Int(1)),
        Some((Got::Now(n), opt)) => {
            let n = *n;
            if n < 1 {
                let opt = opt.clone();
                k.note(
                    &opt,
                    format!("numprocs = {n} runs no process: not imported"),
                    "remove the section, or run at least one",
                );
                return None;
            }
            if n > MAX_INSTANCES {
                let opt = opt.clone();
                k.note(
                    &opt,
                    format!("numprocs = {n}: ctrlinit runs at most {MAX_INSTANCES} instances of a program; written as {MAX_INSTANCES}"),
                    "split the work over more programs",
                );
            }
            let n = n.min(MAX_INSTANCES);
            (if n > 1 { Some(Val::Int(n)) } else { None }, Value::Int(n))
        }
        Some((Got::Later(text), _)) => (
            Some(Val::Str(text.to_ctrlinit())),
            Value::Later(Piece::Env("INSTANCES".into())),
        ),
    };
    let instanced = instances.is_some();
    let num = match (&start, instanced) {
        (_, true) => ProcessNum::Instance,
        (Got::Now(s), false) => ProcessNum::Fixed(*s),
        (Got::Later(_), false) => ProcessNum::Instance,
    };
    if let (Some((Got::Now(n), opt)), Some(pn)) = (&numprocs, k.opt("process_name").cloned())
        && *n > 1
        && !pn.value.contains("%(process_num)")
    {
        let (file, line) = (opt.file.clone(), opt.line);
        k.errors.push(InputError::at(
            &file,
            line,
            format!(
                "{label} numprocs = {n}: process_name {:?} has no %(process_num)",
                pn.value
            ),
            "add %(process_num)s to process_name (supervisord refuses it too)",
        ));
    }

    // The first round.
    let (autostart, _) = k.now_or("autostart", &early, datatypes::boolean, true);
    let (autorestart, _) = k.now_or(
        "autorestart",
        &early,
        datatypes::auto_restart,
        AutoRestart::Unexpected,
    );
    let (startsecs, startsecs_set) = k.now_or("startsecs", &early, datatypes::integer, 1);
    let retries = k.typed("startretries", &early, datatypes::integer);
    let (exitcodes, exitcodes_set) = k.now_or("exitcodes", &early, datatypes::exitcodes, vec![0]);
    let stopsignal = k.typed("stopsignal", &early, datatypes::signal);
    let stopwait = k.typed("stopwaitsecs", &early, datatypes::integer);
    let (stopasgroup, _) = k.now_or("stopasgroup", &early, datatypes::boolean, false);
    let (killasgroup, _) = k.now_or("killasgroup", &early, datatypes::boolean, stopasgroup);
    let (redirect, _) = k.now_or("redirect_stderr", &early, datatypes::boolean, false);
    let priority = match k.typed("priority", &early, datatypes::integer) {
        None => Some(999),
        Some((Got::Now(n), _)) => Some(n),
        Some((Got::Later(t), opt)) => {
            k.note(
                &opt,
                format!(
                    "comes from the environment at start ({}), so it orders nothing here",
                    t.to_ctrlinit()
                ),
                "write the number out, or add depends_on where the order matters",
            );
            None
        }
    };
    let user = k.text("user", &early).map(|(t, _)| t);
    let umask = k.typed("umask", &early, datatypes::octal);
    if let Some(o) = k.opt("serverurl").cloned() {
        k.note(&o, "no supervisorctl server to point programs at: ctrlinit's control socket is [init] socket", "programs that run supervisorctl should run ctrlinit status/start/stop instead");
    }
    for key in [
        "stdout_capture_maxbytes",
        "stderr_capture_maxbytes",
        "stdout_events_enabled",
        "stderr_events_enabled",
    ] {
        if let Some(o) = k.opt(key).cloned() {
            // Turned off, they do nothing there either.
            if datatypes::boolean(&o.value) == Ok(false) || o.value.trim() == "0" {
                continue;
            }
            k.note(&o, "ctrlinit sends no log events to listeners", "follow the output with `ctrlinit logs -f NAME`, or state changes with `ctrlinit events --json`");
        }
    }

    // The second round: per process.
    let mut proc_scope = Scope {
        program_name: &p.supervisord_name,
        group_name: &group_name,
        global_env: &globals.env,
        process: Some(Process {
            num: num.clone(),
            count: count.clone(),
            env: &[],
        }),
        process_num_used: &used,
    };
    let own_env: Vec<(String, Text)> = match k.text("environment", &proc_scope) {
        Some((text, opt)) => match key_value_pairs(&text) {
            Ok(pairs) => pairs,
            Err(e) => {
                k.errors.push(InputError::at(
                    &opt.file,
                    opt.line,
                    format!("{label} environment: {e}"),
                    "write KEY=\"value\",KEY2=\"value 2\" (quote values with spaces, commas or other punctuation)",
                ));
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    proc_scope.process = Some(Process {
        num: num.clone(),
        count: count.clone(),
        env: &own_env,
    });
    let directory = k.text("directory", &proc_scope);
    let command = k.text("command", &proc_scope);
    // Log file paths are not written out: their process numbers count for nothing.
    let not_counted = Cell::new(false);
    let log_scope = Scope {
        process_num_used: &not_counted,
        ..proc_scope
    };
    let stdout = read_stream(&mut k, "stdout", &log_scope);
    let stderr = read_stream(&mut k, "stderr", &log_scope);
    let proc_scope = Scope {
        process_num_used: &used,
        ..log_scope
    };
    // process_name only names processes; its own use of process_num does not count.
    let used_outside_name = used.get();
    // supervisord's names for its first and last process, for the note.
    let sample = |k: &mut Keys<'_>, n: i64| {
        let s = Scope {
            process: Some(Process {
                num: ProcessNum::Fixed(n),
                count: count.clone(),
                env: &own_env,
            }),
            process_num_used: &not_counted,
            ..proc_scope
        };
        k.expanded("process_name", &s, false)
            .map(|(t, o)| (t.to_ctrlinit(), o))
    };
    let first_number = match &start {
        Got::Now(n) => *n,
        Got::Later(_) => 0,
    };
    let process_name = sample(&mut k, first_number);
    let last_process_name = match &count {
        Value::Int(n) if *n > 1 => sample(&mut k, first_number + n - 1).map(|(t, _)| t),
        _ => None,
    };

    let Some((command, command_opt)) = command else {
        if k.opt("command").is_none() {
            k.errors.push(InputError::at(
                &at.0,
                at.1,
                format!("{label} does not specify a command"),
                "add command = /path/to/program args (supervisord refuses it too)",
            ));
        }
        return None;
    };
    let argv = match command_value(&command) {
        Ok(v) => v,
        Err(e) => {
            k.errors.push(InputError::at(
                &command_opt.file,
                command_opt.line,
                format!(
                    "{label} command: can't parse command {:?}: {e}",
                    command_opt.value
                ),
                "close every quote (supervisord could not start it either)",
            ));
            return None;
        }
    };
    if k.errors.len() > errors_before {
        return None;
    }

    // Process numbers and names.
    if instanced && used_outside_name {
        let offset = match &start {
            Got::Now(0) => None,
            Got::Now(n) => Some(n.to_string()),
            Got::Later(t) => Some(t.to_ctrlinit()),
        };
        if let (Some(offset), Some(opt)) = (offset, k.opt("numprocs_start").cloned()) {
            k.note(
                &opt,
                format!(
                    "process numbers started at {offset}; ctrlinit's ${{INSTANCE}} counts from 0"
                ),
                "have the program add the offset, or make its values start at 0",
            );
        }
    }
    match (&process_name, instanced) {
        (Some((pn, opt)), true) => {
            let last = match &count {
                Value::Int(n) => format!("{}-{}", p.name, n - 1),
                _ => format!("{}-<n-1>", p.name),
            };
            let theirs = match &last_process_name {
                Some(l) => format!("{pn} … {l}"),
                None => format!("{pn} …"),
            };
            let opt = opt.clone();
            k.note(
                &opt,
                format!(
                    "instances are named {}-0 … {last} (supervisord's processes were {theirs})",
                    p.name
                ),
                format!(
                    "`ctrlinit start|stop|restart {}` takes them all, `{}-0` one",
                    p.name, p.name
                ),
            );
        }
        (Some((pn, opt)), false) if pn != &p.supervisord_name => {
            let opt = opt.clone();
            k.note(
                &opt,
                format!(
                    "the program is named {} (supervisord's process was {pn})",
                    p.name
                ),
                "",
            );
        }
        _ => {}
    }

    // command, type, instances, autostart.
    t.set("command", argv);
    let oneshot = autorestart == AutoRestart::Never && startsecs == 0;
    if oneshot {
        t.set_with(
            "type",
            Val::Str("oneshot".into()),
            "autorestart = false and startsecs = 0: it runs once, to completion",
        );
        if let Some(o) = k.opt("autorestart").cloned() {
            k.note(
                &o,
                "with startsecs = 0, written as type = \"oneshot\": it is completed (healthy) when it exits with one of exitcodes, rather than exited",
                "if it is a service that simply must not be restarted, remove type = \"oneshot\"",
            );
        }
    }
    if let Some(n) = instances {
        let why = match &numprocs {
            Some((Got::Later(_), _)) => {
                "numprocs, read when ctrlinit loads: NAME-0 … NAME-<n-1>, with ${INSTANCE} for process_num"
            }
            _ => "numprocs: NAME-0 … NAME-<n-1>, with ${INSTANCE} for process_num",
        };
        t.set_with("instances", n, why);
    }
    if !autostart {
        t.set("autostart", Val::Bool(false));
    }

    // restart, success_codes, the budget.
    let restart = match autorestart {
        AutoRestart::Always => ("always", "autorestart = true"),
        AutoRestart::Never => ("never", "autorestart = false"),
        AutoRestart::Unexpected => (
            "on-failure",
            "autorestart = unexpected: restart when the exit code is not one of exitcodes",
        ),
    };
    t.set_with("restart", Val::Str(restart.0.into()), restart.1);
    if exitcodes_set || autorestart == AutoRestart::Unexpected || oneshot {
        t.set_with(
            "success_codes",
            Val::Array(exitcodes.iter().map(|&c| Val::Int(c)).collect()),
            "exitcodes",
        );
    }
    if autorestart != AutoRestart::Never {
        budget(&mut k, &mut t, retries, startsecs, globals);
    }
    if startsecs_set
        && startsecs > 0
        && let Some(o) = k.opt("startsecs").cloned()
    {
        k.note(
            &o,
            format!("ctrlinit has no minimum run time: a run shorter than {startsecs}s is not a failed start, and the program is running (and its dependents start) once spawned"),
            "add a ready check (ready = { tcp = \"127.0.0.1:PORT\" }, { exec = [...] } or { file = ... }) so it counts as up only when it is; restart_window bounds quick failures",
        );
    }

    // Stopping.
    match stopsignal {
        Some((Got::Now(sig), _)) => t.set("stop_signal", Val::Str(sig)),
        Some((Got::Later(text), _)) => t.set("stop_signal", Val::Str(text.to_ctrlinit())),
        None => {}
    }
    let stop_seconds = match stopwait {
        Some((Got::Now(n), _)) => {
            t.set_with(
                "stop_timeout",
                Val::Str(format!("{}s", n.max(0))),
                "stopwaitsecs",
            );
            Some(n)
        }
        Some((Got::Later(text), _)) => {
            t.set_with(
                "stop_timeout",
                Val::Str(format!("{}s", text.to_ctrlinit())),
                "stopwaitsecs, read when ctrlinit loads",
            );
            None
        }
        None => {
            t.set_with(
                "stop_timeout",
                Val::Str("10s".into()),
                "stopwaitsecs (supervisord's default)",
            );
            None
        }
    };

    // Who, where, with what.
    match (user, &globals.user) {
        (Some(u), _) => t.set("user", Val::Str(u.to_ctrlinit())),
        (None, Some(u)) => t.set_with(
            "user",
            Val::Str(u.to_ctrlinit()),
            "[supervisord] user: supervisord, and so every program, ran as this user",
        ),
        (None, None) => {}
    }
    if let Some((dir, opt)) = directory {
        let written = dir.to_ctrlinit();
        if !written.starts_with('/') && !written.starts_with('$') {
            k.note(&opt, format!("{written:?} is relative: it is taken from ctrlinit's working directory, as it was from supervisord's"), "write an absolute path");
        }
        t.set("workdir", Val::Str(written));
    }
    match umask {
        Some((Got::Now(m), _)) => t.set("umask", Val::Str(format!("{m:03o}"))),
        Some((Got::Later(text), _)) => t.set("umask", Val::Str(text.to_ctrlinit())),
        None => {
            if let Some(m) = globals.umask {
                t.set_with("umask", Val::Str(format!("{m:03o}")), "[supervisord] umask");
            }
        }
    }

    let mut tables = vec![t];
    let mut env = Table::new(&["program", &p.name, "env"]);
    for (key, value) in &globals.env {
        if own_env.iter().any(|(k2, _)| k2 == key) {
            continue;
        }
        if env.entries.is_empty() {
            env.comments
                .push("[supervisord] environment, then the program's own".into());
        }
        env.set(key, Val::Str(value.to_ctrlinit()));
    }
    for (key, value) in &own_env {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            if let Some(o) = k.opt("environment").cloned() {
                k.note(
                    &o,
                    format!("{key:?} cannot be a variable's name: not carried over"),
                    "rename it",
                );
            }
            continue;
        }
        env.set(key, Val::Str(value.to_ctrlinit()));
    }
    if !env.entries.is_empty() {
        tables.push(env);
    }
    let (log, log_notes) = log_table(
        &label,
        &p.name,
        &stdout,
        &stderr,
        redirect,
        &at,
        globals.log_dir.as_deref(),
    );
    k.notes.extend(log_notes);
    tables.push(log);

    Some(Translated {
        name: p.name.clone(),
        label,
        at,
        tables,
        priority,
        autostart,
        oneshot,
        signals_group: stopasgroup && killasgroup,
        stop_seconds,
    })
}

/// `command` as ctrlinit's `command`: an array split as supervisord splits it, or, when a value
/// read at start stands outside quotes (so supervisord split its value into words), the one
/// string ctrlinit splits the same way after interpolating it.
fn command_value(command: &Text) -> Result<Val, String> {
    let (s, refs) = command.with_placeholders();
    let words = tokens(&s, SPLIT).map_err(|e| e.message().to_string())?;
    if words.is_empty() || words[0].text.is_empty() {
        return Err("the command is empty".into());
    }
    if words.iter().any(|w| !w.bare_placeholders.is_empty()) {
        return Ok(Val::Str(command.to_ctrlinit()));
    }
    Ok(Val::Array(
        words
            .iter()
            .map(|w| Val::Str(Text::from_placeholders(&w.text, &refs).to_ctrlinit()))
            .collect(),
    ))
}
/// One stream's log settings.
fn read_stream(k: &mut Keys<'_>, name: &'static str, scope: &Scope<'_>) -> Stream {
    let target_key = format!("{name}_logfile");
    let (target, at) = match k.expanded(&target_key, scope, false) {
        Some((t, o)) => (
            datatypes::logfile(&t.to_ctrlinit()),
            Some((o.file.clone(), o.line)),
        ),
        None => (LogTarget::Auto, None),
    };
    let max_key = format!("{name}_logfile_maxbytes");
    let (max_bytes, _) = k.now_or(&max_key, scope, datatypes::byte_size, DEFAULT_MAX_BYTES);
    let backups_key = format!("{name}_logfile_backups");
    let (backups, _) = k.now_or(&backups_key, scope, datatypes::integer, DEFAULT_BACKUPS);
    let syslog_key = format!("{name}_syslog");
    let syslog = match k.now_or(&syslog_key, scope, datatypes::boolean, false) {
        (true, _) => k.opt(&syslog_key).map(|o| (o.file.clone(), o.line)),
        _ => None,
    };
    Stream {
        name,
        target,
        at,
        max_bytes,
        backups,
        syslog,
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_as_supervisord_splits_them() {
        let arr = |v: Val| match v {
            Val::Array(items) => items
                .into_iter()
                .map(|i| match i {
                    Val::Str(s) => s,
                    _ => unreachable!(),
                })
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            arr(command_value(&Text::lit(r#"/usr/sbin/nginx -g "daemon off;""#)).unwrap()),
            ["/usr/sbin/nginx", "-g", "daemon off;"]
        );
        let quoted = Text(vec![
            Piece::Lit("postgrey --delay=\"".into()),
            Piece::Env("DELAY".into()),
            Piece::Lit("\"".into()),
        ]);
        assert_eq!(
            arr(command_value(&quoted).unwrap()),
            ["postgrey", "--delay=${DELAY}"]
        );
        let bare = Text(vec![
            Piece::Lit("php artisan --sleep=".into()),
            Piece::Env("SLEEP".into()),
        ]);
        assert_eq!(
            command_value(&bare).unwrap(),
            Val::Str("php artisan --sleep=${SLEEP}".into())
        );
        assert!(command_value(&Text::lit("'open")).is_err());
        assert!(command_value(&Text::lit("  ")).is_err());
    }
}

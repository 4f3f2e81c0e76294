//! One `[program:x]` section as a `[program.NAME]` table: each supervisord setting read with
//! its own rules (`datatypes`), expanded in its round (`scope`), and written as the ctrlinit key
//! nearest to it, with a comment where the two differ and a note in the report for what is not
//! carried over exactly.

use std::cell::Cell;
use std::path::PathBuf;

use super::datatypes::AutoRestart;
use super::globals::Globals;
use super::ini::{Opt, Section};
use super::keys::{Got, Keys};
use super::logs::log_table;
use super::processes::{Processes, note_numbers_and_names, read_processes};
use super::report::{InputError, Note};
use super::restart::budget;
use super::rounds::{Names, PerProcess, Settings, read_per_process, read_settings};
use super::scope::Scope;
use super::shlex::{SPLIT, tokens};
use super::text::Text;
use super::toml_out::{Table, Val};

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
    /// One process of a `numprocs` section written as a program of its own (see `numbered`):
    /// its process number.
    pub number: Option<i64>,
    /// The file it is written in when it is in no group (without `.toml`): its name, or its
    /// section's for the processes of one section.
    pub file: String,
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
    /// See [`Program::file`].
    pub file: String,
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
    let not_counted = Cell::new(false);
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
        process_num_used: &not_counted,
    };
    let at = (p.section.file.clone(), p.section.line);
    // supervisord's first round, once for the program; then the second, per process.
    note_unknown_keys(&mut k);
    let procs = read_processes(&mut k, &early, p.number)?;
    let settings = read_settings(&mut k, &early);
    let names = Names {
        program: &p.supervisord_name,
        group: &group_name,
    };
    let each = read_per_process(&mut k, &names, globals, &procs);
    let argv = command_argv(&mut k, &each.command, &at)?;
    if k.errors.len() > errors_before {
        return None;
    }
    if p.number.is_none() {
        let (name, theirs) = (&p.name, &p.supervisord_name);
        note_numbers_and_names(&mut k, &procs, &each.names, each.numbers_used, name, theirs);
    }

    let mut t = Table::new(&["program", &p.name]);
    t.comments.push(match p.number {
        Some(n) => format!("{label} of {}:{}, process {n}", at.0.display(), at.1),
        None => format!("{label} of {}:{}", at.0.display(), at.1),
    });
    t.set("command", argv);
    let oneshot = write_kind(&mut k, &mut t, &settings, &procs);
    write_restart(&mut k, &mut t, &settings, oneshot, globals);
    write_startsecs(&mut k, &mut t, &settings, oneshot);
    let stop_seconds = write_stop(&mut t, &settings);
    write_identity(&mut k, &mut t, &settings, &each, globals);

    let mut tables = vec![t];
    tables.extend(env_table(&mut k, &p.name, globals, &each.env));
    tables.push(log(&mut k, &p.name, &each, settings.redirect, &at, globals));

    Some(Translated {
        name: p.name.clone(),
        label,
        at,
        tables,
        priority: settings.priority,
        autostart: settings.autostart,
        oneshot,
        signals_group: settings.signals_group,
        stop_seconds,
        file: p.file.clone(),
    })
}

/// Keys supervisord does not know: it ignores them; so does the output, and says so.
fn note_unknown_keys(k: &mut Keys<'_>) {
    for o in &k.section.options {
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
}

/// `command` split as supervisord splits it; a missing or unparsable command is an error.
fn command_argv(
    k: &mut Keys<'_>,
    command: &Option<(Text, Opt)>,
    at: &(PathBuf, usize),
) -> Option<Val> {
    let Some((command, command_opt)) = command else {
        if k.opt("command").is_none() {
            k.errors.push(InputError::at(
                &at.0,
                at.1,
                format!("{} does not specify a command", k.label),
                "add command = /path/to/program args (supervisord refuses it too)",
            ));
        }
        return None;
    };
    match command_value(command) {
        Ok(v) => Some(v),
        Err(e) => {
            k.errors.push(InputError::at(
                &command_opt.file,
                command_opt.line,
                format!(
                    "{} command: can't parse command {:?}: {e}",
                    k.label, command_opt.value
                ),
                "close every quote (supervisord could not start it either)",
            ));
            None
        }
    }
}

/// `type`, `instances` and `autostart`; whether it became a oneshot.
fn write_kind(k: &mut Keys<'_>, t: &mut Table, s: &Settings, procs: &Processes) -> bool {
    let oneshot = s.autorestart == AutoRestart::Never && s.startsecs.0 == 0;
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
    if let Some(n) = &procs.instances {
        let why = match &procs.numprocs {
            Some((Got::Later(_), _)) => {
                "numprocs, read when ctrlinit loads: NAME-0 … NAME-<n-1>, with ${INSTANCE} for process_num"
            }
            _ => "numprocs: NAME-0 … NAME-<n-1>, with ${INSTANCE} for process_num",
        };
        t.set_with("instances", n.clone(), why);
    }
    if !s.autostart {
        t.set("autostart", Val::Bool(false));
    }
    oneshot
}

/// `restart`, `success_codes` and the budget.
fn write_restart(k: &mut Keys<'_>, t: &mut Table, s: &Settings, oneshot: bool, g: &Globals) {
    let restart = match s.autorestart {
        AutoRestart::Always => ("always", "autorestart = true"),
        AutoRestart::Never => ("never", "autorestart = false"),
        AutoRestart::Unexpected => (
            "on-failure",
            "autorestart = unexpected: restart when the exit code is not one of exitcodes",
        ),
    };
    t.set_with("restart", Val::Str(restart.0.into()), restart.1);
    let (exitcodes, exitcodes_set) = &s.exitcodes;
    if *exitcodes_set || s.autorestart == AutoRestart::Unexpected || oneshot {
        t.set_with(
            "success_codes",
            Val::Array(exitcodes.iter().map(|&c| Val::Int(c)).collect()),
            "exitcodes",
        );
    }
    if s.autorestart != AutoRestart::Never {
        budget(k, t, s.retries.clone(), s.startsecs.0, g);
    }
}

/// `startsecs` as `ready = { uptime }`: ready once up that long, and a run that ends sooner is
/// a failed start, as supervisord counted it. supervisord's default (1) counts as set: every
/// program it ran had one. 0, or a oneshot (which has no readiness check), writes nothing.
fn write_startsecs(k: &mut Keys<'_>, t: &mut Table, s: &Settings, oneshot: bool) {
    let (startsecs, set) = s.startsecs;
    if startsecs <= 0 || oneshot {
        return;
    }
    let why = if set {
        format!("startsecs = {startsecs}")
    } else {
        "startsecs = 1 (supervisord's default)".to_string()
    };
    t.set_with(
        "ready",
        Val::Inline(vec![("uptime".into(), Val::Str(format!("{startsecs}s")))]),
        &format!("{why}: ready once up {startsecs}s; a run that ends sooner failed to start, whatever its exit"),
    );
    // The uptime must fit in ready_timeout (60s unless set).
    if startsecs >= 60 {
        t.set_with(
            "ready_timeout",
            Val::Str(format!("{}s", startsecs + 30)),
            "longer than the uptime, which must fit in it",
        );
    }
    let retries = match &s.retries {
        Some((Got::Now(n), _)) => *n,
        Some((Got::Later(_), _)) => 1,
        None => 3,
    };
    if s.autorestart == AutoRestart::Never
        && retries > 0
        && let Some(o) = k.opt("autorestart").cloned()
    {
        k.note(
            &o,
            "supervisord retried a start that ended within startsecs (startretries times) even with autorestart = false; with restart = \"never\" ctrlinit does not",
            "if failed starts should be retried, write restart = \"on-failure\" (it then also restarts a failing exit after the start)",
        );
    }
}

/// `stop_signal` and `stop_timeout`; the seconds written when known now (supervisord's
/// default of 10 included).
fn write_stop(t: &mut Table, s: &Settings) -> Option<i64> {
    match &s.stopsignal {
        Some((Got::Now(sig), _)) => t.set("stop_signal", Val::Str(sig.clone())),
        Some((Got::Later(text), _)) => t.set("stop_signal", Val::Str(text.to_ctrlinit())),
        None => {}
    }
    match &s.stopwait {
        Some((Got::Now(n), _)) => {
            t.set_with(
                "stop_timeout",
                Val::Str(format!("{}s", n.max(&0))),
                "stopwaitsecs",
            );
            Some(*n)
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
            Some(10)
        }
    }
}

/// Who it runs as, where and with what mask: `user`, `workdir`, `umask` (`[supervisord]`'s
/// when the program sets none).
fn write_identity(k: &mut Keys<'_>, t: &mut Table, s: &Settings, each: &PerProcess, g: &Globals) {
    match (&s.user, &g.user) {
        (Some(u), _) => t.set("user", Val::Str(u.to_ctrlinit())),
        (None, Some(u)) => t.set_with(
            "user",
            Val::Str(u.to_ctrlinit()),
            "[supervisord] user: supervisord, and so every program, ran as this user",
        ),
        (None, None) => {}
    }
    if let Some((dir, opt)) = &each.directory {
        let written = dir.to_ctrlinit();
        if !written.starts_with('/') && !written.starts_with('$') {
            k.note(opt, format!("{written:?} is relative: it is taken from ctrlinit's working directory, as it was from supervisord's"), "write an absolute path");
        }
        t.set("workdir", Val::Str(written));
    }
    match &s.umask {
        Some((Got::Now(m), _)) => t.set("umask", Val::Str(format!("{m:03o}"))),
        Some((Got::Later(text), _)) => t.set("umask", Val::Str(text.to_ctrlinit())),
        None => {
            if let Some(m) = g.umask {
                t.set_with("umask", Val::Str(format!("{m:03o}")), "[supervisord] umask");
            }
        }
    }
}

/// `[program.NAME.log]`, its notes added to the rest.
fn log(
    k: &mut Keys<'_>,
    name: &str,
    each: &PerProcess,
    redirect: bool,
    at: &(PathBuf, usize),
    g: &Globals,
) -> Table {
    let (table, notes) = log_table(
        &k.label,
        name,
        &each.stdout,
        &each.stderr,
        redirect,
        at,
        g.log_dir.as_deref(),
    );
    k.notes.extend(notes);
    table
}

/// `[program.NAME.env]`: `[supervisord] environment`, then the program's own (which wins).
fn env_table(
    k: &mut Keys<'_>,
    name: &str,
    g: &Globals,
    own_env: &[(String, Text)],
) -> Option<Table> {
    let mut env = Table::new(&["program", name, "env"]);
    for (key, value) in &g.env {
        if own_env.iter().any(|(k2, _)| k2 == key) {
            continue;
        }
        if env.entries.is_empty() {
            env.comments
                .push("[supervisord] environment, then the program's own".into());
        }
        env.set(key, Val::Str(value.to_ctrlinit()));
    }
    for (key, value) in own_env {
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
    (!env.entries.is_empty()).then_some(env)
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
#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::text::Piece;

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

//! A `[program:x]`'s settings read in supervisord's two rounds (see `scope`): those it reads
//! once for the program ([`Settings`]), then those it reads per process ([`PerProcess`]), which
//! also know the process number and the program's own `environment`. Keys are read in the
//! order supervisord reads them, so errors and notes come in that order too.

use std::cell::Cell;

use super::datatypes::{self, AutoRestart, LogTarget};
use super::environment::key_value_pairs;
use super::globals::Globals;
use super::ini::Opt;
use super::keys::{Got, Keys};
use super::logs::{DEFAULT_BACKUPS, DEFAULT_MAX_BYTES, Stream};
use super::processes::{Processes, SupervisordNames};
use super::report::InputError;
use super::scope::{Process, ProcessNum, Scope};
use super::text::Text;

/// The settings read once for the program.
pub struct Settings {
    /// `autostart`.
    pub autostart: bool,
    /// `autorestart`.
    pub autorestart: AutoRestart,
    /// `startsecs`, and whether it was set.
    pub startsecs: (i64, bool),
    /// `startretries`.
    pub retries: Option<(Got<i64>, Opt)>,
    /// `exitcodes`, and whether they were set.
    pub exitcodes: (Vec<i64>, bool),
    /// `stopsignal`.
    pub stopsignal: Option<(Got<String>, Opt)>,
    /// `stopwaitsecs`.
    pub stopwait: Option<(Got<i64>, Opt)>,
    /// `stopasgroup` and `killasgroup` both true (what ctrlinit always does).
    pub signals_group: bool,
    /// `redirect_stderr`.
    pub redirect: bool,
    /// `priority` (`None` when it comes from the environment).
    pub priority: Option<i64>,
    /// `user`.
    pub user: Option<Text>,
    /// `umask`.
    pub umask: Option<(Got<u32>, Opt)>,
}

/// Reads the first round; settings ctrlinit has nothing for are said.
pub fn read_settings(k: &mut Keys<'_>, early: &Scope<'_>) -> Settings {
    let (autostart, _) = k.now_or("autostart", early, datatypes::boolean, true);
    let (autorestart, _) = k.now_or(
        "autorestart",
        early,
        datatypes::auto_restart,
        AutoRestart::Unexpected,
    );
    let startsecs = k.now_or("startsecs", early, datatypes::integer, 1);
    let retries = k.typed("startretries", early, datatypes::integer);
    let exitcodes = k.now_or("exitcodes", early, datatypes::exitcodes, vec![0]);
    let stopsignal = k.typed("stopsignal", early, datatypes::signal);
    let stopwait = k.typed("stopwaitsecs", early, datatypes::integer);
    let (stopasgroup, _) = k.now_or("stopasgroup", early, datatypes::boolean, false);
    let (killasgroup, _) = k.now_or("killasgroup", early, datatypes::boolean, stopasgroup);
    let (redirect, _) = k.now_or("redirect_stderr", early, datatypes::boolean, false);
    let priority = read_priority(k, early);
    let user = k.text("user", early).map(|(t, _)| t);
    let umask = k.typed("umask", early, datatypes::octal);
    note_servers_and_events(k);
    Settings {
        autostart,
        autorestart,
        startsecs,
        retries,
        exitcodes,
        stopsignal,
        stopwait,
        signals_group: stopasgroup && killasgroup,
        redirect,
        priority,
        user,
        umask,
    }
}

/// `priority`: 999 when not set, as supervisord's default; one read at start orders nothing.
fn read_priority(k: &mut Keys<'_>, early: &Scope<'_>) -> Option<i64> {
    match k.typed("priority", early, datatypes::integer) {
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
    }
}

/// `serverurl` and the log-event switches, which have nothing to talk to under ctrlinit.
fn note_servers_and_events(k: &mut Keys<'_>) {
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
}

/// The settings read per process.
pub struct PerProcess {
    /// The program's own `environment`.
    pub env: Vec<(String, Text)>,
    /// `directory`.
    pub directory: Option<(Text, Opt)>,
    /// `command`.
    pub command: Option<(Text, Opt)>,
    /// `stdout_logfile` and the rest of its stream.
    pub stdout: Stream,
    /// `stderr_logfile` and the rest of its stream.
    pub stderr: Stream,
    /// Whether `process_num` is used where it is written out (not in `process_name`, nor in
    /// log file paths): then the instances' numbers matter to the program.
    pub numbers_used: bool,
    /// supervisord's names for the processes.
    pub names: SupervisordNames,
}

/// The names the second round knows besides the process's.
pub struct Names<'a> {
    /// `program_name`.
    pub program: &'a str,
    /// `group_name`.
    pub group: &'a str,
}

/// Reads the second round.
pub fn read_per_process(
    k: &mut Keys<'_>,
    names: &Names<'_>,
    globals: &Globals,
    procs: &Processes,
) -> PerProcess {
    let used = Cell::new(false);
    let mut scope = Scope {
        program_name: names.program,
        group_name: names.group,
        global_env: &globals.env,
        process: Some(Process {
            num: procs.num.clone(),
            count: procs.count.clone(),
            env: &[],
        }),
        process_num_used: &used,
    };
    let env = own_environment(k, &scope);
    scope.process = Some(Process {
        num: procs.num.clone(),
        count: procs.count.clone(),
        env: &env,
    });
    let directory = k.text("directory", &scope);
    let command = k.text("command", &scope);
    // Log file paths are not written out: their process numbers count for nothing.
    let not_counted = Cell::new(false);
    let log_scope = Scope {
        process_num_used: &not_counted,
        ..scope
    };
    let stdout = read_stream(k, "stdout", &log_scope);
    let stderr = read_stream(k, "stderr", &log_scope);
    // process_name only names processes; its own use of process_num does not count.
    let numbers_used = used.get();
    let names = supervisord_names(k, &log_scope, procs, &env);
    PerProcess {
        env,
        directory,
        command,
        stdout,
        stderr,
        numbers_used,
        names,
    }
}

/// The program's own `environment`, split as supervisord splits it.
fn own_environment(k: &mut Keys<'_>, scope: &Scope<'_>) -> Vec<(String, Text)> {
    let Some((text, opt)) = k.text("environment", scope) else {
        return Vec::new();
    };
    match key_value_pairs(&text) {
        Ok(pairs) => pairs,
        Err(e) => {
            k.errors.push(InputError::at(
                &opt.file,
                opt.line,
                format!("{} environment: {e}", k.label),
                "write KEY=\"value\",KEY2=\"value 2\" (quote values with spaces, commas or other punctuation)",
            ));
            Vec::new()
        }
    }
}

/// supervisord's names for its first and last process, for the notes (`scope` counts no use
/// of the process number).
fn supervisord_names(
    k: &mut Keys<'_>,
    scope: &Scope<'_>,
    procs: &Processes,
    env: &[(String, Text)],
) -> SupervisordNames {
    let mut sample = |n: i64| {
        let s = Scope {
            process: Some(Process {
                num: ProcessNum::Fixed(n),
                count: procs.count.clone(),
                env,
            }),
            ..*scope
        };
        k.expanded("process_name", &s, false)
            .map(|(t, o)| (t.to_ctrlinit(), o))
    };
    let first_number = procs.first_number();
    let first = sample(first_number);
    let last = match &procs.count {
        super::expand::Value::Int(n) if *n > 1 => sample(first_number + n - 1).map(|(t, _)| t),
        _ => None,
    };
    SupervisordNames { first, last }
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

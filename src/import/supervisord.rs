//! `[supervisord]`: what has a meaning in ctrlinit becomes `[init]` (`childlogdir` → `log_dir`,
//! `loglevel` → `log_level`) or is given to every program (`environment`, `user`, `umask`);
//! the rest (a pid file, daemonizing, its own log file) is said.

use std::cell::Cell;

use super::datatypes;
use super::environment::key_value_pairs;
use super::expand::expand;
use super::globals::Globals;
use super::ini::{Opt, Section};
use super::report::{InputError, Note};
use super::scope::Scope;
use super::text::Text;
use super::toml_out::{Table, Val};

/// What `[supervisord]` gives: the `[init]` table (empty when nothing carries over) and what
/// every program gets.
pub fn translate(
    section: Option<&Section>,
    defaults: &[Opt],
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) -> (Table, Globals) {
    let mut init = Table::new(&["init"]);
    let mut globals = Globals::default();
    let Some(section) = section else {
        notes.push(Note::general(
            "[supervisord]",
            "the input has no [supervisord] section (an included file?): its programs are imported with ctrlinit's [init] defaults",
            "",
        ));
        return (init, globals);
    };
    init.comments.push(format!(
        "[supervisord] of {}:{}",
        section.file.display(),
        section.line
    ));
    let used = Cell::new(false);
    let scope = Scope {
        program_name: "",
        group_name: "",
        global_env: &[],
        process: None,
        process_num_used: &used,
    };
    let text = |opt: &Opt, errors: &mut Vec<InputError>| -> Option<Text> {
        let lookup = |k: &str| match k {
            "program_name" | "group_name" => None,
            k => scope.lookup(k, &opt.file),
        };
        match expand(&opt.value, &lookup) {
            Ok((t, _)) => Some(t),
            Err(e) => {
                errors.push(InputError::at(
                    &opt.file,
                    opt.line,
                    format!(
                        "[supervisord] {}: {}",
                        opt.key,
                        e.message("here, host_node_name, ENV_<variable>")
                    ),
                    "write %% for a literal %",
                ));
                None
            }
        }
    };
    let note = |notes: &mut Vec<Note>, o: &Opt, message: &str, todo: &str| {
        notes.push(Note::at(
            &o.file,
            o.line,
            format!("[supervisord] {}", o.key),
            message,
            todo,
        ));
    };
    let mut keys: Vec<&Opt> = section.options.iter().collect();
    for d in defaults {
        if !keys.iter().any(|o| o.key == d.key) {
            keys.push(d);
        }
    }
    for o in keys {
        match o.key.as_str() {
            "childlogdir" => {
                if let Some(t) = text(o, errors) {
                    globals.log_dir = t.as_static();
                    init.set_with("log_dir", Val::Str(t.to_ctrlinit()), "childlogdir: where programs' log files go (and ctrlinit's own, ctrlinit.log)");
                }
            }
            "loglevel" => {
                let level = match o.value.to_lowercase().as_str() {
                    "critical" | "error" => Some("error"),
                    "warn" => Some("warn"),
                    "info" => Some("info"),
                    "debug" => Some("debug"),
                    "trace" | "blather" => Some("trace"),
                    _ => None,
                };
                match level {
                    Some(l) => init.set_with(
                        "log_level",
                        Val::Str(l.into()),
                        &format!("loglevel = {}", o.value),
                    ),
                    None => errors.push(InputError::at(
                        &o.file,
                        o.line,
                        format!("[supervisord] loglevel: {:?} is not a log level", o.value),
                        "use critical, error, warn, info, debug, trace or blather",
                    )),
                }
            }
            "environment" => {
                if let Some(t) = text(o, errors) {
                    match key_value_pairs(&t) {
                        Ok(pairs) => {
                            globals.env = pairs;
                            globals.env_at = Some((o.file.clone(), o.line));
                        }
                        Err(e) => errors.push(InputError::at(
                            &o.file,
                            o.line,
                            format!("[supervisord] environment: {e}"),
                            "write KEY=\"value\",KEY2=\"value 2\"",
                        )),
                    }
                }
            }
            "user" => {
                if let Some(t) = text(o, errors) {
                    if t.as_static().as_deref() == Some("root")
                        || t.as_static().as_deref() == Some("0")
                    {
                        note(
                            notes,
                            o,
                            "root: programs run as ctrlinit's user (root in a container) unless they set their own",
                            "",
                        );
                    } else {
                        globals.user = Some(t);
                        note(
                            notes,
                            o,
                            "supervisord switched to this user, so every program ran as it: written as each program's user (unless it sets one)",
                            "run ctrlinit as that user instead (USER in the Dockerfile) if ctrlinit itself should not be root",
                        );
                    }
                }
            }
            "umask" => match datatypes::octal(&o.value) {
                Ok(m) => globals.umask = Some(m),
                Err(e) => errors.push(InputError::at(
                    &o.file,
                    o.line,
                    format!("[supervisord] umask: {e}"),
                    "write an octal mask such as 022",
                )),
            },
            "nodaemon" => note(notes, o, "ctrlinit always runs in the foreground", ""),
            "logfile" => {
                let console = matches!(
                    datatypes::logfile(&o.value),
                    datatypes::LogTarget::Console | datatypes::LogTarget::Nowhere
                );
                let message = if console {
                    "ctrlinit's own lines go to the console and to <log_dir>/ctrlinit.log"
                } else {
                    "ctrlinit's own log is <log_dir>/ctrlinit.log (and the console), not this file"
                };
                note(notes, o, message, "[init] log_dir chooses the directory");
            }
            "logfile_maxbytes" | "logfile_backups" => note(
                notes,
                o,
                "ctrlinit.log is rotated as program logs are, not by this setting",
                "",
            ),
            "pidfile" => note(
                notes,
                o,
                "ctrlinit writes no pid file: it is PID 1, and `ctrlinit status` reaches it through its socket",
                "",
            ),
            "minfds" | "minprocs" => {
                let limit = if o.key == "minfds" { "nofile" } else { "nproc" };
                note(
                    notes,
                    o,
                    &format!(
                        "supervisord raised its own limit to at least this; ctrlinit starts programs with the {limit} limit it was started with (raised to the hard limit)"
                    ),
                    &format!(
                        "set rlimits = {{ {limit} = {} }} on the programs that need more",
                        o.value
                    ),
                );
            }
            "directory" => note(
                notes,
                o,
                "ctrlinit does not change its own directory",
                "set workdir on the programs that need it",
            ),
            "identifier" | "nocleanup" | "strip_ansi" | "silent" => {
                note(notes, o, "has no ctrlinit equivalent; not carried over", "")
            }
            _ => note(
                notes,
                o,
                "not a supervisord setting, so supervisord ignored it; not carried over",
                "",
            ),
        }
    }
    (init, globals)
}

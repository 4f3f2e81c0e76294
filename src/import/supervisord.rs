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
    let mut r = Reading {
        init: Table::new(&["init"]),
        globals: Globals::default(),
        notes,
        errors,
    };
    let Some(section) = section else {
        r.notes.push(Note::general(
            "[supervisord]",
            "the input has no [supervisord] section (an included file?): its programs are imported with ctrlinit's [init] defaults",
            "",
        ));
        return (r.init, r.globals);
    };
    r.init.comments.push(format!(
        "[supervisord] of {}:{}",
        section.file.display(),
        section.line
    ));
    let mut keys: Vec<&Opt> = section.options.iter().collect();
    for d in defaults {
        if !keys.iter().any(|o| o.key == d.key) {
            keys.push(d);
        }
    }
    for o in keys {
        r.key(o);
    }
    (r.init, r.globals)
}

/// `[supervisord]` being read: what it gives so far, and where errors and notes go.
struct Reading<'a> {
    init: Table,
    globals: Globals,
    notes: &'a mut Vec<Note>,
    errors: &'a mut Vec<InputError>,
}

impl Reading<'_> {
    /// One key: carried over where it has a meaning, said otherwise.
    fn key(&mut self, o: &Opt) {
        match o.key.as_str() {
            "childlogdir" => self.log_dir(o),
            "loglevel" => self.log_level(o),
            "environment" => self.environment(o),
            "user" => self.user(o),
            "umask" => match datatypes::octal(&o.value) {
                Ok(m) => self.globals.umask = Some(m),
                Err(e) => self.errors.push(InputError::at(
                    &o.file,
                    o.line,
                    format!("[supervisord] umask: {e}"),
                    "write an octal mask such as 022",
                )),
            },
            _ => {
                let (message, todo) = not_carried(o);
                self.note(o, &message, &todo);
            }
        }
    }

    /// `childlogdir` as `[init] log_dir`.
    fn log_dir(&mut self, o: &Opt) {
        if let Some(t) = self.text(o) {
            self.globals.log_dir = t.as_static();
            self.init.set_with(
                "log_dir",
                Val::Str(t.to_ctrlinit()),
                "childlogdir: where programs' log files go (and ctrlinit's own, ctrlinit.log)",
            );
        }
    }

    /// `loglevel` as `[init] log_level`.
    fn log_level(&mut self, o: &Opt) {
        let level = match o.value.to_lowercase().as_str() {
            "critical" | "error" => Some("error"),
            "warn" => Some("warn"),
            "info" => Some("info"),
            "debug" => Some("debug"),
            "trace" | "blather" => Some("trace"),
            _ => None,
        };
        match level {
            Some(l) => self.init.set_with(
                "log_level",
                Val::Str(l.into()),
                &format!("loglevel = {}", o.value),
            ),
            None => self.errors.push(InputError::at(
                &o.file,
                o.line,
                format!("[supervisord] loglevel: {:?} is not a log level", o.value),
                "use critical, error, warn, info, debug, trace or blather",
            )),
        }
    }

    /// `environment`: every program's, and what `%(ENV_X)s` sees first.
    fn environment(&mut self, o: &Opt) {
        let Some(t) = self.text(o) else { return };
        match key_value_pairs(&t) {
            Ok(pairs) => {
                self.globals.env = pairs;
                self.globals.env_at = Some((o.file.clone(), o.line));
            }
            Err(e) => self.errors.push(InputError::at(
                &o.file,
                o.line,
                format!("[supervisord] environment: {e}"),
                "write KEY=\"value\",KEY2=\"value 2\"",
            )),
        }
    }

    /// `user`: supervisord ran every program as it (root is ctrlinit's own user anyway).
    fn user(&mut self, o: &Opt) {
        let Some(t) = self.text(o) else { return };
        if t.as_static().as_deref() == Some("root") || t.as_static().as_deref() == Some("0") {
            self.note(
                o,
                "root: programs run as ctrlinit's user (root in a container) unless they set their own",
                "",
            );
        } else {
            self.globals.user = Some(t);
            self.note(
                o,
                "supervisord switched to this user, so every program ran as it: written as each program's user (unless it sets one)",
                "run ctrlinit as that user instead (USER in the Dockerfile) if ctrlinit itself should not be root",
            );
        }
    }

    /// `o`'s value expanded as supervisord expands `[supervisord]`'s (no program names).
    fn text(&mut self, o: &Opt) -> Option<Text> {
        let used = Cell::new(false);
        let scope = Scope {
            program_name: "",
            group_name: "",
            global_env: &[],
            process: None,
            process_num_used: &used,
        };
        let lookup = |k: &str| match k {
            "program_name" | "group_name" => None,
            k => scope.lookup(k, &o.file),
        };
        match expand(&o.value, &lookup) {
            Ok((t, _)) => Some(t),
            Err(e) => {
                self.errors.push(InputError::at(
                    &o.file,
                    o.line,
                    format!(
                        "[supervisord] {}: {}",
                        o.key,
                        e.message("here, host_node_name, ENV_<variable>")
                    ),
                    "write %% for a literal %",
                ));
                None
            }
        }
    }

    fn note(&mut self, o: &Opt, message: &str, todo: &str) {
        self.notes.push(Note::at(
            &o.file,
            o.line,
            format!("[supervisord] {}", o.key),
            message,
            todo,
        ));
    }
}

/// What becomes of a key ctrlinit does not carry over, and what to do instead.
fn not_carried(o: &Opt) -> (String, String) {
    let (message, todo): (&str, &str) = match o.key.as_str() {
        "nodaemon" => ("ctrlinit always runs in the foreground", ""),
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
            (message, "[init] log_dir chooses the directory")
        }
        "logfile_maxbytes" | "logfile_backups" => (
            "ctrlinit.log is rotated as program logs are, not by this setting",
            "",
        ),
        "pidfile" => (
            "ctrlinit writes no pid file: it is PID 1, and `ctrlinit status` reaches it through its socket",
            "",
        ),
        "minfds" | "minprocs" => {
            let limit = if o.key == "minfds" { "nofile" } else { "nproc" };
            return (
                format!(
                    "supervisord raised its own limit to at least this; ctrlinit starts programs with the {limit} limit it was started with (raised to the hard limit)"
                ),
                format!(
                    "set rlimits = {{ {limit} = {} }} on the programs that need more",
                    o.value
                ),
            );
        }
        "directory" => (
            "ctrlinit does not change its own directory",
            "set workdir on the programs that need it",
        ),
        "identifier" | "nocleanup" | "strip_ansi" | "silent" => {
            ("has no ctrlinit equivalent; not carried over", "")
        }
        _ => (
            "not a supervisord setting, so supervisord ignored it; not carried over",
            "",
        ),
    };
    (message.to_string(), todo.to_string())
}

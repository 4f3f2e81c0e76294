//! How many processes a `[program:x]` runs and how they are numbered and named: `numprocs`,
//! `numprocs_start` and `process_name` as ctrlinit's `instances = N` (`NAME-0` … with
//! `${INSTANCE}`), and what that changes for a supervisord user.

use super::datatypes;
use super::expand::Value;
use super::ini::Opt;
use super::keys::{Got, Keys};
use super::report::InputError;
use super::scope::{ProcessNum, Scope};
use super::text::Piece;
use super::toml_out::Val;
use crate::config::instances::MAX_INSTANCES;

/// A section's processes as supervisord counts and numbers them.
pub struct Processes {
    /// `numprocs`, when set.
    pub numprocs: Option<(Got<i64>, Opt)>,
    /// `numprocs_start`: the first process number.
    pub start: Got<i64>,
    /// `instances = …` to write (more than one process, or a count read at start).
    pub instances: Option<Val>,
    /// What `%(numprocs)d` stands for.
    pub count: Value,
    /// What `%(process_num)d` stands for.
    pub num: ProcessNum,
}

impl Processes {
    /// Whether the program becomes instances.
    pub fn instanced(&self) -> bool {
        self.instances.is_some()
    }

    /// The number of the first process (0 when it is only known at start).
    pub fn first_number(&self) -> i64 {
        match &self.start {
            Got::Now(n) => *n,
            Got::Later(_) => 0,
        }
    }
}

/// Reads `numprocs` and `numprocs_start` in the first round; `None` when the section runs no
/// process (said). A `process_name` that cannot tell several processes apart is an error, as
/// it is for supervisord. `number` is the process, when one process of the section is written
/// as a program of its own (see `numbered`).
pub fn read_processes(
    k: &mut Keys<'_>,
    early: &Scope<'_>,
    number: Option<i64>,
) -> Option<Processes> {
    let numprocs = k.typed("numprocs", early, datatypes::integer);
    let start = match k.typed("numprocs_start", early, datatypes::integer) {
        Some((got, _)) => got,
        None => Got::Now(0),
    };
    let (instances, count) = match &numprocs {
        None => (None, Value::Int(1)),
        Some((Got::Now(n), opt)) => {
            let n = known_count(k, *n, opt)?;
            (if n > 1 { Some(Val::Int(n)) } else { None }, Value::Int(n))
        }
        Some((Got::Later(text), _)) => (
            Some(Val::Str(text.to_ctrlinit())),
            Value::Later(Piece::Env("INSTANCES".into())),
        ),
    };
    let instances = instances.filter(|_| number.is_none());
    let num = match (number, &start, instances.is_some()) {
        (Some(n), _, _) => ProcessNum::Fixed(n),
        (None, _, true) => ProcessNum::Instance,
        (None, Got::Now(s), false) => ProcessNum::Fixed(*s),
        (None, Got::Later(_), false) => ProcessNum::Instance,
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
                "{} numprocs = {n}: process_name {:?} has no %(process_num)",
                k.label, pn.value
            ),
            "add %(process_num)s to process_name (supervisord refuses it too)",
        ));
    }
    Some(Processes {
        numprocs,
        start,
        instances,
        count,
        num,
    })
}

/// A `numprocs` known now, capped at ctrlinit's limit (said); `None` below 1 (said).
fn known_count(k: &mut Keys<'_>, n: i64, opt: &Opt) -> Option<i64> {
    if n < 1 {
        k.note(
            opt,
            format!("numprocs = {n} runs no process: not imported"),
            "remove the section, or run at least one",
        );
        return None;
    }
    if n > MAX_INSTANCES {
        k.note(
            opt,
            format!("numprocs = {n}: ctrlinit runs at most {MAX_INSTANCES} instances of a program; written as {MAX_INSTANCES}"),
            "split the work over more programs",
        );
    }
    Some(n.min(MAX_INSTANCES))
}

/// The names supervisord gave the processes, for the notes: the first's and, when there are
/// several, the last's.
pub struct SupervisordNames {
    /// The first process's name, and where `process_name` was written.
    pub first: Option<(String, Opt)>,
    /// The last process's name.
    pub last: Option<String>,
}

/// Says what changes with the numbers and names: a `numprocs_start` offset lost on values that
/// use the process number, and the names ctrlinit gives.
pub fn note_numbers_and_names(
    k: &mut Keys<'_>,
    procs: &Processes,
    names: &SupervisordNames,
    numbers_used: bool,
    name: &str,
    supervisord_name: &str,
) {
    if procs.instanced() && numbers_used {
        note_offset(k, procs);
    }
    match (&names.first, procs.instanced()) {
        (Some((pn, opt)), true) => {
            let last = match &procs.count {
                Value::Int(n) => format!("{name}-{}", n - 1),
                _ => format!("{name}-<n-1>"),
            };
            let theirs = match &names.last {
                Some(l) => format!("{pn} … {l}"),
                None => format!("{pn} …"),
            };
            k.note(
                opt,
                format!(
                    "instances are named {name}-0 … {last} (supervisord's processes were {theirs})"
                ),
                format!("`ctrlinit start|stop|restart {name}` takes them all, `{name}-0` one"),
            );
        }
        (Some((pn, opt)), false) if pn != supervisord_name => {
            k.note(
                opt,
                format!("the program is named {name} (supervisord's process was {pn})"),
                "",
            );
        }
        _ => {}
    }
}

/// A `numprocs_start` other than 0: ctrlinit's instance numbers start at 0.
fn note_offset(k: &mut Keys<'_>, procs: &Processes) {
    let offset = match &procs.start {
        Got::Now(0) => None,
        Got::Now(n) => Some(n.to_string()),
        Got::Later(t) => Some(t.to_ctrlinit()),
    };
    if let (Some(offset), Some(opt)) = (offset, k.opt("numprocs_start").cloned()) {
        k.note(
            &opt,
            format!("process numbers started at {offset}; ctrlinit's ${{INSTANCE}} counts from 0"),
            "have the program add the offset, or make its values start at 0",
        );
    }
}

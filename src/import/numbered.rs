//! A `numprocs` section whose process numbers are written out formatted
//! (`%(process_num)03d`) or offset (`numprocs_start = 5`). ctrlinit's `${INSTANCE}` counts from
//! 0 and has no width, so `instances = N` cannot say `--id 005`: instead each process becomes a
//! program of its own, named and numbered as supervisord named and numbered it (`worker_005`,
//! run with `--id 005`). Where the numbers only name processes (`process_name`), or are plain
//! and count from 0, `instances = N` says the same and is kept.

use std::cell::Cell;

use super::datatypes;
use super::expand::{Value, expand, parse};
use super::ini::{Opt, Section};
use super::names;
use super::program::Program;
use super::report::Note;
use super::scope::{Process, ProcessNum, Scope};
use crate::config::instances::MAX_INSTANCES;

/// The values written out per process, where a process number changes what the program runs.
const WRITTEN: &[&str] = &["command", "environment", "directory"];

/// The process numbers of a section to write as one program each, or `None` when
/// `instances = N` says the same (or the count or the start is only known at start).
pub fn numbered_processes(section: &Section, defaults: &[Opt]) -> Option<Vec<i64>> {
    let count = datatypes::integer(&section.get("numprocs", defaults)?.value).ok()?;
    if count < 2 {
        return None;
    }
    let start = match section.get("numprocs_start", defaults) {
        None => 0,
        Some(o) => datatypes::integer(&o.value).ok()?,
    };
    let formatted = WRITTEN
        .iter()
        .filter_map(|k| section.get(k, defaults))
        .filter_map(|o| parse(&o.value).ok())
        .flatten()
        .filter_map(Result::err)
        .filter(|spec| spec.key == "process_num")
        .any(|spec| start != 0 || !spec.is_plain());
    let count = count.min(MAX_INSTANCES);
    formatted.then(|| (start..start + count).collect())
}

/// One program per process number, each with the name supervisord gave the process; the note
/// that says so goes to `notes`.
pub fn programs<'a>(
    section: &'a Section,
    defaults: &'a [Opt],
    supervisord_name: &str,
    group: Option<String>,
    numbers: &[i64],
    taken: &mut names::Unique,
    notes: &mut Vec<Note>,
) -> Vec<Program<'a>> {
    let file = names::program_name(supervisord_name, 0);
    let group_name = group
        .clone()
        .unwrap_or_else(|| supervisord_name.to_string());
    let theirs: Vec<String> = numbers
        .iter()
        .map(|&n| {
            process_name(
                section,
                defaults,
                supervisord_name,
                &group_name,
                n,
                numbers.len(),
            )
            .unwrap_or_else(|| format!("{supervisord_name}-{n}"))
        })
        .collect();
    let programs: Vec<Program<'a>> = numbers
        .iter()
        .zip(&theirs)
        .map(|(&n, theirs)| Program {
            section,
            defaults,
            supervisord_name: supervisord_name.to_string(),
            group: group.clone(),
            name: taken.take(&names::program_name(theirs, 0)),
            number: Some(n),
            file: file.clone(),
        })
        .collect();
    let ours: Vec<&str> = programs.iter().map(|p| p.name.as_str()).collect();
    notes.push(note(section, defaults, &ours, &theirs));
    programs
}

/// supervisord's `process_name` for process `num` (`%(program_name)s` when not set), when it
/// is known now.
fn process_name(
    section: &Section,
    defaults: &[Opt],
    program_name: &str,
    group_name: &str,
    num: i64,
    count: usize,
) -> Option<String> {
    let opt = section.get("process_name", defaults)?;
    let used = Cell::new(false);
    let scope = Scope {
        program_name,
        group_name,
        global_env: &[],
        process: Some(Process {
            num: ProcessNum::Fixed(num),
            count: Value::Int(count as i64),
            env: &[],
        }),
        process_num_used: &used,
    };
    let (text, _) = expand(&opt.value, &|k| scope.lookup(k, &opt.file)).ok()?;
    text.as_static()
}

/// What became of the section: its processes are programs of their own, and why.
fn note(section: &Section, defaults: &[Opt], ours: &[&str], theirs: &[String]) -> Note {
    let at = section.get("numprocs", defaults);
    let (file, line) = at.map_or((&section.file, section.line), |o| (&o.file, o.line));
    let span = |names: &[&str]| match names {
        [one] => one.to_string(),
        [first, .., last] => format!("{first} … {last}"),
        [] => String::new(),
    };
    let theirs: Vec<&str> = theirs.iter().map(String::as_str).collect();
    let renamed = if theirs == ours {
        String::new()
    } else {
        format!(" (supervisord's processes were {})", span(&theirs))
    };
    Note::at(
        file,
        line,
        format!("[{}] numprocs", section.name),
        format!(
            "its process numbers are written out with a width or from numprocs_start, which ctrlinit's ${{INSTANCE}} (from 0, no width) cannot say: written as {} programs of their own, {}{renamed}, each with its numbers as supervisord wrote them",
            ours.len(),
            span(ours),
        ),
        format!(
            "start, stop or restart them by name (`ctrlinit restart {}`): no one name takes them all, as it would for instances",
            ours.join(" ")
        ),
    )
}

//! `ctrlinit import supervisord.conf [-o DIR]`: a supervisord configuration as ctrlinit's.
//!
//! The input is read as supervisord reads it ([`read`], [`ini`], [`glob`]): the same INI
//! dialect, the same includes, the same expansions ([`expand`], [`scope`]), the same value types
//! ([`datatypes`]) and the same word splitting ([`shlex`], [`environment`]). Each `[program:x]`
//! becomes a `[program.NAME]` table ([`program`], with [`keys`], [`restart`] and [`logs`]),
//! `priority` becomes dependencies ([`order`]), `[group:x]` a file of its programs ([`groups`]),
//! `[supervisord]` becomes `[init]` and what every program inherits ([`supervisord`],
//! [`globals`]); the rest is said ([`sections`]). Every setting not carried over exactly is a
//! [`Note`] with where it was written and what to do. Output files ([`files`]) are written by
//! hand ([`toml_out`], values `$`-escaped by [`text`]), one per program or group ([`write`]).
//!
//! Layering: this module reads `config` (names, limits), `model` (signal names) and `sys` (bounded
//! reads); nothing but `main.rs` uses it.

#![warn(missing_docs)]

pub mod datatypes;
pub mod environment;
pub mod expand;
pub mod files;
pub mod glob;
pub mod globals;
pub mod groups;
pub mod ini;
pub mod keys;
pub mod logs;
pub mod names;
pub mod numbered;
pub mod order;
pub mod processes;
pub mod program;
pub mod read;
pub mod report;
pub mod restart;
pub mod rounds;
pub mod s6;
pub mod scope;
pub mod sections;
pub mod shlex;
pub mod supervisord;
pub mod text;
pub mod toml_out;
pub mod write;

use std::path::Path;

use crate::config;
use ini::Section;
pub use report::{InputError, Note, render_notes};
use toml_out::{OutFile, Val};

/// The output of an import.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The files to write, in order.
    pub files: Vec<OutFile>,
    /// Everything not carried over exactly.
    pub notes: Vec<Note>,
    /// Programs written (instanced ones count once).
    pub programs: usize,
    /// Input files read.
    pub inputs: usize,
    /// Why the start order written is incomplete, when it is (an s6-rc dependency on a unit
    /// of a base image the root does not hold): said in one line after the summary.
    pub incomplete: Option<String>,
}

/// Imports the supervisord configuration at `path` (and the files it includes).
pub fn import(path: &Path) -> Result<Imported, Vec<InputError>> {
    let input = read::read_input(path)?;
    let ini = &input.ini;
    let mut notes = input.notes.clone();
    let mut errors = Vec::new();

    let (init, mut globals) = supervisord::translate(
        ini.section("supervisord"),
        &ini.defaults,
        &mut notes,
        &mut errors,
    );
    note_listeners(ini, &mut globals, &mut notes);
    for s in &ini.sections {
        if let Some(n) = sections::other(s) {
            notes.push(n);
        }
    }
    let groups = groups::read_groups(ini, &mut notes, &mut errors);
    let programs = name_programs(ini, &groups, &mut notes, &mut errors);
    let mut translated = Vec::new();
    for p in &programs {
        if let Some(t) = program::translate(p, &globals, &mut notes, &mut errors) {
            translated.push((p.supervisord_name.clone(), p.group.clone(), t));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    write_order(&mut translated, &groups, &mut notes);
    general_notes(ini, &translated, &mut notes);
    let files = files::output_files(
        init,
        translated.as_slice(),
        &groups,
        &mut names::Unique::default(),
    );
    let needs = files::needed_variables(&files);
    if !needs.is_empty() {
        notes.push(Note::general(
            "environment",
            format!(
                "the output reads {} from ctrlinit's environment when it loads (unset, it is an error, as it was for supervisord)",
                needs.join(", ")
            ),
            "give the container these variables, or write defaults as ${NAME:-value}",
        ));
    }
    Ok(Imported {
        incomplete: None,
        programs: translated.len(),
        files,
        notes,
        inputs: input.files.len(),
    })
}

/// Every `[eventlistener:x]` said; one that ended supervisord on FATAL is remembered, so the
/// programs get `on_exhausted = "exit"`.
fn note_listeners(ini: &ini::Ini, globals: &mut globals::Globals, notes: &mut Vec<Note>) {
    for s in ini
        .sections
        .iter()
        .filter(|s| s.name.starts_with("eventlistener:"))
    {
        let (note, ends) = sections::eventlistener(s, &ini.defaults);
        notes.push(note);
        if ends && globals.exit_on_fatal.is_none() {
            globals.exit_on_fatal = Some(s.name.split_once(':').map_or("", |(_, n)| n).to_string());
        }
    }
}

/// Each `[program:x]` with its ctrlinit name, kept apart from the others' and from their
/// instances' (`web` with numprocs = 3 takes web-0, web-1 and web-2 too); a name that changed
/// is said.
fn name_programs<'a>(
    ini: &'a ini::Ini,
    groups: &groups::Groups,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) -> Vec<program::Program<'a>> {
    let defaults = &ini.defaults;
    let sections = || {
        ini.sections
            .iter()
            .filter(|s| s.name.starts_with("program:"))
    };
    let mut taken = names::Unique::default();
    for s in sections().filter(|s| numbered::numbered_processes(s, defaults).is_none()) {
        let raw = s.name.split_once(':').map_or("", |(_, n)| n.trim());
        if let Some(n) = s
            .get("numprocs", defaults)
            .and_then(|o| datatypes::integer(&o.value).ok())
            .filter(|&n| n > 1)
        {
            let base = names::program_name(raw, suffix_room(s, defaults));
            for i in 0..n.min(config::instances::MAX_INSTANCES) {
                taken.reserve(&config::instances::instance_name(&base, i as u32));
            }
        }
    }
    let mut programs = Vec::new();
    for s in sections() {
        let Some(sup_name) = groups::section_name(s, errors) else {
            continue;
        };
        let group = groups.member_of.get(&sup_name).cloned();
        if let Some(numbers) = numbered::numbered_processes(s, defaults) {
            let (taken, n) = (&mut taken, &numbers);
            programs.extend(numbered::programs(
                s, defaults, &sup_name, group, n, taken, notes,
            ));
            continue;
        }
        let base = names::program_name(&sup_name, suffix_room(s, defaults));
        let name = taken.take(&base);
        if name != sup_name {
            notes.push(Note::at(
                &s.file,
                s.line,
                format!("[{}]", s.name),
                format!("named {name} (ctrlinit names are 1-64 characters of a-z, 0-9, '_', '.', '-', and unique)"),
                format!("use `{name}` in ctrlinit commands"),
            ));
        }
        programs.push(program::Program {
            section: s,
            defaults,
            group,
            supervisord_name: sup_name,
            file: name.clone(),
            name,
            number: None,
        });
    }
    programs
}

/// Characters to leave for an instance suffix (`-9`, `-99` …), from `numprocs`.
fn suffix_room(s: &Section, defaults: &[ini::Opt]) -> usize {
    match s.get("numprocs", defaults) {
        None => 0,
        Some(o) => match datatypes::integer(&o.value) {
            Ok(n) if n > 1 => format!("-{}", n.min(1000) - 1).len(),
            Ok(_) => 0,
            Err(_) => 4,
        },
    }
}

/// `priority` as `after = […]`: ordering only, as supervisord's priority was.
fn write_order(
    translated: &mut [(String, Option<String>, program::Translated)],
    groups: &groups::Groups,
    notes: &mut Vec<Note>,
) {
    let group_priority = |g: &Option<String>| {
        g.as_ref()
            .and_then(|g| groups.groups.iter().find(|x| &x.0 == g))
            .map(|x| x.1)
    };
    let places: Vec<order::Place> = translated
        .iter()
        .map(|(_, g, t)| order::Place {
            name: t.name.clone(),
            key: t.priority.map(|p| (group_priority(g).unwrap_or(p), p)),
            autostart: t.autostart,
        })
        .collect();
    let after = order::after(&places);
    let mut any = false;
    for ((_, _, t), deps) in translated.iter_mut().zip(after) {
        if deps.is_empty() {
            continue;
        }
        any = true;
        t.tables[0].set_with(
            "after",
            Val::Array(deps.into_iter().map(Val::Str).collect()),
            "priority: supervisord started it after these (a lower priority) and stopped it before them, requiring nothing of them",
        );
    }
    if any {
        notes.push(Note::general(
            "priority",
            "written as after = [...] on the programs of the next lower priority: ordering only, as in supervisord (started after them, stopped before them; a stop or restart of one takes no other along, and one that is down holds nothing back)",
            "where a program truly needs another, write depends_on = [\"NAME\"] instead, with a ready check on NAME",
        ));
    }
}

/// Notes about the import as a whole.
fn general_notes(
    ini: &ini::Ini,
    translated: &[(String, Option<String>, program::Translated)],
    notes: &mut Vec<Note>,
) {
    if translated.is_empty() {
        notes.push(Note::general(
            "programs",
            "the input defines no program that could be imported; ctrlinit needs at least one",
            "add [program.NAME] tables, or import the file that includes the programs",
        ));
        return;
    }
    note_stopping(translated, notes);
    note_here_and_host(ini, notes);
    notes.push(Note::general(
        "environment",
        "ctrlinit does not set SUPERVISOR_ENABLED, SUPERVISOR_PROCESS_NAME, SUPERVISOR_GROUP_NAME or SUPERVISOR_SERVER_URL for programs",
        "a script that tests them can test CTRLINIT_* in its env, or be given them in env",
    ));
}

/// How stopping differs: the whole process group is signalled, and the container's stop
/// budget caps a long `stopwaitsecs`.
fn note_stopping(
    translated: &[(String, Option<String>, program::Translated)],
    notes: &mut Vec<Note>,
) {
    let group_loose: Vec<&str> = translated
        .iter()
        .filter(|(_, _, t)| !t.signals_group)
        .map(|(_, _, t)| t.name.as_str())
        .collect();
    if !group_loose.is_empty() {
        notes.push(Note::general(
            "stopasgroup/killasgroup",
            format!(
                "ctrlinit always signals a program's whole process group; supervisord signalled only the main process of {}",
                group_loose.join(", ")
            ),
            "nothing, unless a program's children must outlive its stop",
        ));
    }
    let slow: Vec<String> = translated
        .iter()
        .filter(|(_, _, t)| t.stop_seconds.is_some_and(|s| s > 9))
        .map(|(_, _, t)| t.name.clone())
        .collect();
    if !slow.is_empty() {
        notes.push(Note::general(
            "stopwaitsecs",
            format!(
                "{} may take longer to stop than [init] stop_timeout (9s, to fit docker stop's 10s), which caps a container's stop: their stop_timeout is stopwaitsecs, or supervisord's default of 10s",
                slow.join(", ")
            ),
            "raise [init] stop_timeout together with docker stop -t / stop_grace_period, or shorten the programs' stop_timeout",
        ));
    }
}

/// `%(here)s` written as directories of this machine, `%(host_node_name)s` as `${HOSTNAME}`.
fn note_here_and_host(ini: &ini::Ini, notes: &mut Vec<Note>) {
    let mut here_dirs: Vec<String> = Vec::new();
    let mut host = false;
    for s in &ini.sections {
        for o in &s.options {
            if o.value.contains("%(here)") {
                let dir = read::absolute(&o.file)
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                if !here_dirs.contains(&dir) {
                    here_dirs.push(dir);
                }
            }
            host |= o.value.contains("%(host_node_name)");
        }
    }
    if !here_dirs.is_empty() {
        notes.push(Note::general(
            "%(here)s",
            format!(
                "written as the directory of the file it is in: {}",
                here_dirs.join(", ")
            ),
            "if the image keeps these files elsewhere, correct those paths",
        ));
    }
    if host {
        notes.push(Note::general(
            "%(host_node_name)s",
            "written as ${HOSTNAME}, which Docker and Kubernetes set to the container's host name",
            "outside them, set HOSTNAME in ctrlinit's environment",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Imports `text` written as a supervisord.conf of its own.
    fn import_text(text: &str) -> Result<Imported, Vec<InputError>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("supervisord.conf");
        std::fs::write(&path, text).unwrap();
        import(&path)
    }

    /// `[program.NAME]`'s entry `key` in the output: its value and its comments.
    fn entry(out: &Imported, name: &str, key: &str) -> Option<(Val, Vec<String>)> {
        let table = out
            .files
            .iter()
            .flat_map(|f| &f.tables)
            .find(|t| t.path == ["program", name])
            .unwrap_or_else(|| panic!("no [program.{name}] in {out:#?}"));
        let e = table.entries.iter().find(|e| e.key == key)?;
        Some((e.value.clone(), e.comments.clone()))
    }

    fn string(out: &Imported, name: &str, key: &str) -> Option<String> {
        match entry(out, name, key)?.0 {
            Val::Str(s) => Some(s),
            other => panic!("{name}.{key} is {other:?}"),
        }
    }

    fn words(out: &Imported, name: &str) -> Vec<String> {
        match entry(out, name, "command").unwrap().0 {
            Val::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    Val::Str(s) => s,
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("{name}.command is {other:?}"),
        }
    }

    #[test]
    fn umask_is_the_programs_own_else_supervisords() {
        let out = import_text(
            "[supervisord]\numask = 027\n\n\
             [program:own]\ncommand = /bin/own\numask = 2\n\n\
             [program:prefixed]\ncommand = /bin/prefixed\numask = 0o077\n\n\
             [program:inherits]\ncommand = /bin/inherits\n",
        )
        .unwrap();
        assert_eq!(string(&out, "own", "umask").as_deref(), Some("002"));
        assert_eq!(string(&out, "prefixed", "umask").as_deref(), Some("077"));
        let (value, comments) = entry(&out, "inherits", "umask").unwrap();
        assert_eq!(value, Val::Str("027".into()));
        assert_eq!(comments, ["[supervisord] umask"]);
        // Without either, the program keeps ctrlinit's umask: nothing is written.
        let out = import_text("[program:plain]\ncommand = /bin/plain\n").unwrap();
        assert_eq!(string(&out, "plain", "umask"), None);
        // A mask supervisord cannot read as octal stops the import at its line.
        let errors = import_text("[program:bad]\ncommand = /bin/bad\numask = 089\n").unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].line, Some(3), "{errors:?}");
    }

    #[test]
    fn stopsignal_names_and_numbers_become_stop_signal() {
        let out = import_text(
            "[program:name]\ncommand = /bin/a\nstopsignal = QUIT\n\n\
             [program:number]\ncommand = /bin/b\nstopsignal = 1\n\n\
             [program:lower]\ncommand = /bin/c\nstopsignal = sigint\n\n\
             [program:unset]\ncommand = /bin/d\n",
        )
        .unwrap();
        assert_eq!(
            string(&out, "name", "stop_signal").as_deref(),
            Some("SIGQUIT")
        );
        assert_eq!(
            string(&out, "number", "stop_signal").as_deref(),
            Some("SIGHUP")
        );
        assert_eq!(
            string(&out, "lower", "stop_signal").as_deref(),
            Some("SIGINT")
        );
        // supervisord's default is TERM, and so is ctrlinit's: nothing to write.
        assert_eq!(string(&out, "unset", "stop_signal"), None);
        let errors =
            import_text("[program:bad]\ncommand = /bin/bad\n\nstopsignal = BOGUS\n").unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].line, Some(4), "{errors:?}");
        assert!(errors[0].message.contains("BOGUS"), "{errors:?}");
    }

    #[test]
    fn group_name_is_the_group_or_else_the_program() {
        let out = import_text(
            "[group:site]\nprograms = web\n\n\
             [program:web]\ncommand = /bin/web --group=%(group_name)s\n\n\
             [program:lone]\ncommand = /bin/lone --group=%(group_name)s\n",
        )
        .unwrap();
        assert_eq!(words(&out, "web"), ["/bin/web", "--group=site"]);
        assert_eq!(words(&out, "lone"), ["/bin/lone", "--group=lone"]);
    }

    #[test]
    fn host_node_name_is_the_hostname_variable_and_said() {
        let out = import_text(
            "[program:web]\ncommand = /bin/web \"--host=%(host_node_name)s\"\n\
             environment = NODE=\"%(host_node_name)s\"\n",
        )
        .unwrap();
        assert_eq!(words(&out, "web"), ["/bin/web", "--host=${HOSTNAME}"]);
        let env = out
            .files
            .iter()
            .flat_map(|f| &f.tables)
            .find(|t| t.path == ["program", "web", "env"])
            .unwrap();
        assert_eq!(env.entries[0].key, "NODE");
        assert_eq!(env.entries[0].value, Val::Str("${HOSTNAME}".into()));
        assert!(
            out.notes
                .iter()
                .any(|n| n.what == "%(host_node_name)s" && n.message.contains("${HOSTNAME}")),
            "{:#?}",
            out.notes
        );
        assert!(
            out.notes
                .iter()
                .any(|n| n.what == "environment" && n.message.contains("HOSTNAME")),
            "the output reads HOSTNAME, which must be said: {:#?}",
            out.notes
        );
    }
}

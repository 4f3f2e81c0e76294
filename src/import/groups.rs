//! `[group:x]` sections: which programs each groups (a program is in at most one), and its
//! priority; and the names supervisord allows after `program:` and `group:`.

use std::collections::HashMap;
use std::path::PathBuf;

use super::datatypes;
use super::ini::{Ini, Section};
use super::report::{InputError, Note};

/// `[group:x]` sections: which group each program is in, and each group's priority.
pub struct Groups {
    /// Program (supervisord name) → group name.
    pub member_of: HashMap<String, String>,
    /// Each group: its name, priority, where its section is, its members in order.
    pub groups: Vec<(String, i64, PathBuf, usize, Vec<String>)>,
}

/// Reads every `[group:x]`.
pub fn read_groups(ini: &Ini, notes: &mut Vec<Note>, errors: &mut Vec<InputError>) -> Groups {
    let mut g = Groups {
        member_of: HashMap::new(),
        groups: Vec::new(),
    };
    for s in ini.sections.iter().filter(|s| s.name.starts_with("group:")) {
        let Some(name) = section_name(s, errors) else {
            continue;
        };
        let Some(programs) = s.get("programs", &ini.defaults) else {
            errors.push(InputError::at(
                &s.file,
                s.line,
                format!("[{}] has no programs setting", s.name),
                "add programs = a,b (supervisord refuses it too)",
            ));
            continue;
        };
        let priority = match s.get("priority", &ini.defaults) {
            Some(o) => match datatypes::integer(&o.value) {
                Ok(n) => n,
                Err(e) => {
                    errors.push(InputError::at(
                        &o.file,
                        o.line,
                        format!("[{}] priority: {e}", s.name),
                        "write a whole number",
                    ));
                    999
                }
            },
            None => 999,
        };
        let mut members = Vec::new();
        for m in datatypes::list_of_strings(&programs.value) {
            let is_program = ini.section(&format!("program:{m}")).is_some();
            if !is_program {
                if ini.section(&format!("fcgi-program:{m}")).is_some() {
                    continue;
                }
                errors.push(InputError::at(
                    &programs.file,
                    programs.line,
                    format!("[{}] names unknown program {m:?}", s.name),
                    "define [program:NAME] for it, or remove it from the list",
                ));
                continue;
            }
            if let Some(other) = g.member_of.get(&m) {
                notes.push(Note::at(
                    &programs.file,
                    programs.line,
                    format!("[{}] programs", s.name),
                    format!(
                        "{m} is in [group:{other}] already: it is written once, with that group"
                    ),
                    "",
                ));
                continue;
            }
            g.member_of.insert(m.clone(), name.clone());
            members.push(m);
        }
        notes.push(Note::at(
            &s.file,
            s.line,
            format!("[{}]", s.name),
            "ctrlinit has no process groups: its programs are written together in one file, and its priority orders them (see priority)",
            format!(
                "`ctrlinit start|stop|restart {}` instead of `supervisorctl start {name}:*`",
                if members.is_empty() { "NAME…".to_string() } else { members.join(" ") }
            ),
        ));
        g.groups
            .push((name, priority, s.file.clone(), s.line, members));
    }
    g
}

/// The name after `program:` or `group:`, which supervisord requires to be without blanks,
/// colons and slashes.
pub fn section_name(s: &Section, errors: &mut Vec<InputError>) -> Option<String> {
    let raw = s.name.split_once(':').map_or("", |(_, n)| n);
    let name = raw.trim();
    if name.is_empty() || name.contains([' ', ':', '/']) {
        errors.push(InputError::at(
            &s.file,
            s.line,
            format!("[{}]: invalid name {raw:?} (no spaces, ':' or '/')", s.name),
            "rename the section (supervisord refuses it too)",
        ));
        return None;
    }
    Some(name.to_string())
}

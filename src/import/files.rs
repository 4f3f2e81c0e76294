//! The output files (one per group, one per other program, `[init]`'s) and the variables they
//! read from ctrlinit's environment.

use super::groups::Groups;
use super::names;
use super::program::Translated;
use super::toml_out::{OutFile, Table, Val};

/// The tables of `[group:name]`'s programs (`g` as the translation names the group), each
/// answering to the group's name (`member_of`) unless a program has that name.
fn group_tables(
    translated: &[(String, Option<String>, Translated)],
    g: &str,
    name: &str,
) -> Vec<Table> {
    let shared = names::program_name(name, 0);
    let taken = translated.iter().any(|(_, _, t)| t.name == shared);
    let mut out = Vec::new();
    for (_, _, t2) in translated
        .iter()
        .filter(|(_, g2, _)| g2.as_deref() == Some(g))
    {
        let mut tables = t2.tables.clone();
        if let Some(program) = tables.first_mut().filter(|_| !taken) {
            program.set_with(
                "member_of",
                Val::Str(shared.clone()),
                &format!("[group:{name}]: `ctrlinit restart {shared}` (or {shared}:*) takes all its programs, as supervisorctl did"),
            );
        }
        out.extend(tables);
    }
    out
}

/// The files: one per group (its programs together), one per other program, and `[init]`'s.
pub fn output_files(
    init: Table,
    translated: &[(String, Option<String>, Translated)],
    groups: &Groups,
    files: &mut names::Unique,
) -> Vec<OutFile> {
    let mut out = Vec::new();
    let mut done_groups: Vec<&str> = Vec::new();
    // Files of programs in no group: the section's label, and the file's place in `out`.
    let mut own_files: Vec<(&str, usize)> = Vec::new();
    for (_, group, t) in translated {
        match group {
            Some(g) => {
                if done_groups.contains(&g.as_str()) {
                    continue;
                }
                done_groups.push(g);
                let Some((name, priority, file, line, _)) =
                    groups.groups.iter().find(|x| &x.0 == g)
                else {
                    continue;
                };
                let mut f = OutFile {
                    name: format!("{}.toml", files.take(&names::program_name(name, 0))),
                    comments: vec![
                        "Written by `ctrlinit import` from supervisord's configuration.".into(),
                        format!(
                            "[group:{name}] of {}:{line} (priority {priority}): its programs are together here, and answer to its name (member_of).",
                            file.display()
                        ),
                    ],
                    tables: Vec::new(),
                };
                f.tables = group_tables(translated, g, name);
                out.push(f);
            }
            // The processes of one section written as programs of their own share its file.
            None => match own_files.iter().find(|(label, _)| *label == t.label) {
                Some(&(_, at)) => out[at].tables.extend(t.tables.iter().cloned()),
                None => {
                    own_files.push((&t.label, out.len()));
                    out.push(OutFile {
                        name: format!("{}.toml", files.take(&t.file)),
                        comments: vec![
                            "Written by `ctrlinit import` from supervisord's configuration.".into(),
                        ],
                        tables: t.tables.clone(),
                    });
                }
            },
        }
    }
    if !init.entries.is_empty() {
        out.insert(
            0,
            OutFile {
                name: format!("{}.toml", files.take("init")),
                comments: vec![
                    "Written by `ctrlinit import` from supervisord's configuration.".into(),
                ],
                tables: vec![init],
            },
        );
    }
    out
}

/// The `${NAME}` references in the files (other than ctrlinit's own INSTANCE and INSTANCES).
pub fn needed_variables(files: &[OutFile]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in files {
        // Comments quote supervisord's text; only values are read.
        let text: String = f
            .render()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        let mut i = 0;
        while let Some(rel) = text[i..].find("${") {
            let at = i + rel;
            // `$${` is a literal.
            let escaped = text[..at].chars().rev().take_while(|&c| c == '$').count() % 2 == 1;
            let name: String = text[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            i = at + 2;
            if escaped || name.is_empty() || name == "INSTANCE" || name == "INSTANCES" {
                continue;
            }
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out.sort();
    out
}

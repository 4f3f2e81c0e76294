//! The source's shape (issue 12): dependencies run one way, from the command line down to the
//! operating system,
//!
//! ```text
//! cli -> api -> supervisor -> {logs, crash, process} -> config -> {model, sys}
//! ```
//!
//! with no arrow back up and no two files importing each other (directly or around a cycle).
//! Every `crate::`, `super::` and `self::` path in `src/` (tests excepted) is resolved to the file
//! that defines it, and the edges are checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's place: a module may import those of a lower rank, and the few
/// sideways pairs listed in [`SIDEWAYS`].
const RANKS: &[(&str, u32)] = &[
    ("model", 0),
    ("sys", 0),
    ("config", 1),
    ("process", 2),
    ("logs", 2),
    ("crash", 2),
    ("import", 2),
    ("supervisor", 3),
    ("api", 4),
    ("cli", 5),
];

/// Imports between modules of one rank that are allowed (one way only).
const SIDEWAYS: &[(&str, &str)] = &[("logs", "crash"), ("sys", "model")];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/` with its module path (`src/a/b.rs` and `src/a/b/mod.rs` are
/// `a::b`), except the crate roots and test files.
fn files() -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    walk(&src(), &mut all);
    let mut out = BTreeMap::new();
    for p in all {
        let rel = p.strip_prefix(src()).unwrap();
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let last = parts.pop().unwrap();
        // Test code (`*_tests.rs`, a `tests/` folder of unit tests) may reach anywhere.
        if last == "main.rs"
            || last == "lib.rs"
            || last.ends_with("_tests.rs")
            || parts.iter().any(|p| p == "tests")
        {
            continue;
        }
        if last != "mod.rs" {
            parts.push(last.trim_end_matches(".rs").to_string());
        }
        out.insert(parts, p);
    }
    out
}

/// The code of a file without comments and without its `#[cfg(test)]` tail.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Tokens of a path tree after `crate::`/`super::`: identifiers, `::`, `{`, `}`, `,`.
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_alphanumeric() || c == '_' {
            let mut id = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_alphanumeric() || c == '_' {
                    id.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(id);
        } else if c == ':' {
            chars.next();
            if chars.peek() == Some(&':') {
                chars.next();
                out.push("::".into());
            } else {
                break;
            }
        } else if c == '{' || c == '}' || c == ',' {
            out.push(c.to_string());
            chars.next();
        } else if c.is_whitespace() && out.last().is_some_and(|t| t == "{" || t == ",") {
            chars.next();
        } else if c.is_whitespace() && chars.clone().nth(1).is_some() {
            // Inside braces, whitespace separates nothing that matters.
            chars.next();
            if !out.iter().any(|t| t == "{") {
                break;
            }
        } else {
            break;
        }
    }
    out
}

/// The paths a token tree names, each as segments after `prefix`.
fn paths(tokens: &[String], prefix: Vec<String>, at: &mut usize, out: &mut Vec<Vec<String>>) {
    let mut current = prefix.clone();
    while *at < tokens.len() {
        let t = &tokens[*at];
        *at += 1;
        match t.as_str() {
            "::" => {}
            "{" => {
                loop {
                    paths(tokens, current.clone(), at, out);
                    match tokens.get(*at).map(String::as_str) {
                        Some(",") => *at += 1,
                        Some("}") => {
                            *at += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                return;
            }
            "," | "}" => {
                *at -= 1;
                out.push(current);
                return;
            }
            id => current.push(id.to_string()),
        }
    }
    out.push(current);
}

/// The file a module path lands in: the longest prefix that is a file.
fn resolve(path: &[String], files: &BTreeMap<Vec<String>, PathBuf>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| files.contains_key(p))
}

/// Every file each file imports.
fn edges(files: &BTreeMap<Vec<String>, PathBuf>) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut out = BTreeMap::new();
    for (module, path) in files {
        let code = code_of(path);
        let is_mod = path.ends_with("mod.rs");
        // `super` of a::b::c (c.rs) is a::b; of a::b (b/mod.rs) is a.
        let parent: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
        let children: BTreeSet<String> = files
            .keys()
            .filter(|k| k.len() == module.len() + 1 && k.starts_with(module))
            .map(|k| k.last().unwrap().clone())
            .collect();
        let mut found = Vec::new();
        for (i, _) in code.match_indices("::") {
            let before = &code[..i];
            let word_start = before
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |p| p + 1);
            let word = &before[word_start..];
            // Only the first `::` of a path starts one.
            if before[..word_start].ends_with("::") {
                continue;
            }
            let base: Vec<String> = match word {
                "crate" => vec![],
                "super" => parent.clone(),
                "self" => module.clone(),
                w if children.contains(w) && is_mod => module.clone(),
                _ => continue,
            };
            let rest = if matches!(word, "crate" | "super" | "self") {
                &code[i + 2..]
            } else {
                &code[word_start..]
            };
            let toks = tokens(rest);
            let mut at = 0;
            paths(&toks, base, &mut at, &mut found);
        }
        let mut targets = BTreeSet::new();
        for p in found {
            // `super::super::x`
            let mut p = p;
            while let Some(k) = p.iter().position(|s| s == "super") {
                p.remove(k);
                if k > 0 {
                    p.remove(k - 1);
                }
            }
            if let Some(t) = resolve(&p, files)
                && &t != module
            {
                targets.insert(t);
            }
        }
        out.insert(module.clone(), targets);
    }
    out
}

fn rank(top: &str) -> u32 {
    RANKS
        .iter()
        .find(|(m, _)| *m == top)
        .unwrap_or_else(|| panic!("module {top} has no rank in tests/layering.rs"))
        .1
}

#[test]
fn no_module_imports_one_above_it() {
    let files = files();
    let mut wrong = Vec::new();
    for (from, targets) in edges(&files) {
        for to in targets {
            let (a, b) = (&from[0], &to[0]);
            if a == b {
                continue;
            }
            let ok = rank(b) < rank(a) || SIDEWAYS.contains(&(a.as_str(), b.as_str()));
            if !ok {
                wrong.push(format!("{} imports {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_files_import_each_other() {
    let files = files();
    let edges = edges(&files);
    // Depth-first search for a path back to where it started.
    let mut cycles = Vec::new();
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    let names: Vec<String> = path.iter().map(|m| m.join("::")).collect();
                    cycles.push(format!("{} -> {}", names.join(" -> "), start.join("::")));
                } else if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    cycles.sort();
    cycles.dedup();
    assert!(cycles.is_empty(), "file cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_checker_sees_imports() {
    // A check that finds nothing could pass by accident: it must see known edges.
    let files = files();
    let edges = edges(&files);
    let of = |m: &str| edges[&m.split("::").map(String::from).collect::<Vec<_>>()].clone();
    let runner = of("supervisor::runner");
    for expected in [
        "supervisor::core",
        "supervisor::checks::readiness",
        "sys::reap",
        "model::protocol",
    ] {
        let e: Vec<String> = expected.split("::").map(String::from).collect();
        assert!(
            runner.contains(&e),
            "runner -> {expected} not seen: {runner:?}"
        );
    }
    let lifecycle = of("supervisor::core::lifecycle");
    assert!(lifecycle.contains(&vec!["supervisor".to_string(), "core".to_string()]));
    assert!(
        lifecycle.contains(&vec![
            "supervisor".to_string(),
            "core".to_string(),
            "notices".to_string()
        ]),
        "{lifecycle:?}"
    );
}

/// Inside the supervisor the same rule, one level down: the pure core (`supervisor::core`,
/// with its vocabulary) at the bottom, the rooms that do I/O for one concern above it (a run's
/// processes, the checks, sd_notify, the network watch: they may use each other, and the
/// file-cycle test keeps that one way), the
/// files that serve the owner loop above them, and the runner on top. A part may import its own
/// rank and those below; never one above.
const SUPERVISOR_RANKS: &[(&str, u32)] = &[
    ("core", 0),
    ("processes", 1),
    ("checks", 1),
    ("notify", 1),
    ("watch", 1),
    ("runner", 3),
];

/// The rank of a part of the supervisor; a loose file (`supervisor/launch.rs` …) is 2.
fn supervisor_rank(part: &str) -> u32 {
    SUPERVISOR_RANKS
        .iter()
        .find(|(m, _)| *m == part)
        .map_or(2, |(_, r)| *r)
}

#[test]
fn the_core_imports_only_config_and_model() {
    let files = files();
    let mut wrong = Vec::new();
    for (from, targets) in edges(&files) {
        if !from.starts_with(&["supervisor".to_string(), "core".to_string()]) {
            continue;
        }
        for to in targets {
            let fine = matches!(to[0].as_str(), "config" | "model")
                || to.starts_with(&["supervisor".to_string(), "core".to_string()]);
            if !fine {
                wrong.push(format!("{} imports {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the pure core reaches past config and model:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_part_of_the_supervisor_imports_one_above_it() {
    let files = files();
    let mut wrong = Vec::new();
    for (from, targets) in edges(&files) {
        if from.first().map(String::as_str) != Some("supervisor") || from.len() < 2 {
            continue;
        }
        for to in targets {
            if to.first().map(String::as_str) != Some("supervisor") || to.len() < 2 {
                continue;
            }
            if supervisor_rank(&to[1]) > supervisor_rank(&from[1]) {
                wrong.push(format!("{} imports {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports running back up inside the supervisor:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_supervisor_keeps_at_most_twelve_loose_files() {
    let dir = src().join("supervisor");
    let loose: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rs"))
        .filter(|p| !p.ends_with("mod.rs"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        loose.len() <= 12,
        "{} loose files in src/supervisor (give them a room): {loose:?}",
        loose.len()
    );
}

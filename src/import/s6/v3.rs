//! s6-overlay v3's s6-rc source directories, `/etc/s6-overlay/s6-rc.d/NAME`: `type` (oneshot,
//! longrun or bundle), a oneshot's `up` and `down` command lines, a longrun's service
//! directory ([`super::servicedir`]), `timeout-up`, `timeout-down`, `dependencies.d/` (or the
//! older `dependencies` file), a bundle's `contents.d/` (or `contents`), a logger's
//! `consumer-for`; and the `user` and `user2` bundles that say what starts at boot (in
//! `s6-rc.d/` or `user-bundles.d/`).

use std::path::{Path, PathBuf};

use super::model::{Layout, Origin, Unit};
use super::script;
use super::servicedir::{self, exists, number, word};
use super::tree::{Contents, Tree};
use crate::import::{InputError, Note};

/// The v3 source directory under ROOT.
pub const DIR: &str = "etc/s6-overlay/s6-rc.d";
/// Where s6-overlay reads the `user` and `user2` bundles when s6-rc.d does not define them.
const USER_BUNDLES: &str = "etc/s6-overlay/user-bundles.d";

/// Reads every s6-rc source directory into `layout`.
pub fn read(
    tree: &mut Tree,
    layout: &mut Layout,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) {
    let (mut user, mut user2) = (Vec::new(), Vec::new());
    let mut found_user = false;
    for name in tree.list_or_note(Path::new(DIR), notes, errors) {
        let dir = Path::new(DIR).join(&name);
        if !tree.is_dir(&dir) {
            continue;
        }
        let Some(kind) = unit_type(tree, &dir, &name, notes, errors) else {
            continue;
        };
        match kind.as_str() {
            "bundle" => {
                let contents = names(tree, &dir, "contents", notes, errors);
                if name == "user" {
                    found_user = true;
                    user.extend(contents);
                } else if name == "user2" {
                    user2.extend(contents);
                } else {
                    layout.bundles.push((name, contents, tree.shown(&dir)));
                }
            }
            "oneshot" => {
                if let Some(u) = oneshot(tree, &dir, &name, notes, errors) {
                    layout.units.push(u);
                }
            }
            "longrun" => {
                if let Some(mut u) =
                    servicedir::longrun(tree, &dir, &name, Origin::Rc, notes, errors)
                {
                    u.timeout_up = number(tree, &dir.join("timeout-up"), 0..u64::MAX, errors);
                    u.timeout_down = number(tree, &dir.join("timeout-down"), 0..u64::MAX, errors);
                    u.deps = names(tree, &dir, "dependencies", notes, errors);
                    layout.units.push(u);
                }
            }
            other => errors.push(InputError::at(
                &tree.shown(&dir.join("type")),
                1,
                format!("{other:?} is not an s6-rc service type"),
                "write oneshot, longrun or bundle",
            )),
        }
    }
    let dir = Path::new(USER_BUNDLES).join("user");
    if tree.is_dir(&dir) {
        found_user = true;
        user.extend(names(tree, &dir, "contents", notes, errors));
    }
    let dir = Path::new(USER_BUNDLES).join("user2");
    if tree.is_dir(&dir) {
        user2.extend(names(tree, &dir, "contents", notes, errors));
    }
    if !found_user {
        notes.push(Note::at(
            &tree.shown(Path::new(DIR)),
            1,
            "user bundle",
            "no `user` bundle: s6-overlay starts none of these services at boot, so none is autostarted",
            "list the services to start in s6-rc.d/user/contents.d (or set autostart = true on the programs)",
        ));
    }
    layout.user = Some(user);
    layout.user2 = user2;
    loggers(layout, tree, notes);
}

/// The `type` of the source directory `dir`; `None` (said) when there is none to import.
fn unit_type(
    tree: &mut Tree,
    dir: &Path,
    name: &str,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) -> Option<String> {
    match word(tree, &dir.join("type"), errors) {
        Some(k) => Some(k),
        None if exists(tree, &dir.join("type")) => None,
        // No type: a piece of a definition the base image completes (an image adds to the
        // base's `user` bundle, or dependencies to one of its services).
        None if tree.is_dir(&dir.join("contents.d")) => Some("bundle".to_string()),
        None => {
            let deps = names(tree, dir, "dependencies", notes, errors);
            let waits = if deps.is_empty() {
                String::new()
            } else {
                format!(" — it makes {name} wait for {}", deps.join(", "))
            };
            notes.push(Note::at(
                &tree.shown(dir),
                1,
                "type",
                format!("no type file: a piece of {name}, which this root does not define (the base image's?){waits}; not imported"),
                format!("import a root holding the base image's s6-rc.d too, or write [program.{name}] by hand"),
            ));
            None
        }
    }
}

/// A oneshot: its `up` and `down` command lines and its settings.
fn oneshot(
    tree: &mut Tree,
    dir: &Path,
    name: &str,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) -> Option<Unit> {
    let mut u = Unit::new(name, Origin::Rc, true, tree.shown(dir));
    match script::command_line(tree, &dir.join("up"), notes) {
        Ok(c) => u.run = c,
        Err(e) => {
            errors.push(InputError::file(
                &tree.shown(&dir.join("up")),
                format!("cannot read the oneshot's up file: {e}"),
                "a oneshot needs an up file (one execline command line)",
            ));
            return None;
        }
    }
    if exists(tree, &dir.join("down")) {
        match script::command_line(tree, &dir.join("down"), notes) {
            Ok(c) => u.down = c,
            Err(e) => errors.push(InputError::file(
                &tree.shown(&dir.join("down")),
                e,
                "make it a command line",
            )),
        }
    }
    u.timeout_up = number(tree, &dir.join("timeout-up"), 0..u64::MAX, errors);
    u.timeout_down = number(tree, &dir.join("timeout-down"), 0..u64::MAX, errors);
    u.deps = names(tree, dir, "dependencies", notes, errors);
    Some(u)
}

/// The names in `dir/WHAT.d/` (files named after services) or, failing that, in the file
/// `dir/WHAT` (one a line).
fn names(
    tree: &mut Tree,
    dir: &Path,
    what: &str,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) -> Vec<String> {
    let d = dir.join(format!("{what}.d"));
    if tree.is_dir(&d) {
        return tree.list_or_note(&d, notes, errors);
    }
    let f = dir.join(what);
    match tree.read(&f) {
        Ok(Contents::Text(t)) => t
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect(),
        Ok(Contents::Binary(why)) => {
            notes.push(Note::at(
                &tree.shown(&f),
                1,
                what,
                format!("{why}: not read"),
                "list the names one a line",
            ));
            Vec::new()
        }
        Err(_) => Vec::new(),
    }
}

/// Loggers (`consumer-for`): not imported, since ctrlinit logs each program's output itself;
/// the producer is told, and anything depending on the logger depends on the producer.
fn loggers(layout: &mut Layout, tree: &mut Tree, notes: &mut Vec<Note>) {
    let mut taken: Vec<(String, String, PathBuf)> = Vec::new();
    for u in &layout.units {
        let dir = Path::new(DIR).join(&u.name);
        if let Ok(Some(_)) = tree.kind(&dir.join("consumer-for"))
            && let Ok(Contents::Text(t)) = tree.read(&dir.join("consumer-for"))
            && let Some(producer) = t.split_whitespace().next()
        {
            taken.push((u.name.clone(), producer.to_string(), u.at.clone()));
        }
    }
    // A pipeline's name is a bundle of its services: here, the producer.
    for (logger, producer, at) in &taken {
        let file = Path::new(DIR).join(logger).join("pipeline-name");
        if let Ok(Some(_)) = tree.kind(&file)
            && let Ok(Contents::Text(t)) = tree.read(&file)
            && let Some(name) = t.split_whitespace().next()
        {
            layout
                .bundles
                .push((name.to_string(), vec![producer.clone()], at.clone()));
        }
    }
    for (logger, producer, at) in taken {
        // What the logger waited for, the pipeline (here its producer) waits for.
        let logger_deps: Vec<String> = layout
            .units
            .iter()
            .filter(|u| u.name == logger)
            .flat_map(|u| u.deps.clone())
            .collect();
        layout.units.retain(|u| u.name != logger);
        if let Some(p) = layout.units.iter_mut().find(|u| u.name == producer) {
            p.deps
                .extend(logger_deps.into_iter().filter(|d| *d != producer));
        }
        for u in &mut layout.units {
            for d in &mut u.deps {
                if *d == logger {
                    *d = producer.clone();
                }
            }
        }
        if let Some(user) = &mut layout.user {
            for d in user.iter_mut().chain(layout.user2.iter_mut()) {
                if *d == logger {
                    *d = producer.clone();
                }
            }
        }
        for (_, contents, _) in &mut layout.bundles {
            for d in contents.iter_mut() {
                if *d == logger {
                    *d = producer.clone();
                }
            }
        }
        notes.push(Note::at(
            &at,
            1,
            "consumer-for",
            format!("{logger}, the logger of {producer}, is not imported: ctrlinit reads {producer}'s output itself (the console and <log_dir>/{producer}.log)"),
            format!("set [program.{producer}.log] max_size and keep for the rotation s6-log did"),
        ));
    }
}

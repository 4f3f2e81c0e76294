//! A longrun's service directory, as s6-supervise reads it (v2's `/etc/services.d/NAME`, v3's
//! `/etc/s6-overlay/s6-rc.d/NAME` of type longrun): `run`, `finish`, `down`,
//! `notification-fd`, `timeout-kill`, `timeout-finish`, `down-signal`, and a `log/` logger;
//! s6-rc's `timeout-up`, `timeout-down` and dependencies are read by [`super::v3`]. A setting
//! s6 itself would refuse (a `notification-fd` that is not a number) is an error at its file.

use std::path::Path;

use super::model::{Origin, Unit};
use super::script;
use super::tree::{Contents, Kind, Tree};
use crate::import::{InputError, Note};

/// The longrun in directory `dir`, named `name`.
pub fn longrun(
    tree: &mut Tree,
    dir: &Path,
    name: &str,
    origin: Origin,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) -> Option<Unit> {
    let mut unit = Unit::new(name, origin, false, tree.shown(dir));
    let run = dir.join("run");
    match script::command(tree, &run, notes) {
        Ok(c) => unit.run = Some(c),
        Err(e) => {
            errors.push(InputError::file(
                &tree.shown(&run),
                format!("cannot read the service's run script: {e}"),
                "a service directory needs an executable run file",
            ));
            return None;
        }
    }
    let finish = dir.join("finish");
    if exists(tree, &finish) {
        match script::command(tree, &finish, notes) {
            Ok(c) => unit.finish = Some(c),
            Err(e) => notes.push(Note::at(
                &tree.shown(&finish),
                1,
                "finish",
                format!("cannot be read ({e}): not imported"),
                "write finish = [...] on the program by hand",
            )),
        }
    }
    unit.autostart = !exists(tree, &dir.join("down"));
    unit.ready_fd = number(tree, &dir.join("notification-fd"), 3..1024, errors).map(|n| n as i32);
    unit.timeout_kill = number(tree, &dir.join("timeout-kill"), 0..u64::MAX, errors);
    unit.down_signal = word(tree, &dir.join("down-signal"), errors);
    if exists(tree, &dir.join("timeout-finish")) {
        notes.push(Note::at(
            &tree.shown(&dir.join("timeout-finish")),
            1,
            "timeout-finish",
            "ctrlinit bounds a finish hook by the program's stop_timeout",
            "set stop_timeout if the hook needs longer",
        ));
    }
    if tree.is_dir(&dir.join("log")) {
        notes.push(Note::at(
            &tree.shown(&dir.join("log")),
            1,
            "log",
            format!("{name}'s logger is not imported: ctrlinit reads {name}'s output itself (the console and <log_dir>/{name}.log)"),
            format!("set [program.{name}.log] max_size and keep for the rotation s6-log did"),
        ));
    }
    Some(unit)
}

/// Whether anything is at `rel`.
pub fn exists(tree: &Tree, rel: &Path) -> bool {
    matches!(tree.kind(rel), Ok(Some(_)))
}

/// The first word of a one-line setting file, if the file is there.
pub fn word(tree: &mut Tree, rel: &Path, errors: &mut Vec<InputError>) -> Option<String> {
    if !matches!(tree.kind(rel), Ok(Some(Kind::File))) {
        return None;
    }
    match tree.read(rel) {
        Ok(Contents::Text(t)) => t.split_whitespace().next().map(str::to_string),
        Ok(Contents::Binary(why)) => {
            errors.push(InputError::file(
                &tree.shown(rel),
                why.to_string(),
                "write the setting as one line of text",
            ));
            None
        }
        Err(e) => {
            errors.push(InputError::file(
                &tree.shown(rel),
                e,
                "make it a small regular file",
            ));
            None
        }
    }
}

/// A whole number setting in `range`, if the file is there.
pub fn number(
    tree: &mut Tree,
    rel: &Path,
    range: std::ops::Range<u64>,
    errors: &mut Vec<InputError>,
) -> Option<u64> {
    let w = word(tree, rel, errors)?;
    match w.parse::<u64>() {
        Ok(n) if range.contains(&n) => Some(n),
        _ => {
            errors.push(InputError::at(
                &tree.shown(rel),
                1,
                format!(
                    "{w:?} is not a number from {} to {}",
                    range.start,
                    range.end - 1
                ),
                "write a whole number, as s6 requires",
            ));
            None
        }
    }
}

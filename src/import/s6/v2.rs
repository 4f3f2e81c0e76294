//! s6-overlay's v2 directories (still run by v3): `/etc/cont-init.d` scripts (oneshots, in
//! name order), `/etc/services.d/NAME` service directories, `/etc/cont-finish.d` scripts (run
//! at shutdown) and `/etc/fix-attrs.d` (ownership and modes, reported with the commands that
//! do the same).

use std::path::Path;

use super::model::{Layout, Origin, Unit};
use super::script;
use super::servicedir;
use super::tree::{Contents, Kind, Tree};
use crate::import::{InputError, Note};

/// The v2 directories under ROOT that exist.
pub const DIRS: [&str; 4] = [
    "etc/cont-init.d",
    "etc/services.d",
    "etc/cont-finish.d",
    "etc/fix-attrs.d",
];

/// Reads every v2 directory into `layout`.
pub fn read(
    tree: &mut Tree,
    layout: &mut Layout,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) {
    for name in scripts(tree, Path::new(DIRS[0]), notes, errors) {
        let rel = Path::new(DIRS[0]).join(&name);
        match script::command(tree, &rel, notes) {
            Ok(c) => {
                let mut u = Unit::new(&name, Origin::ContInit, true, tree.shown(&rel));
                u.run = Some(c);
                layout.units.push(u);
            }
            Err(e) => errors.push(InputError::file(
                &tree.shown(&rel),
                format!("cannot read the script: {e}"),
                "make it a readable regular file",
            )),
        }
    }
    for name in tree.list_or_note(Path::new(DIRS[1]), notes, errors) {
        let dir = Path::new(DIRS[1]).join(&name);
        if !tree.is_dir(&dir) {
            continue;
        }
        if let Some(u) = servicedir::longrun(tree, &dir, &name, Origin::Services, notes, errors) {
            layout.units.push(u);
        }
    }
    for name in scripts(tree, Path::new(DIRS[2]), notes, errors) {
        let rel = Path::new(DIRS[2]).join(&name);
        match script::command(tree, &rel, notes) {
            Ok(c) => layout.finish_scripts.push((tree.shown(&rel), c)),
            Err(e) => notes.push(Note::at(
                &tree.shown(&rel),
                1,
                "cont-finish.d",
                format!("cannot be read ({e}): not imported"),
                "run it from a pre_stop hook by hand",
            )),
        }
    }
    for name in scripts(tree, Path::new(DIRS[3]), notes, errors) {
        fix_attrs(tree, &Path::new(DIRS[3]).join(name), notes);
    }
}

/// The regular files of a scripts directory, in name order.
fn scripts(
    tree: &mut Tree,
    dir: &Path,
    notes: &mut Vec<Note>,
    errors: &mut Vec<InputError>,
) -> Vec<String> {
    tree.list_or_note(dir, notes, errors)
        .into_iter()
        .filter(|n| matches!(tree.kind(&dir.join(n)), Ok(Some(Kind::File))))
        .collect()
}

/// Each line of a fix-attrs.d file (`path recurse account fmode dmode`) said, with the
/// Dockerfile commands that do the same at build time (s6-overlay's own advice).
fn fix_attrs(tree: &mut Tree, rel: &Path, notes: &mut Vec<Note>) {
    let shown = tree.shown(rel);
    let text = match tree.read(rel) {
        Ok(Contents::Text(t)) => t,
        Ok(Contents::Binary(why)) => {
            return notes.push(Note::at(&shown, 1, "fix-attrs.d", why, ""));
        }
        Err(e) => return notes.push(Note::at(&shown, 1, "fix-attrs.d", e, "")),
    };
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() || f[0].starts_with('#') {
            continue;
        }
        let todo = match f.as_slice() {
            [path, recurse, account, fmode, dmode] => {
                let user = account.split(',').next().unwrap_or(account);
                let r = if *recurse == "true" { "-R " } else { "" };
                format!(
                    "in the Dockerfile: RUN chown {r}{user} {path} && find {path} -type f -exec chmod {fmode} {{}} + && find {path} -type d -exec chmod {dmode} {{}} +"
                )
            }
            _ => "set the ownership and modes in the Dockerfile".into(),
        };
        notes.push(Note::at(
            &shown,
            i + 1,
            "fix-attrs.d",
            format!("`{}`: ctrlinit does not change ownership or modes at start (s6-overlay v3 deprecates fix-attrs too)", line.trim()),
            todo,
        ));
    }
}

//! `ctrlinit import --from s6-overlay ROOT`: an s6-overlay layout as ctrlinit's configuration.
//!
//! ROOT is a directory holding `etc/` as the image has it (an image's root, or a repository's
//! `root/` folder). [`detect`] finds v2's directories, v3's s6-rc source directory, or both;
//! [`v2`] and [`v3`] read them ([`servicedir`] for a longrun's directory) into a [`model`],
//! bounded and confined to ROOT by [`tree`]. Scripts stay where they are in the image: a
//! program runs its script by path ([`script`]), through its interpreter where s6-overlay's
//! `with-contenv` stood, as its command where an execline chain is plain ([`execline`]); every
//! s6 idiom left in a script is reported ([`idioms`]). [`order`] turns s6-overlay's order into
//! dependencies, [`translate`] writes one file per unit, and [`stop_tasks`] carries the work
//! s6-overlay did on the way down. Nothing is run; each note names the file and line.

pub mod cycles;
pub mod detect;
pub mod execline;
pub mod idioms;
pub mod model;
pub mod order;
pub mod script;
pub mod servicedir;
pub mod stop_tasks;
pub mod translate;
pub mod tree;
pub mod v2;
pub mod v3;

use std::path::Path;

use super::names::Unique;
use super::{Imported, InputError, Note};
use model::Layout;
use tree::Tree;

/// Imports the s6-overlay layout under `root`.
pub fn import(root: &Path) -> Result<Imported, Vec<InputError>> {
    let mut tree = Tree::open(root).map_err(|e| {
        vec![InputError::file(
            root,
            e,
            "give the directory that holds etc/ (an image's root, or a repository's root/ folder)",
        )]
    })?;
    let found = detect::layouts(&tree);
    if !found.v2 && !found.v3 {
        return Err(vec![InputError::file(
            root,
            "no s6-overlay layout here: neither etc/s6-overlay/s6-rc.d (v3) nor etc/cont-init.d, etc/services.d, etc/cont-finish.d or etc/fix-attrs.d (v2)".into(),
            "give the directory that holds etc/ (an image's root, or a repository's root/ folder)",
        )]);
    }
    let (mut notes, mut errors) = (Vec::new(), Vec::new());
    let mut layout = Layout::default();
    if found.v2 {
        v2::read(&mut tree, &mut layout, &mut notes, &mut errors);
    }
    if found.v3 {
        v3::read(&mut tree, &mut layout, &mut notes, &mut errors);
        cycles::check(&layout, &tree.shown(Path::new(v3::DIR)), &mut errors);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if found.v2 && found.v3 {
        notes.push(Note::general(
            "layout",
            "both s6-overlay layouts are here: v2's directories and v3's s6-rc.d; imported in the order v3 runs them: cont-init.d scripts, the user bundle, services.d, the user2 bundle",
            "",
        ));
    }
    let (files, programs) = write(&layout, &mut notes);
    general_notes(&layout, programs, &mut notes);
    let incomplete = incomplete_order(&layout);
    Ok(Imported {
        incomplete,
        files,
        notes,
        programs,
        inputs: tree.files,
    })
}

/// The output files and the number of programs.
fn write(layout: &Layout, notes: &mut Vec<Note>) -> (Vec<super::toml_out::OutFile>, usize) {
    let order = order::resolve(layout);
    let mut taken = Unique::default();
    let names = translate::program_names(layout, &mut taken, notes);
    let mut extra: Vec<Vec<String>> = vec![Vec::new(); layout.units.len()];
    let mut more_files = Vec::new();
    if !layout.finish_scripts.is_empty() {
        let (name, file) = stop_tasks::cont_finish(&layout.finish_scripts, &mut taken);
        for e in &mut extra {
            e.push(name.clone());
        }
        more_files.push(file);
    }
    for (i, u) in layout.units.iter().enumerate() {
        let (Some(down), Some(name)) = (&u.down, &names[i]) else {
            continue;
        };
        let carrier = taken.take(&super::names::program_name(&format!("{name}-down"), 0));
        // A completed oneshot holds nothing up on the way down: the carrier requires the
        // oneshot (s6-rc ran `down` only after `up` succeeded) and is ordered after what the
        // oneshot waited for, so that it stops (and runs `down`) before those stop.
        let deps = vec![name.clone()];
        let mut after: Vec<String> = order.deps[i]
            .iter()
            .filter_map(|&d| names[d].clone())
            .collect();
        after.extend(extra[i].iter().filter(|d| !d.ends_with("-down")).cloned());
        for (j, e) in extra.iter_mut().enumerate() {
            if order.deps[j].contains(&i) {
                e.push(carrier.clone());
            }
        }
        let table = stop_tasks::carrier(
            &carrier,
            format!(
                "From {}/down: s6-rc ran it when {name} was brought down, after what depends on {name}",
                u.at.display()
            ),
            &[down],
            &deps,
            &after,
        );
        more_files.push(super::toml_out::OutFile {
            name: format!("{carrier}.toml"),
            comments: vec!["Written by `ctrlinit import --from s6-overlay`.".into()],
            tables: vec![table],
        });
    }
    let mut files = translate::unit_files(layout, &order, &names, &extra, notes);
    let programs = files.len() + more_files.len();
    files.extend(more_files);
    (files, programs)
}

/// The one line that says the start order is incomplete: dependencies on units the root does
/// not define (a base image's), left out of `depends_on`.
fn incomplete_order(layout: &Layout) -> Option<String> {
    let order = order::resolve(layout);
    let mut missing: Vec<&str> = Vec::new();
    let mut units = 0;
    for unknown in &order.unknown {
        if !unknown.is_empty() {
            units += 1;
        }
        for dep in unknown {
            if !missing.contains(&dep.as_str()) {
                missing.push(dep);
            }
        }
    }
    (!missing.is_empty()).then(|| {
        format!(
            "the start order is incomplete: {units} unit{} depend{} on {} this root does not define ({}; a base image's?), left out of depends_on: import a root that holds them too, or add them by hand",
            if units == 1 { "" } else { "s" },
            if units == 1 { "s" } else { "" },
            if missing.len() == 1 { "a unit" } else { "units" },
            missing.join(", ")
        )
    })
}

/// Notes about the import as a whole.
fn general_notes(layout: &Layout, programs: usize, notes: &mut Vec<Note>) {
    if programs == 0 {
        notes.push(Note::general(
            "programs",
            "the layout defines nothing that could be imported; ctrlinit needs at least one program",
            "add [program.NAME] tables by hand",
        ));
        return;
    }
    let commands = layout
        .units
        .iter()
        .flat_map(|u| [&u.run, &u.finish, &u.down])
        .flatten()
        .chain(layout.finish_scripts.iter().map(|(_, c)| c));
    if commands.clone().any(|c| c.contenv) {
        notes.push(Note::general(
            "with-contenv",
            "scripts started by with-contenv (#!/command/with-contenv sh, #!/usr/bin/with-contenv bash) run through their interpreter instead, and execline chains without it: ctrlinit passes its environment, the container's, to every program",
            "",
        ));
    }
    if layout.units.iter().any(|u| !u.oneshot && u.run.is_some()) {
        notes.push(Note::general(
            "signals",
            "s6 sent down-signal (and s6-svc's signals) to the run script's process alone; ctrlinit signals the program's whole process group (a `stop`, `ctrlinit signal`, the container's stop) and at stop_timeout SIGKILLs everything the program started",
            "a run script that traps a signal to pass it on to a child it started now also sees the child get it directly: drop the trap, or exec the child",
        ));
        notes.push(Note::general(
            "restarts",
            "s6 restarted a service that ended without limit (a second apart at most); ctrlinit allows max_restarts = 5 in restart_window = 60s, then stops the container (exit 75) for the engine's restart policy",
            "raise max_restarts, or set on_exhausted = \"stop\" to leave a program down instead",
        ));
    }
    if !layout.finish_scripts.is_empty() {
        notes.push(Note::general(
            "cont-finish.d",
            "run by the pre_stop hook of the program cont-finish, which only waits and which every other program is ordered after (`after`, so it stops last; stopping or restarting it by hand takes nothing along but runs the scripts)",
            "leave cont-finish alone by hand; stop the container to run the scripts",
        ));
    }
    notes.push(Note::general(
        "S6_* variables",
        "s6-overlay's settings live in the image's environment (S6_BEHAVIOUR_IF_STAGE2_FAILS, S6_KILL_GRACETIME, S6_SERVICES_GRACETIME, S6_CMD_WAIT_FOR_SERVICES_MAXTIME …), not in the layout: not read",
        "map those the image sets: the grace times to [init] stop_timeout and stop_timeout, the readiness wait to ready_timeout",
    ));
    notes.push(Note::general(
        "scripts",
        "the programs run the layout's scripts where the image has them; nothing was run",
        "copy etc/ into the image as before, then check with `ctrlinit check --strict` there",
    ));
}

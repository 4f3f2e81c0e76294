//! Work s6-overlay did on the way down: `/etc/cont-finish.d` scripts (once every service was
//! down) and an s6-rc oneshot's `down` (before what it depends on went down). ctrlinit has no
//! container-level shutdown hook, but it stops programs in reverse dependency order and runs a
//! program's `pre_stop` hook before signalling it; so each becomes a program that only waits,
//! with the work as its `pre_stop`, placed in the order where s6 did it: every other program is
//! ordered `after` `cont-finish` (it stops last), `NAME-down` depends on the oneshot NAME (its
//! `down` runs only if NAME's `up` completed) and is ordered after what NAME depends on, and every
//! program that depends on NAME is ordered after it (they stop before it). Ordering, not
//! `depends_on`, wherever nothing is required: restarting a carrier takes nothing along.

use super::script::{Command, shell_words};
use super::translate::{lit, words};
use crate::import::names::{self, Unique};
use crate::import::toml_out::{OutFile, Table, Val};

/// The command of a program that only waits for its stop (sh and sleep, nothing else).
const WAIT: &str = "while :; do sleep 3600; done";

/// A waiting program named `name` whose `pre_stop` runs `commands` in order; it requires
/// `deps` (`depends_on`) and is only ordered after `after`.
pub fn carrier(
    name: &str,
    comment: String,
    commands: &[&Command],
    deps: &[String],
    after: &[String],
) -> Table {
    let mut t = Table::new(&["program", name]);
    t.comments.push(comment);
    t.set_with(
        "command",
        words(&["/bin/sh".into(), "-c".into(), WAIT.into()]),
        "only waits: its pre_stop does the work when it is stopped",
    );
    if !deps.is_empty() {
        t.set(
            "depends_on",
            Val::Array(deps.iter().map(|d| lit(d)).collect()),
        );
    }
    if !after.is_empty() {
        t.set_with(
            "after",
            Val::Array(after.iter().map(|d| lit(d)).collect()),
            "ordering only: it stops before these",
        );
    }
    let script: Vec<String> = commands.iter().map(|c| shell_words(&c.words)).collect();
    t.set(
        "pre_stop",
        words(&["/bin/sh".into(), "-c".into(), script.join("\n")]),
    );
    let n = commands.len().max(1) as u64;
    // s6-overlay gave each cont-finish.d script 5 s (S6_KILL_FINISH_MAXTIME).
    let secs = (5 * n).min(8);
    t.set_with(
        "pre_stop_timeout",
        Val::Str(format!("{secs}s")),
        "s6-overlay gave each script 5s; all of it stays within the container's stop budget",
    );
    t.set("stop_timeout", Val::Str(format!("{}s", secs + 1)));
    t
}

/// The `cont-finish` program for `/etc/cont-finish.d`'s scripts, its name taken from `taken`.
pub fn cont_finish(
    scripts: &[(std::path::PathBuf, Command)],
    taken: &mut Unique,
) -> (String, OutFile) {
    let name = taken.take(&names::program_name("cont-finish", 0));
    let list: Vec<String> = scripts
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    let commands: Vec<&Command> = scripts.iter().map(|(_, c)| c).collect();
    let table = carrier(
        &name,
        format!(
            "From /etc/cont-finish.d ({}): s6-overlay ran these scripts in order once every service was down.\nEvery other program is ordered after this one (`after`), so it stops last.",
            list.join(", ")
        ),
        &commands,
        &[],
        &[],
    );
    let file = OutFile {
        name: format!("{name}.toml"),
        comments: vec!["Written by `ctrlinit import --from s6-overlay`.".into()],
        tables: vec![table],
    };
    (name, file)
}

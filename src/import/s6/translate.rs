//! Units as ctrlinit programs: one file per unit, named after it, its table commented with
//! where it came from and each decision where it was made. A longrun is a service (restarted
//! as s6 restarted it), a cont-init.d script or an s6-rc oneshot a oneshot run once; its
//! dependencies are [`super::order`]'s; `notification-fd` is `ready = { fd = N }` (the same
//! protocol); `timeout-up` its `ready_timeout`; `timeout-kill` (or `timeout-down`) its
//! `stop_timeout`; `down-signal` its `stop_signal`; `finish` its `finish` hook (given s6's two
//! arguments when it reads them). Shutdown work is [`super::stop_tasks`]'.

use super::model::{Layout, Origin, Unit};
use super::order::{self, Order};
use super::script::Command;
use crate::import::Note;
use crate::import::names::{self, Unique};
use crate::import::text::Text;
use crate::import::toml_out::{OutFile, Table, Val};

/// A string as ctrlinit reads it back unchanged (`${` doubled).
pub fn lit(s: &str) -> Val {
    Val::Str(Text::lit(s).to_ctrlinit())
}

/// Words as an array of such strings.
pub fn words(w: &[String]) -> Val {
    Val::Array(w.iter().map(|s| lit(s)).collect())
}

/// Milliseconds as a duration (`"5s"`, `"1500ms"`).
pub fn millis(ms: u64) -> Val {
    Val::Str(if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    })
}

/// Each unit's ctrlinit name (`None` for a skipped oneshot), taken from `taken`.
pub fn program_names(
    layout: &Layout,
    taken: &mut Unique,
    notes: &mut Vec<Note>,
) -> Vec<Option<String>> {
    (0..layout.units.len())
        .map(|i| {
            let u = &layout.units[i];
            if !order::is_program(layout, i) {
                notes.push(Note::at(
                    &u.at,
                    1,
                    "up",
                    format!("{}'s up does nothing: not a program; what depends on it waits for what it depends on", u.name),
                    "",
                ));
                return None;
            }
            let name = taken.take(&names::program_name(&u.name, 0));
            if name != u.name {
                notes.push(Note::at(
                    &u.at,
                    1,
                    u.name.clone(),
                    format!("named {name} (ctrlinit names are 1-64 characters of a-z, 0-9, '_', '.', '-', and unique)"),
                    format!("use `{name}` in ctrlinit commands"),
                ));
            }
            Some(name)
        })
        .collect()
}

/// The program table(s) of unit `i`.
pub fn unit_table(
    layout: &Layout,
    order: &Order,
    names: &[Option<String>],
    extra: &[String], // ordered `after` these (the shutdown carriers), nothing required
    i: usize,
    notes: &mut Vec<Note>,
) -> Vec<Table> {
    let u = &layout.units[i];
    let Some(name) = &names[i] else {
        return Vec::new();
    };
    let run = u.run.as_ref().expect("a program has a command");
    let mut t = Table::new(&["program", name]);
    t.comments
        .push(format!("From {} ({})", u.at.display(), describe(u)));
    t.set("command", words(&run.words));
    if u.oneshot {
        t.set("type", Val::Str("oneshot".into()));
    }
    if !order.autostart[i] {
        let why = match u.origin {
            Origin::Services => "a down file: s6 did not start it at boot",
            _ => {
                "in neither the user nor the user2 bundle (nor needed by them): s6-overlay did not start it at boot"
            }
        };
        t.set_with("autostart", Val::Bool(false), why);
    }
    let deps: Vec<Val> = order.deps[i]
        .iter()
        .filter_map(|&d| names[d].as_deref())
        .map(lit)
        .collect();
    if !deps.is_empty() {
        let why = match u.origin {
            Origin::ContInit => "cont-init.d scripts ran one after another, in name order",
            Origin::Services => {
                "services.d started once cont-init.d (and the s6-rc user bundle) were done"
            }
            Origin::Rc => "dependencies.d: a oneshot must have completed, a longrun be ready",
        };
        t.set_with("depends_on", Val::Array(deps), why);
    }
    if !extra.is_empty() {
        t.set_with(
            "after",
            Val::Array(extra.iter().map(|e| lit(e)).collect()),
            "ordering only, so that it stops before the shutdown work (see that program's comment)",
        );
    }
    for dep in &order.unknown[i] {
        notes.push(Note::at(
            &u.at,
            1,
            "dependencies.d",
            format!("{} depends on {dep}, which this root does not define (the base image's?): not written", u.name),
            format!("import a root holding the base image's s6-rc.d too, or add {dep} to depends_on once it is a program"),
        ));
    }
    identity(&mut t, run);
    readiness(&mut t, u, notes);
    stopping(&mut t, u, notes);
    if let Some(f) = &u.finish {
        t.set_with(
            "finish",
            finish_words(f),
            "finish: after every exit, before a restart",
        );
    }
    let mut tables = vec![t];
    if !run.env.is_empty() {
        let mut env = Table::new(&["program", name, "env"]);
        for (k, v) in &run.env {
            env.set(k, lit(v));
        }
        tables.push(env);
    }
    tables
}

/// What the unit was, for its comment.
fn describe(u: &Unit) -> &'static str {
    match (u.origin, u.oneshot) {
        (Origin::ContInit, _) => "a cont-init.d script",
        (Origin::Services, _) => "a services.d service",
        (Origin::Rc, true) => "an s6-rc oneshot",
        (Origin::Rc, false) => "an s6-rc longrun",
    }
}

/// `user` and `workdir` from an execline chain.
fn identity(t: &mut Table, run: &Command) {
    if let Some(user) = &run.user {
        t.set_with("user", lit(user), "s6-setuidgid");
    }
    if let Some(dir) = &run.workdir {
        t.set_with("workdir", lit(dir), "cd");
    }
}

/// `notification-fd` and `timeout-up`; a oneshot's run once.
fn readiness(t: &mut Table, u: &Unit, notes: &mut Vec<Note>) {
    if u.oneshot {
        t.set_with(
            "max_restarts",
            Val::Int(0),
            "s6-overlay ran it once; a failure stops the container (as S6_BEHAVIOUR_IF_STAGE2_FAILS=2 does)",
        );
        if let Some(ms) = u.timeout_up.filter(|&ms| ms > 0) {
            notes.push(Note::at(
                &u.at,
                1,
                "timeout-up",
                format!("s6-rc failed the oneshot after {ms}ms; ctrlinit lets a oneshot run as long as it takes"),
                format!("if it must be bounded, run it under `timeout {}s`", ms.div_ceil(1000)),
            ));
        }
        return;
    }
    if let Some(check) = u.run.as_ref().and_then(|r| r.ready_check.as_ref()) {
        t.set_with(
            "ready",
            Val::Inline(vec![(
                "exec".into(),
                Val::Array(vec![lit("sh"), lit("-c"), lit(check)]),
            )]),
            "s6-notifyoncheck -c: ready once this check passes, as s6-notifyoncheck polled it (drop s6-notifyoncheck from the script)",
        );
        if let Some(ms) = u.timeout_up.filter(|&ms| ms > 0) {
            t.set_with("ready_timeout", millis(ms), "timeout-up");
        }
        return;
    }
    if let Some(fd) = u.ready_fd {
        t.set_with(
            "ready",
            Val::Inline(vec![("fd".into(), Val::Int(fd as i64))]),
            "notification-fd: ready when it writes a newline to this descriptor, as s6 read it",
        );
        match u.timeout_up {
            Some(ms) if ms > 0 => t.set_with("ready_timeout", millis(ms), "timeout-up"),
            _ => notes.push(Note::at(
                &u.at,
                1,
                "notification-fd",
                "s6 waited for readiness as long as it took; ctrlinit's ready_timeout (60s by default) fails a start that is not ready by then",
                "set ready_timeout if it may take longer",
            )),
        }
    }
}

/// `down-signal`, `timeout-kill` / `timeout-down`.
fn stopping(t: &mut Table, u: &Unit, notes: &mut Vec<Note>) {
    if let Some(sig) = &u.down_signal {
        match crate::model::signals::parse_signal(sig) {
            Ok(s) if s != nix::sys::signal::Signal::SIGTERM => {
                t.set_with("stop_signal", Val::Str(s.as_str().into()), "down-signal")
            }
            Ok(_) => {}
            Err(e) => notes.push(Note::at(
                &u.at,
                1,
                "down-signal",
                format!("{e}: not written"),
                "write a signal name",
            )),
        }
    }
    let (key, ms) = match (u.timeout_kill, u.timeout_down) {
        (Some(k), _) if k > 0 => ("timeout-kill", k),
        (_, Some(d)) if d > 0 => ("timeout-down", d),
        _ => return,
    };
    t.set_with("stop_timeout", millis(ms), key);
    if ms > 9000 {
        notes.push(Note::at(
            &u.at,
            1,
            key,
            format!("{}ms is longer than [init] stop_timeout (9s, to fit docker stop's 10s), which caps a container's stop", ms),
            "raise [init] stop_timeout together with docker stop -t / stop_grace_period, or shorten it",
        ));
    }
}

/// The finish hook: the script, given s6's arguments (the exit code, or 256 and the signal
/// number) when it reads them.
fn finish_words(f: &Command) -> Val {
    if !f.reads_args {
        return words(&f.words);
    }
    let mut w = vec![
        "/bin/sh".to_string(),
        "-c".into(),
        "if [ -n \"$CTRLINIT_EXIT_SIGNAL\" ]; then exec \"$@\" 256 $((CTRLINIT_EXIT_STATUS - 128)); fi; exec \"$@\" \"$CTRLINIT_EXIT_CODE\" 0".into(),
        "finish".into(),
    ];
    w.extend(f.words.iter().cloned());
    words(&w)
}

/// One output file per unit program.
pub fn unit_files(
    layout: &Layout,
    order: &Order,
    names: &[Option<String>],
    extra: &[Vec<String>],
    notes: &mut Vec<Note>,
) -> Vec<OutFile> {
    (0..layout.units.len())
        .filter_map(|i| {
            let tables = unit_table(layout, order, names, &extra[i], i, notes);
            let name = names[i].as_ref()?;
            Some(OutFile {
                name: format!("{name}.toml"),
                comments: vec!["Written by `ctrlinit import --from s6-overlay`.".into()],
                tables,
            })
        })
        .collect()
}

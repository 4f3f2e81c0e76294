//! `instances = N`: one `[program.NAME]` table run as N programs, `NAME-0` … `NAME-<N-1>`.
//!
//! The table is read once per instance with `INSTANCE` (0 … N-1) and `INSTANCES` (N) added to
//! the interpolation environment, so any string of it may differ per instance; to the
//! supervisor each instance is a program of its own (state, logs, budget, crash reports). A
//! mistake in the table is the same mistake for every instance, so the instances' errors are
//! merged without repeats: each is reported once.

use std::ops::Range;

use toml::de::DeValue;

use super::error::ConfigError;
use super::names::{MAX_NAME, name_problem};
use super::reader::{Reader, Value, get};
use super::schema::{ProgramDraft, read_program};
use super::spec::Instance;

/// The most instances one table may run: each is a process with its own pipes, log files and
/// state, and a typo (`instances = 40000`) should not fork a fleet.
pub const MAX_INSTANCES: i64 = 1000;

/// Reads one `[program.NAME]` table: one draft, or one per instance when it sets `instances`.
pub(super) fn read_table(
    r: &mut Reader<'_>,
    name: &str,
    name_span: Range<usize>,
    v: &Value<'_>,
) -> Vec<ProgramDraft> {
    let count = match v.get_ref() {
        DeValue::Table(t) => get(t, "instances"),
        _ => None,
    };
    let Some(count) = count else {
        return read_program(r, name, name_span, v).into_iter().collect();
    };
    let Some(n) = instance_count(r, name, count) else {
        // Its other errors are still worth reporting; the load fails anyway.
        return read_program(r, name, name_span, v).into_iter().collect();
    };
    let base = r.env();
    let mut merged: Vec<ConfigError> = Vec::new();
    let mut drafts = Vec::with_capacity(n as usize);
    for index in 0..n {
        let (own, all) = (index.to_string(), n.to_string());
        let env = move |k: &str| match k {
            "INSTANCE" => Some(own.clone()),
            "INSTANCES" => Some(all.clone()),
            _ => base(k),
        };
        let mut errors = Vec::new();
        let draft = {
            let mut reader = r.with_env(&env, &mut errors);
            read_program(&mut reader, name, name_span.clone(), v)
        };
        for e in errors {
            if !merged.contains(&e) {
                merged.push(e);
            }
        }
        if let Some(mut d) = draft {
            d.spec.name = instance_name(name, index);
            d.spec.instance = Some(Instance {
                group: name.to_string(),
                index,
            });
            drafts.push(d);
        }
    }
    r.errors.extend(merged);
    drafts
}

/// The name of instance `index` of `group`.
pub fn instance_name(group: &str, index: u32) -> String {
    format!("{group}-{index}")
}

/// The `instances` value when it is usable: 1 to [`MAX_INSTANCES`], and every instance name a
/// valid program name.
fn instance_count(r: &mut Reader<'_>, name: &str, v: &Value<'_>) -> Option<u32> {
    let key = format!("program.{}.instances", super::names::short(name));
    let n = r.integer(v, &key, i64::MIN..i64::MAX)?;
    if n < 1 {
        r.error(
            &v.span(),
            &key,
            format!("instances = {n} runs nothing"),
            Some(format!(
                "use 1 to {MAX_INSTANCES}; to define the program without starting it, set autostart = false"
            )),
        );
        return None;
    }
    if n > MAX_INSTANCES {
        r.error(
            &v.span(),
            &key,
            format!("instances = {n} is more than {MAX_INSTANCES}"),
            Some(format!(
                "use at most {MAX_INSTANCES} (each instance is a process with its own logs and state)"
            )),
        );
        return None;
    }
    let n = n as u32;
    let last = instance_name(name, n - 1);
    // An invalid table name is reported by the table's reader; only a name that is valid alone
    // and too long with its suffix is this key's problem.
    if name_problem(name).is_none() && name_problem(&last).is_some() {
        let room = MAX_NAME.saturating_sub(last.len() - name.len());
        r.error(
            &v.span(),
            &key,
            format!(
                "instance names such as `{}…-{}` would be {} characters long (at most {MAX_NAME})",
                &name[..name.len().min(24)],
                n - 1,
                last.len()
            ),
            Some(format!(
                "shorten the program name to at most {room} characters, or run fewer instances"
            )),
        );
        return None;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_names_count_from_zero() {
        assert_eq!(instance_name("web", 0), "web-0");
        assert_eq!(instance_name("web", 999), "web-999");
    }
}

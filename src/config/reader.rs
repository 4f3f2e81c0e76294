//! Typed reading of a spanned TOML tree that collects every error instead of stopping at the first.
//!
//! Each getter returns `None` after recording a [`ConfigError`] with the file, the line of the
//! offending value, the dotted key and a fix; callers fall back to defaults and carry on, so one
//! pass reports every problem.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::error::ConfigError;
use super::interpolate::{InterpolateError, interpolate};
use super::units;

/// A value with the byte range it came from.
pub(super) type Value<'i> = Spanned<DeValue<'i>>;

/// One file being read, and where its errors go.
pub(super) struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
    /// Where each line after the first starts (the offsets just past each newline), found once
    /// per file: a line is then a binary search, not a count from the top (which made a file
    /// of many programs quadratic to read).
    newlines: std::rc::Rc<Vec<usize>>,
    env: &'a dyn Fn(&str) -> Option<String>,
    /// Every error found so far.
    pub errors: &'a mut Vec<ConfigError>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(
        path: &'a Path,
        text: &'a str,
        env: &'a dyn Fn(&str) -> Option<String>,
        errors: &'a mut Vec<ConfigError>,
    ) -> Self {
        let newlines = memchr::memchr_iter(b'\n', text.as_bytes())
            .map(|i| i + 1)
            .collect();
        Reader {
            path,
            text,
            newlines: std::rc::Rc::new(newlines),
            env,
            errors,
        }
    }

    /// A reader of the same file with another environment, whose errors go to `errors` (an
    /// instance of a program reads its table with `INSTANCE` and `INSTANCES` added).
    pub(super) fn with_env<'b>(
        &self,
        env: &'b dyn Fn(&str) -> Option<String>,
        errors: &'b mut Vec<ConfigError>,
    ) -> Reader<'b>
    where
        'a: 'b,
    {
        Reader {
            path: self.path,
            text: self.text,
            newlines: std::rc::Rc::clone(&self.newlines),
            env,
            errors,
        }
    }

    /// The environment strings are interpolated from.
    pub(super) fn env(&self) -> &'a dyn Fn(&str) -> Option<String> {
        self.env
    }

    /// The 1-based line of byte `offset`.
    pub(super) fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        // Lines that start at or before `end`, plus the first.
        self.newlines.partition_point(|&start| start <= end) + 1
    }

    /// `file:line` of a span, for messages that point elsewhere.
    pub(super) fn location(&self, span: &Range<usize>) -> String {
        format!("{}:{}", self.path.display(), self.line_of(span.start))
    }

    /// Records an error at `span`.
    pub(super) fn error(
        &mut self,
        span: &Range<usize>,
        key: &str,
        message: String,
        fix: Option<String>,
    ) {
        let line = self.line_of(span.start);
        self.errors.push(ConfigError {
            file: self.path.to_path_buf(),
            line: Some(line),
            key: key.to_string(),
            message,
            fix,
        });
    }

    /// Reports every key of `table` not in `known`, suggesting the closest known one.
    pub(super) fn reject_unknown_keys(&mut self, table: &DeTable<'_>, path: &str, known: &[&str]) {
        self.reject_unknown_keys_with(table, path, known, |_| None);
    }

    /// As [`Reader::reject_unknown_keys`], with `foreign` giving the message and fix for a key
    /// another tool's users write by habit (`autorestart` in a program table).
    pub(super) fn reject_unknown_keys_with(
        &mut self,
        table: &DeTable<'_>,
        path: &str,
        known: &[&str],
        foreign: impl Fn(&str) -> Option<(String, String)>,
    ) {
        for (key, _) in table.iter() {
            let name: &str = key.get_ref();
            if known.contains(&name) {
                continue;
            }
            if let Some((message, fix)) = foreign(name) {
                self.error(&key.span(), &join(path, name), message, Some(fix));
                continue;
            }
            let closest = known
                .iter()
                .map(|k| (strsim::levenshtein(k, name), *k))
                .min()
                .filter(|(d, _)| *d <= 3);
            let fix = match closest {
                Some((_, k)) => format!("did you mean `{k}`?"),
                None => format!("known keys here: {}", known.join(", ")),
            };
            self.error(
                &key.span(),
                &join(path, name),
                format!("unknown key `{name}`"),
                Some(fix),
            );
        }
    }

    /// A string, interpolated.
    pub(super) fn string(&mut self, v: &Value<'_>, key: &str) -> Option<String> {
        match v.get_ref() {
            DeValue::String(s) => self.interpolate(s, &v.span(), key),
            other => {
                self.wrong_type(v, key, "a string", other);
                None
            }
        }
    }

    /// A boolean (or a string that interpolates to `true`/`false`).
    pub(super) fn boolean(&mut self, v: &Value<'_>, key: &str) -> Option<bool> {
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            DeValue::String(_) => match self.string(v, key)?.as_str() {
                "true" => Some(true),
                "false" => Some(false),
                other => {
                    self.error(
                        &v.span(),
                        key,
                        format!("{other:?} is not a boolean"),
                        Some("write true or false".into()),
                    );
                    None
                }
            },
            other => {
                self.wrong_type(v, key, "true or false", other);
                None
            }
        }
    }

    /// An integer within `range` (or a string that interpolates to one).
    pub(super) fn integer(&mut self, v: &Value<'_>, key: &str, range: Range<i64>) -> Option<i64> {
        let n = match v.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).ok(),
            DeValue::String(_) => self.string(v, key)?.trim().parse::<i64>().ok(),
            other => {
                self.wrong_type(v, key, "an integer", other);
                return None;
            }
        };
        match n {
            Some(n) if range.contains(&n) => Some(n),
            _ => {
                self.error(
                    &v.span(),
                    key,
                    "not a whole number in range".into(),
                    Some(format!(
                        "use a whole number from {} to {}",
                        range.start,
                        range.end - 1
                    )),
                );
                None
            }
        }
    }

    /// A float (or an integer, or a string that interpolates to a number).
    pub(super) fn float(&mut self, v: &Value<'_>, key: &str) -> Option<f64> {
        let n = match v.get_ref() {
            DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(|n| n as f64),
            DeValue::String(_) => self.string(v, key)?.trim().parse::<f64>().ok(),
            other => {
                self.wrong_type(v, key, "a number", other);
                return None;
            }
        };
        if n.is_none() {
            self.error(
                &v.span(),
                key,
                "not a number".into(),
                Some("write a number such as 2.0".into()),
            );
        }
        n
    }

    /// A duration string such as `"5s"`.
    pub(super) fn duration(&mut self, v: &Value<'_>, key: &str) -> Option<Duration> {
        let s = self.string(v, key)?;
        match crate::model::durations::parse_duration(&s) {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(
                    &v.span(),
                    key,
                    e,
                    Some(
                        r#"write a duration in quotes, such as "500ms", "5s", "1m 30s" or "2h""#
                            .into(),
                    ),
                );
                None
            }
        }
    }

    /// A duration above zero; `example` is the one the fix suggests (`"2s"`).
    pub(super) fn positive_duration(
        &mut self,
        v: &Value<'_>,
        key: &str,
        example: &str,
    ) -> Option<Duration> {
        let d = self.duration(v, key)?;
        if d.is_zero() {
            self.error(
                &v.span(),
                key,
                "must be longer than 0".into(),
                Some(format!("use a duration such as \"{example}\"")),
            );
            return None;
        }
        Some(d)
    }

    /// A byte size such as `"10MiB"` (or a plain integer of bytes).
    pub(super) fn size(&mut self, v: &Value<'_>, key: &str) -> Option<u64> {
        if let DeValue::Integer(_) = v.get_ref() {
            return self.integer(v, key, 0..i64::MAX).map(|n| n as u64);
        }
        let s = self.string(v, key)?;
        match units::parse_size(&s) {
            Ok(n) => Some(n),
            Err(e) => {
                self.error(
                    &v.span(),
                    key,
                    format!("{s:?} is not a size ({e})"),
                    Some(r#"write a size such as "10MiB" or "512KiB""#.into()),
                );
                None
            }
        }
    }

    /// A signal name such as `"SIGTERM"`.
    pub(super) fn signal(&mut self, v: &Value<'_>, key: &str) -> Option<Signal> {
        let s = self.string(v, key)?;
        match crate::model::signals::parse_signal(&s) {
            Ok(sig) => Some(sig),
            Err(e) => {
                self.error(
                    &v.span(),
                    key,
                    e,
                    Some(r#"write a signal name such as "SIGTERM", "SIGINT" or "SIGQUIT""#.into()),
                );
                None
            }
        }
    }

    /// An array of strings, each interpolated.
    pub(super) fn string_list(&mut self, v: &Value<'_>, key: &str) -> Option<Vec<String>> {
        let DeValue::Array(items) = v.get_ref() else {
            self.wrong_type(v, key, "an array of strings", v.get_ref());
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.string(item, &format!("{key}[{i}]")) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// A command: an array of strings, or one string split as a shell would (no shell runs).
    pub(super) fn command(&mut self, v: &Value<'_>, key: &str) -> Option<Vec<String>> {
        let argv = match v.get_ref() {
            DeValue::String(_) => {
                let s = self.string(v, key)?;
                match shlex::split(&s) {
                    Some(argv) => argv,
                    None => {
                        self.error(
                            &v.span(),
                            key,
                            "unbalanced quotes in the command".into(),
                            Some("close every quote, or write the command as an array".into()),
                        );
                        return None;
                    }
                }
            }
            _ => self.string_list(v, key)?,
        };
        for (i, arg) in argv.iter().enumerate() {
            if super::exec_limits::too_long(arg.len()) {
                let span = match v.get_ref() {
                    DeValue::Array(items) if items.len() == argv.len() => items[i].span(),
                    _ => v.span(),
                };
                let (message, fix) = super::exec_limits::too_long_error("the argument", arg.len());
                self.error(&span, &format!("{key}[{i}]"), message, Some(fix));
                return None;
            }
        }
        if argv.is_empty() || argv[0].is_empty() {
            self.error(
                &v.span(),
                key,
                "the command is empty".into(),
                Some(r#"name the program to run, e.g. ["/usr/bin/api", "--port", "8080"]"#.into()),
            );
            return None;
        }
        Some(argv)
    }

    /// One of `choices`, by its config spelling.
    pub(super) fn choice<T: Copy>(
        &mut self,
        v: &Value<'_>,
        key: &str,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let s = self.string(v, key)?;
        if let Some((_, t)) = choices.iter().find(|(name, _)| *name == s) {
            return Some(*t);
        }
        let names: Vec<String> = choices.iter().map(|(n, _)| format!("{n:?}")).collect();
        self.error(
            &v.span(),
            key,
            format!("unknown value {s:?}"),
            Some(format!("use one of {}", names.join(", "))),
        );
        None
    }

    /// A table (or an error naming the type found).
    pub(super) fn table<'t, 'i>(&mut self, v: &'t Value<'i>, key: &str) -> Option<&'t DeTable<'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(t),
            other => {
                self.wrong_type(v, key, "a table", other);
                None
            }
        }
    }

    fn interpolate(&mut self, s: &str, span: &Range<usize>, key: &str) -> Option<String> {
        let value = match interpolate(s, self.env) {
            Ok(v) => v,
            Err(e) => {
                let (message, fix) = interpolation_error(e);
                self.error(span, key, message, Some(fix));
                return None;
            }
        };
        // No command, path, argument or environment variable can hold a NUL byte: every spawn
        // would fail. Said here, once, instead.
        if let Some(at) = value.find('\0') {
            self.error(
                span,
                key,
                format!(
                    "the value holds a NUL byte (\\u0000) at character {}",
                    value[..at].chars().count() + 1
                ),
                Some("remove it: no command, path or environment variable can hold one".into()),
            );
            return None;
        }
        Some(value)
    }

    fn wrong_type(&mut self, v: &Value<'_>, key: &str, expected: &str, found: &DeValue<'_>) {
        let name = key.rsplit('.').next().unwrap_or(key);
        let example = match expected {
            "a string" => format!("{name} = \"...\" (in quotes, durations too: \"5s\")"),
            "true or false" => format!("{name} = true"),
            "an integer" => format!("{name} = 5 (no quotes)"),
            "a number" => format!("{name} = 2.0 (no quotes)"),
            "an array of strings" => format!("{name} = [\"...\", \"...\"]"),
            "a table" => format!("{name} = {{ ... }}, or a [{key}] table"),
            _ => format!("{name} as {expected}"),
        };
        self.error(
            &v.span(),
            key,
            format!("expected {expected}, found {}", found.type_str()),
            Some(format!("write it as {example}")),
        );
    }
}

/// The message and fix for a string that could not be interpolated.
fn interpolation_error(e: InterpolateError) -> (String, String) {
    match e {
        InterpolateError::Unset(var) => (
            format!("environment variable {var} is not set"),
            format!(
                "set {var} in the container's environment, give a default with ${{{var}:-value}}, or write $$ for a literal $"
            ),
        ),
        InterpolateError::Required(var, msg) if msg.is_empty() => (
            format!(
                "environment variable {var} is required (${{{var}:?}}) and is not set or empty"
            ),
            format!("set {var} in the container's environment"),
        ),
        InterpolateError::Required(var, msg) => (
            format!("environment variable {var} is required: {msg}"),
            format!("set {var} in the container's environment"),
        ),
        InterpolateError::Unterminated(column) => (
            format!("the `${{` at column {column} of the value is never closed"),
            "close it with `}`, or write $$ for a literal $".into(),
        ),
        InterpolateError::TooDeep => (
            "defaults nest more than 16 levels deep".into(),
            "flatten the defaults: ${A:-${B}} works, a deeper chain is not needed".into(),
        ),
    }
}

/// `a.b` from a path and a key.
pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The value of `key` in `table`.
pub(super) fn get<'t, 'i>(table: &'t DeTable<'i>, key: &str) -> Option<&'t Value<'i>> {
    table
        .iter()
        .find(|(k, _)| {
            let name: &str = k.get_ref();
            name == key
        })
        .map(|(_, v)| v)
}

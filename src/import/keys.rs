//! Reading one section's keys as supervisord reads them: expanded in their round, typed by
//! supervisord's rules, each error and note recorded with the key's file and line.

use super::expand::expand;
use super::ini::{Opt, Section};
use super::report::{InputError, Note};
use super::scope::Scope;
use super::text::Text;

/// A typed value: known now, or only at start (its text).
#[derive(Debug, Clone)]
pub enum Got<T> {
    /// Known now.
    Now(T),
    /// Known at start only: its text.
    Later(Text),
}

/// Reads one section's keys, collecting errors and notes.
pub struct Keys<'a> {
    /// The section.
    pub section: &'a Section,
    /// `[DEFAULT]`'s values, seen where the section sets nothing.
    pub defaults: &'a [Opt],
    /// `[program:x]`, for messages.
    pub label: String,
    /// Where errors go.
    pub errors: &'a mut Vec<InputError>,
    /// Where notes go.
    pub notes: &'a mut Vec<Note>,
}

impl Keys<'_> {
    /// The option `key`, as written (the section's, else `[DEFAULT]`'s).
    pub fn opt(&self, key: &str) -> Option<&Opt> {
        self.section.get(key, self.defaults)
    }

    /// The expanded value of `key`, if set and valid.
    pub fn text(&mut self, key: &str, scope: &Scope<'_>) -> Option<(Text, Opt)> {
        self.expanded(key, scope, true)
    }

    /// The expanded value of `key`; formatting lost is noted when `carried` (the value is
    /// written out; a log file's path is not).
    pub fn expanded(&mut self, key: &str, scope: &Scope<'_>, carried: bool) -> Option<(Text, Opt)> {
        let opt = self.opt(key)?.clone();
        let lookup = |k: &str| scope.lookup(k, &opt.file);
        match expand(&opt.value, &lookup) {
            Ok((text, lost)) => {
                for l in lost.into_iter().filter(|_| carried) {
                    let why = if l.written.contains("process_num") {
                        "ctrlinit's instance numbers have no width or padding"
                    } else {
                        "a value read at start is written as it is, without width or padding"
                    };
                    self.notes.push(Note::at(
                        &opt.file,
                        opt.line,
                        format!("{} {key}", self.label),
                        format!("{} is written {}: {why}", l.written, l.instead),
                        "if the program needs the padded form, have it pad the number itself, or write the values out",
                    ));
                }
                Some((text, opt))
            }
            Err(e) => {
                self.errors.push(InputError::at(
                    &opt.file,
                    opt.line,
                    format!("{} {key}: {}", self.label, e.message(&scope.names())),
                    "write %% for a literal %, and %(name)s only with the names listed",
                ));
                None
            }
        }
    }

    /// `key` parsed by `parse` when known now; its text when known at start only.
    pub fn typed<T>(
        &mut self,
        key: &str,
        scope: &Scope<'_>,
        parse: fn(&str) -> Result<T, String>,
    ) -> Option<(Got<T>, Opt)> {
        let (text, opt) = self.text(key, scope)?;
        match text.as_static() {
            Some(s) => match parse(&s) {
                Ok(v) => Some((Got::Now(v), opt)),
                Err(e) => {
                    self.errors.push(InputError::at(
                        &opt.file,
                        opt.line,
                        format!("{} {key}: {e}", self.label),
                        "correct the value (supervisord refuses it too)",
                    ));
                    None
                }
            },
            None => Some((Got::Later(text), opt)),
        }
    }

    /// `key` known now, else `default`; a value read at start is noted and `default` used.
    pub fn now_or<T: Clone>(
        &mut self,
        key: &str,
        scope: &Scope<'_>,
        parse: fn(&str) -> Result<T, String>,
        default: T,
    ) -> (T, bool) {
        match self.typed(key, scope, parse) {
            Some((Got::Now(v), _)) => (v, true),
            Some((Got::Later(t), opt)) => {
                self.notes.push(Note::at(
                    &opt.file,
                    opt.line,
                    format!("{} {key}", self.label),
                    format!(
                        "its value comes from the environment at start ({}), which this setting cannot: supervisord's default is used",
                        t.to_ctrlinit()
                    ),
                    "write the value out",
                ));
                (default, false)
            }
            None => (default, false),
        }
    }

    /// A note about `opt`.
    pub fn note(&mut self, opt: &Opt, message: impl Into<String>, todo: impl Into<String>) {
        self.notes.push(Note::at(
            &opt.file,
            opt.line,
            format!("{} {}", self.label, opt.key),
            message,
            todo,
        ));
    }
}

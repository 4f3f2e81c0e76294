//! supervisord's INI dialect, as Python's `configparser.RawConfigParser` reads it with the
//! options supervisord gives it: `=` or `:` between a key and its value, keys lowercased, `;`
//! and `#` comments (a whole line, or inline after whitespace), indented continuation lines,
//! `[DEFAULT]` values seen by every section, and a section or key given twice merged (the later
//! value wins). Every value keeps the file and line it came from, for the report.

use std::path::{Path, PathBuf};

use super::report::InputError;

/// One `key = value` with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// Lowercased, as configparser's `optionxform` leaves it.
    pub key: String,
    /// The value, continuation lines joined with `\n`, comments removed, trimmed.
    pub value: String,
    /// The file it is in.
    pub file: PathBuf,
    /// Its first line.
    pub line: usize,
}

/// One `[name]` section (merged across the places it was opened).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// What is between the brackets.
    pub name: String,
    /// Where it was first opened.
    pub file: PathBuf,
    /// Its header's line there.
    pub line: usize,
    /// Its options in the order first written (a later value replaces an earlier one).
    pub options: Vec<Opt>,
}

impl Section {
    /// The option `key`, if set.
    pub fn get<'a>(&'a self, key: &str, defaults: &'a [Opt]) -> Option<&'a Opt> {
        self.options
            .iter()
            .find(|o| o.key == key)
            .or_else(|| defaults.iter().find(|o| o.key == key))
    }
}

/// Every section read so far, in the order they first appeared, and `[DEFAULT]`'s values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ini {
    /// The sections.
    pub sections: Vec<Section>,
    /// `[DEFAULT]`: every section sees these where it sets nothing itself.
    pub defaults: Vec<Opt>,
}

impl Ini {
    /// The section called `name`.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Reads `text` (from `file`) into these sections; `Err` with every bad line.
    pub fn read(&mut self, file: &Path, text: &str) -> Result<(), Vec<InputError>> {
        let mut errors = Vec::new();
        // Where the current option lives: section index (`None` for DEFAULT) and option index.
        let mut current: Option<Option<usize>> = None;
        let mut option: Option<usize> = None;
        let mut indent_level = usize::MAX;
        // Continuation pieces of the current option, joined at its end.
        let mut pending: Vec<String> = Vec::new();
        for (i, raw) in text.split('\n').enumerate() {
            let lineno = i + 1;
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let comment_start = comment_start(line);
            let value = line[..comment_start.unwrap_or(line.len())].trim();
            if value.is_empty() {
                // A blank line (not a comment) inside a value is part of it.
                if comment_start.is_none() && option.is_some() && current.is_some() {
                    pending.push(String::new());
                }
                continue;
            }
            if let Some(at) = value.find('\0') {
                errors.push(InputError::at(
                    file,
                    lineno,
                    format!(
                        "the line holds a NUL byte at character {}",
                        line[..line.len() - line.trim_start().len()].chars().count()
                            + value[..at].chars().count()
                            + 1
                    ),
                    "remove it: no command, argument, path or environment variable can hold a NUL byte",
                ));
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            if current.is_some() && option.is_some() && indent > indent_level {
                pending.push(value.to_string());
                continue;
            }
            self.finish(current, option, &mut pending);
            indent_level = indent;
            if let Some(name) = section_header(value) {
                option = None;
                current = Some(self.open_section(name, file, lineno));
                continue;
            }
            let Some(at) = current else {
                errors.push(InputError::at(
                    file,
                    lineno,
                    format!("{value:?} comes before any [section] header"),
                    "start the file with a section such as [supervisord] or [program:NAME]",
                ));
                continue;
            };
            let Some((key, val)) = split_option(value) else {
                errors.push(InputError::at(
                    file,
                    lineno,
                    format!("{value:?} is neither a [section] nor a key = value line"),
                    "write key = value, or start the line with ; to make it a comment",
                ));
                option = None;
                continue;
            };
            let opt = Opt {
                key: key.to_lowercase(),
                value: val.to_string(),
                file: file.to_path_buf(),
                line: lineno,
            };
            option = Some(self.set_option(at, opt));
        }
        self.finish(current, option, &mut pending);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The section `name` opened at `file:line`: `None` for `[DEFAULT]`, else its index (a
    /// section opened again is the same section).
    fn open_section(&mut self, name: &str, file: &Path, line: usize) -> Option<usize> {
        if name == "DEFAULT" {
            return None;
        }
        if let Some(at) = self.sections.iter().position(|s| s.name == name) {
            return Some(at);
        }
        self.sections.push(Section {
            name: name.to_string(),
            file: file.to_path_buf(),
            line,
            options: Vec::new(),
        });
        Some(self.sections.len() - 1)
    }

    /// Sets `opt` in section `at` (`None`: `[DEFAULT]`), replacing a value set before; its index.
    fn set_option(&mut self, at: Option<usize>, opt: Opt) -> usize {
        let list = match at {
            Some(s) => &mut self.sections[s].options,
            None => &mut self.defaults,
        };
        match list.iter().position(|o| o.key == opt.key) {
            Some(existing) => {
                list[existing] = opt;
                existing
            }
            None => {
                list.push(opt);
                list.len() - 1
            }
        }
    }

    /// Appends the continuation lines read for the current option to its value.
    fn finish(
        &mut self,
        current: Option<Option<usize>>,
        option: Option<usize>,
        pending: &mut Vec<String>,
    ) {
        let (Some(at), Some(o)) = (current, option) else {
            pending.clear();
            return;
        };
        if pending.is_empty() {
            return;
        }
        let list = match at {
            Some(s) => &mut self.sections[s].options,
            None => &mut self.defaults,
        };
        let opt = &mut list[o];
        for p in pending.drain(..) {
            opt.value.push('\n');
            opt.value.push_str(&p);
        }
        // configparser drops the blank lines a value ends with.
        let trimmed = opt.value.trim_end().len();
        opt.value.truncate(trimmed);
    }
}

/// Where a comment starts on `line`, as configparser finds it: a line whose first non-blank is
/// `#` or `;` is all comment; otherwise the first `;` or `#` at the start or after whitespace.
///
/// configparser looks for each prefix in turn and stops at the first round where one is found,
/// so a `;` found early hides an earlier `#` that is found later (`a#b #c ;d` keeps ` #c`):
/// that is reproduced, since supervisord sees what it sees.
fn comment_start(line: &str) -> Option<usize> {
    let t = line.trim_start();
    if t.starts_with('#') || t.starts_with(';') {
        return Some(0);
    }
    let qualifies = |i: usize| {
        i == 0
            || line[..i]
                .chars()
                .next_back()
                .is_some_and(char::is_whitespace)
    };
    // Each prefix's search position, advanced one occurrence per round.
    let mut from: Vec<(char, usize)> = vec![(';', 0), ('#', 0)];
    let mut found: Option<usize> = None;
    while found.is_none() && !from.is_empty() {
        let mut next = Vec::new();
        for (prefix, start) in from {
            let Some(rel) = line.get(start..).and_then(|s| s.find(prefix)) else {
                continue;
            };
            let index = start + rel;
            next.push((prefix, index + prefix.len_utf8()));
            if qualifies(index) {
                found = Some(found.map_or(index, |f: usize| f.min(index)));
            }
        }
        from = next;
    }
    found
}

/// The name of a `[name]` header: from the first `[` to the last `]` (configparser's greedy
/// `\[(?P<header>.+)\]`, matched at the start of the line).
fn section_header(value: &str) -> Option<&str> {
    let rest = value.strip_prefix('[')?;
    let end = rest.rfind(']')?;
    (end > 0).then(|| &rest[..end])
}

/// `key = value` or `key: value`, split at the first `=` or `:`; `None` when there is neither,
/// or the key is empty.
fn split_option(value: &str) -> Option<(&str, &str)> {
    let at = value.find(['=', ':'])?;
    let key = value[..at].trim_end();
    if key.is_empty() {
        return None;
    }
    Some((key, value[at + 1..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Ini {
        let mut ini = Ini::default();
        ini.read(Path::new("t.conf"), text).unwrap();
        ini
    }

    fn value(ini: &Ini, section: &str, key: &str) -> String {
        ini.section(section)
            .unwrap()
            .get(key, &ini.defaults)
            .unwrap()
            .value
            .clone()
    }

    #[test]
    fn reads_as_configparser_does() {
        // The values Python 3.11's RawConfigParser(inline_comment_prefixes=(';', '#'),
        // strict=False) gives for the same text.
        let ini = read(
            "[a] ; x\nk = v ; c\nk2 = a#b #c ;d\nk3=\"q;r\"\nfiles =\n   one\n   two\n\n   three\n  ; comment\nx: y = z\n[a]\nk = again\n[b]]x]\nq=1\n",
        );
        assert_eq!(value(&ini, "a", "k"), "again");
        assert_eq!(value(&ini, "a", "k2"), "a#b #c");
        assert_eq!(value(&ini, "a", "k3"), "\"q;r\"");
        assert_eq!(value(&ini, "a", "files"), "\none\ntwo\n\nthree");
        assert_eq!(value(&ini, "a", "x"), "y = z");
        assert_eq!(value(&ini, "b]]x", "q"), "1");
        assert_eq!(ini.sections.len(), 2);
    }

    #[test]
    fn keys_are_lowercased_and_defaults_seen_everywhere() {
        let ini = read("[DEFAULT]\nAutoRestart = true\n[program:x]\nCommand=/bin/true\n");
        assert_eq!(value(&ini, "program:x", "command"), "/bin/true");
        assert_eq!(value(&ini, "program:x", "autorestart"), "true");
    }

    #[test]
    fn bad_lines_are_errors_with_their_line() {
        let mut ini = Ini::default();
        let errors = ini
            .read(
                Path::new("t.conf"),
                "key = before\n[s]\nno delimiter here\n=x\n",
            )
            .unwrap_err();
        let lines: Vec<usize> = errors.iter().map(|e| e.line.unwrap_or(0)).collect();
        assert_eq!(lines, vec![1, 3, 4]);
    }

    #[test]
    fn a_url_in_a_value_is_not_a_comment() {
        let ini = read("[s]\nurl = http://x/#frag\nlog=a;b\n");
        assert_eq!(value(&ini, "s", "url"), "http://x/#frag");
        assert_eq!(value(&ini, "s", "log"), "a;b");
    }
}

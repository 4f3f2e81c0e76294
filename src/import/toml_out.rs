//! The generated files: tables of keys with comments, written by hand as TOML (basic strings
//! escaped, keys quoted when they are not bare), so that the output reads like a config a person
//! wrote: keys in a fixed order, each decision explained in a comment above its key.

use std::fmt::Write;

/// A TOML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// A basic string (its text as ctrlinit should read it, before TOML escaping).
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An array on one line.
    Array(Vec<Val>),
    /// An inline table on one line: `{ uptime = "5s" }`.
    Inline(Vec<(String, Val)>),
}

/// `key = value`, with comment lines above it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key (quoted when not bare).
    pub key: String,
    /// The value.
    pub value: Val,
    /// Lines of comment written above the key.
    pub comments: Vec<String>,
}

/// A `[header]` table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Its path, each part quoted when needed: `["program", "web"]` is `[program.web]`.
    pub path: Vec<String>,
    /// Comment lines above the header.
    pub comments: Vec<String>,
    /// Its keys.
    pub entries: Vec<Entry>,
}

impl Table {
    /// An empty table at `path`.
    pub fn new(path: &[&str]) -> Self {
        Table {
            path: path.iter().map(|s| s.to_string()).collect(),
            ..Table::default()
        }
    }

    /// Adds `key = value`.
    pub fn set(&mut self, key: &str, value: Val) {
        self.entries.push(Entry {
            key: key.to_string(),
            value,
            comments: Vec::new(),
        });
    }

    /// Adds `key = value` with a comment above it.
    pub fn set_with(&mut self, key: &str, value: Val, comment: &str) {
        self.entries.push(Entry {
            key: key.to_string(),
            value,
            comments: vec![comment.to_string()],
        });
    }
}

/// One generated file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutFile {
    /// Its name in the output directory (`web.toml`).
    pub name: String,
    /// Comment lines at its top.
    pub comments: Vec<String>,
    /// Its tables in order.
    pub tables: Vec<Table>,
}

impl OutFile {
    /// The file's text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for c in &self.comments {
            comment(&mut out, c);
        }
        for (i, t) in self.tables.iter().enumerate() {
            if i > 0 || !self.comments.is_empty() {
                out.push('\n');
            }
            for c in &t.comments {
                comment(&mut out, c);
            }
            let path: Vec<String> = t.path.iter().map(|p| key(p)).collect();
            let _ = writeln!(out, "[{}]", path.join("."));
            for e in &t.entries {
                for c in &e.comments {
                    comment(&mut out, c);
                }
                let _ = writeln!(out, "{} = {}", key(&e.key), value(&e.value));
            }
        }
        out
    }
}

/// `# text` lines (a comment with newlines becomes several lines).
fn comment(out: &mut String, text: &str) {
    // TOML allows no control character but a tab in a comment: a file name may hold one.
    let text: String = text
        .chars()
        .map(|c| {
            if c != '\n' && c != '\t' && (c.is_control()) {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect();
    for line in text.lines() {
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            let _ = writeln!(out, "# {line}");
        }
    }
}

/// A key: bare when it can be, quoted otherwise.
pub fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { k.to_string() } else { basic_string(k) }
}

/// A value as TOML.
fn value(v: &Val) -> String {
    match v {
        Val::Str(s) => basic_string(s),
        Val::Int(n) => n.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Array(items) => {
            let parts: Vec<String> = items.iter().map(value).collect();
            format!("[{}]", parts.join(", "))
        }
        Val::Inline(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{} = {}", key(k), value(v)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
    }
}

/// A TOML basic string: `"`, `\` and control characters escaped.
pub fn basic_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_valid_toml_that_reads_back() {
        let mut t = Table::new(&["program", "web.v2"]);
        t.set(
            "command",
            Val::Array(vec![
                Val::Str("sh".into()),
                Val::Str("-c".into()),
                Val::Str("echo \"a\\b\"\n\t\u{1}".into()),
            ]),
        );
        t.set_with(
            "autostart",
            Val::Bool(false),
            "supervisord's autostart = false",
        );
        t.set("max_restarts", Val::Int(3));
        let mut env = Table::new(&["program", "web.v2", "env"]);
        env.set("A.B", Val::Str("x".into()));
        let f = OutFile {
            name: "web.toml".into(),
            comments: vec!["From [program:web]".into()],
            tables: vec![t, env],
        };
        let text = f.render();
        assert!(text.contains("[program.\"web.v2\"]"), "{text}");
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        let prog = &parsed["program"]["web.v2"];
        assert_eq!(prog["command"][2].as_str(), Some("echo \"a\\b\"\n\t\u{1}"));
        assert_eq!(prog["autostart"].as_bool(), Some(false));
        assert_eq!(prog["env"]["A.B"].as_str(), Some("x"));
    }
}

//! What an import says: notes on everything not carried over exactly (each with where it was
//! written and what to do), and the errors that stop it (input that cannot be read or that
//! supervisord itself would refuse).

use std::fmt;
use std::path::{Path, PathBuf};

/// Input that cannot be read or parsed: nothing is written (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file.
    pub file: PathBuf,
    /// Its line, when one is to blame.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl InputError {
    /// An error at `file:line`.
    pub fn at(file: &Path, line: usize, message: String, fix: &str) -> Self {
        InputError {
            file: file.to_path_buf(),
            line: Some(line),
            message,
            fix: fix.to_string(),
        }
    }

    /// An error of the whole file.
    pub fn file(file: &Path, message: String, fix: &str) -> Self {
        InputError {
            file: file.to_path_buf(),
            line: None,
            message,
            fix: fix.to_string(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}\n    fix: {}", self.message, self.fix)
    }
}

/// Something the output does not do exactly as supervisord did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Where it was written (`None` for what concerns the whole import).
    pub at: Option<(PathBuf, usize)>,
    /// The section and key, e.g. `[program:web] startsecs`.
    pub what: String,
    /// What ctrlinit does instead, or why it is not carried over.
    pub message: String,
    /// What to do about it (may be empty).
    pub todo: String,
}

impl Note {
    /// A note about the value at `file:line`.
    pub fn at(
        file: &Path,
        line: usize,
        what: impl Into<String>,
        message: impl Into<String>,
        todo: impl Into<String>,
    ) -> Self {
        Note {
            at: Some((file.to_path_buf(), line)),
            what: what.into(),
            message: message.into(),
            todo: todo.into(),
        }
    }

    /// A note about the whole import.
    pub fn general(
        what: impl Into<String>,
        message: impl Into<String>,
        todo: impl Into<String>,
    ) -> Self {
        Note {
            at: None,
            what: what.into(),
            message: message.into(),
            todo: todo.into(),
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((file, line)) = &self.at {
            write!(f, "{}:{line}: ", file.display())?;
        }
        write!(f, "{}: {}", self.what, self.message)?;
        if !self.todo.is_empty() {
            write!(f, "\n    do: {}", self.todo)?;
        }
        Ok(())
    }
}

/// The notes as the report prints them: in file and line order (stable within a line), the
/// general ones last, each said once.
pub fn render_notes(notes: &[Note]) -> String {
    let mut unique: Vec<&Note> = Vec::new();
    for n in notes {
        if !unique.contains(&n) {
            unique.push(n);
        }
    }
    unique.sort_by(|a, b| match (&a.at, &b.at) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let mut out = String::new();
    for n in unique {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_sorted_by_place_once_each_general_last() {
        let a = Note::at(
            Path::new("a.conf"),
            9,
            "[program:x] startsecs",
            "m",
            "do it",
        );
        let b = Note::at(Path::new("a.conf"), 2, "[program:x] user", "m", "");
        let g = Note::general("priority", "m", "");
        let text = render_notes(&[g.clone(), a.clone(), b.clone(), a]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "note: a.conf:2: [program:x] user: m");
        assert_eq!(lines[1], "note: a.conf:9: [program:x] startsecs: m");
        assert_eq!(lines[2], "    do: do it");
        assert_eq!(lines[3], "note: priority: m");
        assert_eq!(lines.len(), 4);
    }
}

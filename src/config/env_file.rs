//! `env_file`: `KEY=VALUE` lines, read at each start (`process::env`) and, when the file exists,
//! when the config is checked or reloaded, with this one parser, so a line a start would refuse
//! is a config error first.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::sys::files::{ReadError, read_regular};

/// Largest env_file read: a file of KEY=VALUE lines has no business being bigger.
pub const ENV_FILE_CAP: u64 = 1 << 20;

/// Why an env_file cannot be used.
#[derive(Debug)]
pub enum EnvFileError {
    /// It could not be read (missing, not a regular file, too large, not permitted).
    Unreadable(PathBuf, ReadError),
    /// A line of it is not a variable a program can be given.
    Line {
        /// The file.
        path: PathBuf,
        /// Its 1-based line.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
}

impl fmt::Display for EnvFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvFileError::Unreadable(path, e) => {
                write!(f, "cannot read env_file {}: {e}", path.display())
            }
            EnvFileError::Line {
                path,
                line,
                problem,
            } => write!(f, "{}:{line}: {problem}", path.display()),
        }
    }
}

/// Reads `KEY=VALUE` lines: blank lines and `#` comments are skipped, an `export ` prefix and
/// matching outer quotes are removed. No interpolation happens. Only a regular file of at most
/// [`ENV_FILE_CAP`] bytes is read (a FIFO or `/dev/zero` is refused, never waited on).
pub fn read_env_file(path: &Path) -> Result<Vec<(String, String)>, EnvFileError> {
    let text = read_regular(path, ENV_FILE_CAP)
        .map_err(|e| EnvFileError::Unreadable(path.to_path_buf(), e))?;
    let mut out = Vec::new();
    for (n, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = String::from_utf8_lossy(raw);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |problem: String| EnvFileError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            problem,
        };
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(bad(format!("expected KEY=VALUE, found {}", shown(line))));
        };
        let key = key.trim();
        if key.is_empty() || key.contains('\0') || value.contains('\0') {
            return Err(bad(
                "not a variable a program can be given (an empty name or a NUL byte)".into(),
            ));
        }
        out.push((key.to_string(), unquote(value.trim()).to_string()));
    }
    Ok(out)
}

/// A line as a message quotes it: whole when short, cut when long.
fn shown(line: &str) -> String {
    if line.chars().count() <= 80 {
        format!("{line:?}")
    } else {
        let head: String = line.chars().take(64).collect();
        format!("{head:?}…")
    }
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_a_start_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("api.env");
        std::fs::write(&file, "# comment\nexport A=1\nB=\"two words\"\n\nC='x=y'\n").unwrap();
        let vars = read_env_file(&file).unwrap();
        assert_eq!(
            vars,
            [("A", "1"), ("B", "two words"), ("C", "x=y")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }

    #[test]
    fn bad_env_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.env");
        std::fs::write(&file, "OK=1\nnot a pair\n").unwrap();
        let err = read_env_file(&file).unwrap_err().to_string();
        assert!(
            err.ends_with("bad.env:2: expected KEY=VALUE, found \"not a pair\""),
            "{err}"
        );
        std::fs::write(&file, "A=x\0y\n").unwrap();
        let err = read_env_file(&file).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "bad.env:1: not a variable a program can be given (an empty name or a NUL byte)"
            ),
            "{err}"
        );
        assert!(
            read_env_file(&dir.path().join("missing"))
                .unwrap_err()
                .to_string()
                .contains("cannot read env_file")
        );
        let zero = read_env_file(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(zero.contains("a character device"), "{zero}");
    }
}

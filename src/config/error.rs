//! Configuration errors: each names the file, line, key, what is wrong and how to fix it.

use std::fmt;
use std::path::PathBuf;

/// One problem found in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfigError {
    /// The file it is in (or the directory, for problems of the whole set).
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Dotted key path such as `program.api.restart` (empty for file-level problems).
    pub key: String,
    /// What is wrong, as one sentence for the person who wrote the file.
    pub message: String,
    /// How to fix it, when there is a fix to suggest (printed on its own `fix:` line).
    pub fix: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(fix) = &self.fix {
            write!(f, "\n    fix: {fix}")?;
        }
        Ok(())
    }
}

/// Every problem found in one load, in file and line order, and what was worth a warning
/// meanwhile (a `*.toml` link that leads nowhere), which is said with the errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    /// The errors; never empty.
    pub errors: Vec<ConfigError>,
    /// The warnings, as a load that succeeds gives them in `Config::warnings`.
    pub warnings: Vec<String>,
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.errors.len();
        writeln!(
            f,
            "{n} configuration error{}:",
            if n == 1 { "" } else { "s" }
        )?;
        for e in &self.errors {
            writeln!(f, "error: {e}")?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

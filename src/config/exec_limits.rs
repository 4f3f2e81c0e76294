//! What the kernel lets a program be started with, checked before anything starts: a command
//! line and environment it would refuse (`E2BIG`) would make every start fail (exit 126) until
//! the restart budget is spent and the container exits. Also where an `env_file` that exists is
//! read and checked, with the parser each start uses.
//!
//! Linux refuses an `execve` when one argument or `NAME=VALUE` string, with its NUL, is over
//! `MAX_ARG_STRLEN` (32 pages: 128 KiB), or when all of them, with a pointer each, are over a
//! quarter of the stack limit (2 MiB with the usual 8 MiB; never less than 128 KiB, never more
//! than 6 MiB). ctrlinit allows a program [`EXEC_BUDGET`] of its own (its command, `env` and
//! `env_file`), which leaves half a MiB under the usual limit for ctrlinit's own environment
//! (inherited unless `inherit_env = false`) and the variables ctrlinit adds; a program whose
//! `rlimits` lower the stack gets three quarters of what that stack allows.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use nix::sys::resource::Resource;

use super::env_file::{ENV_FILE_CAP, EnvFileError, read_env_file};
use super::error::ConfigError;
use super::names::short;
use super::spec::{HealthProbe, ProgramSpec, ReadyProbe};
use crate::sys::files::ReadError;

/// The longest argument or `NAME=VALUE` string, with its NUL (Linux's `MAX_ARG_STRLEN`).
pub const MAX_ARG_STRLEN: usize = 128 << 10;

/// The most a program's command line and environment from the config may take, counting each
/// string with its NUL and the pointer the kernel stores for it.
pub const EXEC_BUDGET: usize = 3 << 19;

/// What the kernel keeps for each string besides its bytes: its NUL and a pointer to it.
const PER_STRING: usize = 1 + std::mem::size_of::<usize>();

/// Where a program's keys were written (lines in its file), for messages.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct KeyLines {
    /// The table's name (its line).
    pub table: usize,
    /// `command`.
    pub command: Option<usize>,
    /// `env`.
    pub env: Option<usize>,
    /// `env_file`.
    pub env_file: Option<usize>,
}

/// An env_file as read once per load, however many programs name it.
pub(super) enum EnvFile {
    /// Not there (yet): read at each start; `check` warns.
    Missing,
    /// Its variables.
    Vars(Vec<(String, String)>),
    /// What is wrong with it.
    Bad(EnvFileError),
}

/// The env_files read in one load, by path.
pub(super) type EnvFiles = HashMap<PathBuf, Rc<EnvFile>>;

/// Whether one argument or variable (its bytes, without the NUL) is over [`MAX_ARG_STRLEN`].
pub(super) fn too_long(len: usize) -> bool {
    len + 1 > MAX_ARG_STRLEN
}

/// The message and fix for one argument or variable that is too long.
pub(super) fn too_long_error(what: &str, len: usize) -> (String, String) {
    (
        format!(
            "{what} is {} long, over the kernel's limit of 128 KiB for one argument or variable (MAX_ARG_STRLEN): every start would fail (E2BIG)",
            size(len)
        ),
        "put data this large in a file the program reads, and pass its path instead".into(),
    )
}

/// Checks `spec`'s env_file (when it exists) and the size of its command line and environment.
pub(super) fn check(
    spec: &ProgramSpec,
    lines: &KeyLines,
    file: &Path,
    env_files: &mut EnvFiles,
    errors: &mut Vec<ConfigError>,
) {
    let table = spec.instance.as_ref().map_or(&spec.name, |i| &i.group);
    let at = |line: Option<usize>, key: &str, message: String, fix: String| ConfigError {
        file: file.to_path_buf(),
        line: Some(line.unwrap_or(lines.table)),
        key: format!("program.{}.{key}", short(table)),
        message,
        fix: Some(fix),
    };
    let from_file = match &spec.env_file {
        Some(path) => {
            let read = env_files
                .entry(path.clone())
                .or_insert_with(|| Rc::new(read(path)));
            match (&**read, env_file_problem(path, read)) {
                (_, Some((message, fix))) => {
                    errors.push(at(lines.env_file, "env_file", message, fix));
                    return;
                }
                (EnvFile::Vars(vars), None) => Some(Rc::clone(read)).filter(|_| !vars.is_empty()),
                _ => None,
            }
        }
        None => None,
    };
    let vars: &[(String, String)] = match from_file.as_deref() {
        Some(EnvFile::Vars(vars)) => vars,
        _ => &[],
    };
    let cost = Cost::of(spec, vars);
    let budget = budget(spec);
    if cost.total() > budget {
        let (line, key) = match (lines.env, lines.env_file) {
            (Some(l), _) if cost.env >= cost.env_file => (Some(l), "env"),
            (_, Some(l)) if !vars.is_empty() => (Some(l), "env_file"),
            _ => (lines.command, "command"),
        };
        let message = format!(
            "its command line and environment take {} (command {}, env {}, env_file {}; {} variables), over the {} ctrlinit allows a program: the kernel refuses larger ones (E2BIG), so every start would fail",
            size(cost.total()),
            size(cost.command),
            size(cost.env),
            size(cost.env_file),
            cost.variables,
            size(budget)
        );
        let fix = "set fewer or shorter variables and arguments: put large data in a file the program reads, and pass its path instead".into();
        errors.push(at(line, key, message, fix));
    }
}

/// Reads an env_file for the checks: one that does not exist yet is left for the start.
fn read(path: &Path) -> EnvFile {
    match read_env_file(path) {
        Ok(vars) => EnvFile::Vars(vars),
        Err(EnvFileError::Unreadable(_, ReadError::Io(e)))
            if e.kind() == std::io::ErrorKind::NotFound =>
        {
            EnvFile::Missing
        }
        Err(e) => EnvFile::Bad(e),
    }
}

/// What is wrong with an env_file as read, with the fix.
fn env_file_problem(path: &Path, read: &EnvFile) -> Option<(String, String)> {
    let vars = match read {
        EnvFile::Missing => return None,
        // Said already, where the env_file key is read.
        EnvFile::Bad(EnvFileError::Unreadable(_, ReadError::NotRegular(_))) => return None,
        EnvFile::Bad(e @ EnvFileError::Unreadable(_, ReadError::TooLarge(..))) => {
            let fix = format!(
                "an env_file is read up to {} MiB: keep only KEY=VALUE lines in it, or split it",
                ENV_FILE_CAP >> 20
            );
            return Some((e.to_string(), fix));
        }
        EnvFile::Bad(e @ EnvFileError::Unreadable(..)) => {
            return Some((e.to_string(), "make it readable by ctrlinit".into()));
        }
        EnvFile::Bad(e @ EnvFileError::Line { .. }) => {
            let fix = "write each line as KEY=VALUE (blank lines and lines starting with # are skipped), or remove the line";
            return Some((format!("env_file {e}"), fix.into()));
        }
        EnvFile::Vars(vars) => vars,
    };
    let (k, v) = vars.iter().find(|(k, v)| too_long(k.len() + 1 + v.len()))?;
    let what = format!("its variable {}", short(k));
    let (message, fix) = too_long_error(&what, k.len() + 1 + v.len());
    Some((format!("env_file {}: {message}", path.display()), fix))
}

/// What a program's strings take at exec, as the kernel counts them.
#[derive(Debug, Default)]
struct Cost {
    /// The longest of its commands (the program's, its hooks', its checks').
    command: usize,
    env: usize,
    env_file: usize,
    variables: usize,
}

impl Cost {
    fn of(spec: &ProgramSpec, from_file: &[(String, String)]) -> Cost {
        let mut commands: Vec<&[String]> = vec![&spec.command];
        commands.extend(spec.finish.as_deref());
        commands.extend(spec.pre_stop.as_deref());
        if let Some(ReadyProbe::Exec(argv)) = spec.ready.as_ref().map(|r| &r.probe) {
            commands.push(argv);
        }
        if let Some(HealthProbe::Exec(argv)) = spec.health.as_ref().and_then(|h| h.check.as_ref()) {
            commands.push(argv);
        }
        let command = commands
            .iter()
            .map(|argv| argv.iter().map(|a| a.len() + PER_STRING).sum())
            .max()
            .unwrap_or(0);
        // `env` wins over `env_file` for a name both set: each name is counted once, where its
        // value comes from.
        let mut names: HashMap<&str, ()> = HashMap::with_capacity(spec.env.len());
        let mut env = 0;
        for (k, v) in &spec.env {
            names.insert(k, ());
            env += k.len() + 1 + v.len() + PER_STRING;
        }
        let mut env_file = 0;
        let mut variables = names.len();
        for (k, v) in from_file {
            if names.insert(k, ()).is_none() {
                env_file += k.len() + 1 + v.len() + PER_STRING;
                variables += 1;
            }
        }
        Cost {
            command,
            env,
            env_file,
            variables,
        }
    }

    fn total(&self) -> usize {
        self.command + self.env + self.env_file
    }
}

/// What `spec` may take: [`EXEC_BUDGET`], or less when its `rlimits` lower the stack.
fn budget(spec: &ProgramSpec) -> usize {
    let stack = spec
        .rlimits
        .iter()
        .find(|l| l.resource == Resource::RLIMIT_STACK)
        .and_then(|l| l.value);
    match stack {
        Some(bytes) => {
            let kernel = (bytes / 4).clamp(128 << 10, 6 << 20) as usize;
            EXEC_BUDGET.min(kernel / 4 * 3)
        }
        None => EXEC_BUDGET,
    }
}

/// `1.5 MiB`, `200 KiB`, `12 B`.
fn size(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else if n >= 1 << 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Kind, RlimitSetting};

    #[test]
    fn strings_are_counted_as_the_kernel_counts_them() {
        let mut spec = ProgramSpec::new("api", vec!["/bin/x".into(), "-v".into()], Kind::Service);
        spec.env = vec![("A".into(), "1".into()), ("B".into(), "22".into())];
        let from_file = [
            ("B".to_string(), "ignored".to_string()),
            ("C".into(), "".into()),
        ];
        let cost = Cost::of(&spec, &from_file);
        assert_eq!(cost.command, 6 + 2 + 2 * PER_STRING);
        assert_eq!(cost.env, 3 + 4 + 2 * PER_STRING, "B is env's");
        assert_eq!(cost.env_file, 2 + PER_STRING, "only C comes from the file");
        assert_eq!(cost.variables, 3);
        spec.finish = Some(vec!["x".repeat(100)]);
        assert_eq!(
            Cost::of(&spec, &[]).command,
            100 + PER_STRING,
            "the longest command"
        );
    }

    #[test]
    fn a_lower_stack_limit_lowers_the_budget() {
        let mut spec = ProgramSpec::new("api", vec!["/bin/x".into()], Kind::Service);
        assert_eq!(budget(&spec), EXEC_BUDGET);
        spec.rlimits = vec![RlimitSetting {
            resource: Resource::RLIMIT_STACK,
            value: Some(256 << 10),
        }];
        // A quarter of the stack is under the kernel's floor of 128 KiB: three quarters of that.
        assert_eq!(budget(&spec), 96 << 10);
        spec.rlimits[0].value = None;
        assert_eq!(budget(&spec), EXEC_BUDGET);
        assert!(too_long(MAX_ARG_STRLEN) && !too_long(MAX_ARG_STRLEN - 1));
    }
}

//! What `%(name)s` can name in a value, and what each name stands for: known now (the program's
//! name, a fixed process number, a variable set in an `environment =`), or only at start (the
//! container's environment, the instance number, the host name).
//!
//! supervisord expands a program's settings in two rounds: those read before its processes are
//! made (`priority`, `autostart`, `user` …) know the program's and group's names, `here`, the host
//! name and the environment; those read per process (`command`, `environment`, `directory`, the
//! log settings, `process_name`) also know `process_num`, `numprocs` and the variables of the
//! program's own `environment`. A name used where it is not known is an error, there as here.

use std::cell::Cell;
use std::path::Path;

use super::expand::Value;
use super::read::absolute;
use super::text::{Piece, Text};

/// The process number of a program's processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessNum {
    /// One process: its number.
    Fixed(i64),
    /// Instances: `${INSTANCE}` (from 0; supervisord's started at `numprocs_start`).
    Instance,
}

/// The names a value may use, and their values.
pub struct Scope<'a> {
    /// `program_name`.
    pub program_name: &'a str,
    /// `group_name`.
    pub group_name: &'a str,
    /// `[supervisord] environment`, which `%(ENV_X)s` sees before the container's environment.
    pub global_env: &'a [(String, Text)],
    /// Per-process names, in the second round.
    pub process: Option<Process<'a>>,
    /// Set when `process_num` is used (outside `process_name`).
    pub process_num_used: &'a Cell<bool>,
}

/// The names of the second round.
pub struct Process<'a> {
    /// `process_num`.
    pub num: ProcessNum,
    /// `numprocs`.
    pub count: Value,
    /// The program's own `environment` (once it is read), seen first by `%(ENV_X)s`.
    pub env: &'a [(String, Text)],
}

impl Scope<'_> {
    /// What `key` stands for in a value written in `file`.
    pub fn lookup(&self, key: &str, file: &Path) -> Option<Value> {
        match key {
            "here" => {
                let abs = absolute(file);
                let dir = abs.parent().unwrap_or(Path::new("/"));
                Some(Value::Str(dir.to_string_lossy().into_owned()))
            }
            "program_name" => Some(Value::Str(self.program_name.to_string())),
            "group_name" => Some(Value::Str(self.group_name.to_string())),
            "host_node_name" => Some(Value::Text(Text(vec![Piece::Env("HOSTNAME".into())]))),
            "process_num" => {
                let p = self.process.as_ref()?;
                self.process_num_used.set(true);
                Some(match p.num {
                    ProcessNum::Fixed(n) => Value::Int(n),
                    ProcessNum::Instance => Value::Later(Piece::Env("INSTANCE".into())),
                })
            }
            "numprocs" => self.process.as_ref().map(|p| p.count.clone()),
            k => {
                let name = k.strip_prefix("ENV_")?;
                let own = self
                    .process
                    .as_ref()
                    .and_then(|p| p.env.iter().rev().find(|(n, _)| n == name));
                let global = self.global_env.iter().rev().find(|(n, _)| n == name);
                let value = match own.or(global) {
                    Some((_, t)) => t.clone(),
                    None => Text(vec![Piece::Env(name.to_string())]),
                };
                Some(Value::Text(value))
            }
        }
    }

    /// The names this scope knows, for an error's message.
    pub fn names(&self) -> String {
        let mut n = vec!["here", "program_name", "group_name", "host_node_name"];
        if self.process.is_some() {
            n.extend(["process_num", "numprocs"]);
        }
        n.push("ENV_<variable>");
        n.join(", ")
    }
}

//! What `[supervisord]` gives every program: its environment, its user and umask, its
//! `childlogdir`, and whether an event listener ended it when a program was FATAL.

use std::path::PathBuf;

use super::text::Text;

/// What `[supervisord]` gives every program.
#[derive(Debug, Clone, Default)]
pub struct Globals {
    /// `environment`, seen by `%(ENV_X)s` and added to every program's environment.
    pub env: Vec<(String, Text)>,
    /// Where `[supervisord] environment` was written.
    pub env_at: Option<(PathBuf, usize)>,
    /// `user` (not root): supervisord runs, and so runs every program, as this user.
    pub user: Option<Text>,
    /// `umask`, when set: every program's unless it sets its own.
    pub umask: Option<u32>,
    /// `childlogdir` (`[init] log_dir`), when known now.
    pub log_dir: Option<String>,
    /// The event listener that ends supervisord when a program is FATAL, if there is one: then
    /// `on_exhausted = "exit"` does what it did.
    pub exit_on_fatal: Option<String>,
}

//! The log and crash directories: created at start (private: `0750` for the default modes,
//! whatever the umask) and checked writable. One that was chosen (`[init]`, `CTRLINIT_*`) and
//! cannot be used stops the start; a default one that cannot be used (a non-root user, a
//! read-only root: tini needs nothing of either) turns off what needs it, and says so once.

use std::path::{Path, PathBuf};

use crate::config::InitSettings;
use crate::sys::files::{create_dir_with_mode, dir_mode};

/// Usable directories, after start-up checks, with the modes of what is created in them.
#[derive(Debug, Clone)]
pub(crate) struct Dirs {
    /// `None`: logs go to the console only.
    pub(crate) log_dir: Option<PathBuf>,
    /// `None`: no crash reports.
    pub(crate) crash_dir: Option<PathBuf>,
    /// What was turned off, each with why and the fix (said in ctrlinit's one start-up warning).
    pub(crate) fallbacks: Vec<String>,
    /// Mode of log files (`[init] log_mode`).
    pub(crate) log_mode: u32,
    /// Mode of crash reports and cores (`[init] crash_mode`).
    pub(crate) crash_mode: u32,
}

/// Creates the log and crash directories and checks they can be written.
pub(super) fn prepare_dirs(init: &InitSettings) -> Result<Dirs, String> {
    let mut fallbacks = Vec::new();
    let log_dir = usable_dir(
        &init.log_dir,
        "log_dir",
        init.log_mode,
        init.chosen.log_dir,
        "logs go to the console only",
        &mut fallbacks,
    )?;
    let crash_dir = usable_dir(
        &init.crash_dir,
        "crash_dir",
        init.crash_mode,
        init.chosen.crash_dir,
        "crash reports are off",
        &mut fallbacks,
    )?;
    Ok(Dirs {
        log_dir,
        crash_dir,
        fallbacks,
        log_mode: init.log_mode,
        crash_mode: init.crash_mode,
    })
}

/// `dir` when it can be used; a chosen one that cannot is an error (a mount the container was
/// meant to have is missing), a default one `None`, with what that turns `off` in `fallbacks`.
fn usable_dir(
    dir: &Path,
    key: &str,
    file_mode: u32,
    chosen: bool,
    off: &str,
    fallbacks: &mut Vec<String>,
) -> Result<Option<PathBuf>, String> {
    let env = format!("CTRLINIT_{}", key.to_uppercase());
    match check_writable_dir(dir, dir_mode(file_mode)) {
        Ok(()) => Ok(Some(dir.to_path_buf())),
        Err(e) if chosen => Err(format!(
            "cannot use [init] {key} {}: {e}\n    fix: mount a writable directory there, or set [init] {key} (or {env}) to one",
            dir.display()
        )),
        Err(e) => {
            fallbacks.push(format!(
                "{off} ({}: {e}; set {env} to a writable directory, or mount one there)",
                dir.display()
            ));
            Ok(None)
        }
    }
}

/// Creates `dir` with `mode` when missing and checks it can be written.
pub(super) fn check_writable_dir(dir: &Path, mode: u32) -> Result<(), String> {
    create_dir_with_mode(dir, mode).map_err(|e| format!("cannot create it: {e}"))?;
    nix::unistd::access(
        dir,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .map_err(|e| format!("cannot write it: {e}"))
}

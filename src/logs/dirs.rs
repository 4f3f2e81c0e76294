//! The log and crash directories: created at start (private: `0750` for the default modes,
//! whatever the umask) and checked writable, or the start stops.

use std::path::{Path, PathBuf};

use crate::config::InitSettings;
use crate::sys::files::{create_dir_with_mode, dir_mode};

/// Usable directories, after start-up checks, with the modes of what is created in them.
#[derive(Debug, Clone)]
pub(crate) struct Dirs {
    pub(crate) log_dir: PathBuf,
    pub(crate) crash_dir: PathBuf,
    /// Mode of log files (`[init] log_mode`).
    pub(crate) log_mode: u32,
    /// Mode of crash reports and cores (`[init] crash_mode`).
    pub(crate) crash_mode: u32,
}

/// Creates the log and crash directories and checks they can be written.
pub(super) fn prepare_dirs(init: &InitSettings) -> Result<Dirs, String> {
    let log_dir = usable_dir(&init.log_dir, "log_dir", init.log_mode)?;
    let crash_dir = usable_dir(&init.crash_dir, "crash_dir", init.crash_mode)?;
    Ok(Dirs {
        log_dir,
        crash_dir,
        log_mode: init.log_mode,
        crash_mode: init.crash_mode,
    })
}

/// The default too: a container whose logs and cores silently go nowhere is worse than one that
/// says at once that its mount is missing.
fn usable_dir(dir: &Path, key: &str, file_mode: u32) -> Result<PathBuf, String> {
    check_writable_dir(dir, dir_mode(file_mode)).map_err(|e| {
        let env = format!("CTRLINIT_{}", key.to_uppercase());
        format!(
            "cannot use [init] {key} {}: {e}\n    fix: mount a writable directory there, or set [init] {key} (or {env}) to one",
            dir.display()
        )
    })?;
    Ok(dir.to_path_buf())
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

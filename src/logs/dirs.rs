//! The log and crash directories: created at start and checked writable, or the start stops.

use std::path::{Path, PathBuf};

use crate::config::InitSettings;

/// Usable directories, after start-up checks.
#[derive(Debug, Clone)]
pub(crate) struct Dirs {
    pub(crate) log_dir: PathBuf,
    pub(crate) crash_dir: PathBuf,
}

/// Creates the log and crash directories and checks they can be written.
pub(super) fn prepare_dirs(init: &InitSettings) -> Result<Dirs, String> {
    let log_dir = usable_dir(&init.log_dir, "log_dir")?;
    let crash_dir = usable_dir(&init.crash_dir, "crash_dir")?;
    Ok(Dirs { log_dir, crash_dir })
}

/// The default too: a container whose logs and cores silently go nowhere is worse than one that
/// says at once that its mount is missing.
fn usable_dir(dir: &Path, key: &str) -> Result<PathBuf, String> {
    check_writable_dir(dir).map_err(|e| {
        let env = format!("CTRLINIT_{}", key.to_uppercase());
        format!(
            "cannot use [init] {key} {}: {e}\n    fix: mount a writable directory there, or set [init] {key} (or {env}) to one",
            dir.display()
        )
    })?;
    Ok(dir.to_path_buf())
}

/// Creates `dir` when missing and checks it can be written.
pub(super) fn check_writable_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create it: {e}"))?;
    nix::unistd::access(
        dir,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .map_err(|e| format!("cannot write it: {e}"))
}

//! Creating a unix socket file with its mode and group, safely in a directory others may write:
//! the socket is made, chowned and chmodded inside a private directory ctrlinit creates next to
//! the final path, then renamed into place. Its ownership and mode are never set through the
//! final path, so nobody who can write the directory can swap in a link between the creation and
//! a chown or chmod (and have ctrlinit give a root-only file away).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Longest path a unix socket can be bound at (`sun_path`, with its NUL).
pub const SUN_PATH: usize = 107;

/// What a socket is for, in messages: `the control socket`, `the notify socket`.
pub struct Placement<'a> {
    /// Its words.
    pub what: &'a str,
    /// Its final path.
    pub path: &'a Path,
    /// Its mode.
    pub mode: u32,
    /// Its group, when it is given to one.
    pub gid: Option<u32>,
}

/// The directory `path` lives in.
pub fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Binds a socket with `bind` at a private path, gives it `place`'s group and mode, and renames
/// it to `place.path`. `bind` gets the temporary path.
pub fn place<T>(
    place: &Placement<'_>,
    bind: impl FnOnce(&Path) -> std::io::Result<T>,
) -> Result<T, String> {
    let (what, path) = (place.what, place.path);
    let dir = dir_of(path);
    let private = nix::unistd::mkdtemp(&dir.join(".ctl.XXXXXX"))
        .map_err(|e| format!("cannot create {what} in {}: {e}", dir.display()))?;
    let tmp = private.join("s");
    let made = (|| {
        let longest = tmp.as_os_str().len().max(path.as_os_str().len());
        if longest > SUN_PATH {
            return Err(format!(
                "the path of {what} {} is too long for a unix socket (at most {} bytes, with room for ctrlinit's private directory)",
                path.display(),
                SUN_PATH - (tmp.as_os_str().len() - path.as_os_str().len())
            ));
        }
        let socket =
            bind(&tmp).map_err(|e| format!("cannot create {what} {}: {e}", path.display()))?;
        if let Some(gid) = place.gid {
            nix::unistd::chown(&tmp, None, Some(nix::unistd::Gid::from_raw(gid)))
                .map_err(|e| format!("cannot give {what} to group {gid}: {e}"))?;
        }
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(place.mode))
            .map_err(|e| format!("cannot set the mode of {what}: {e}"))?;
        std::fs::rename(&tmp, path)
            .map_err(|e| format!("cannot put {what} at {}: {e}", path.display()))?;
        Ok(socket)
    })();
    let _ = std::fs::remove_file(&tmp);
    let _ = std::fs::remove_dir(&private);
    made
}

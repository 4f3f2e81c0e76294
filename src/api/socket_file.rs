//! The control socket's file. A stale one (a killed init's) is replaced; a live one, or anything
//! that is not a socket, is refused. The socket is created, given its mode and group, inside a
//! private directory ctrlinit makes next to it, then renamed into place: its ownership and mode
//! are never set through the final path, so nobody who can write the socket's directory can
//! swap in a link between the creation and a chown or chmod (and turn a root-only file into
//! `root:GROUP 0660`).

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The bound socket, and what is worth a warning about where it is.
pub struct Bound {
    /// The listening socket.
    pub listener: UnixListener,
    /// Warnings for the start-up log.
    pub warnings: Vec<String>,
}

/// Longest path a unix socket can be bound at (`sun_path`, with its NUL).
const SUN_PATH: usize = 107;

/// Binds the control socket at `path`: mode 0600, or 0660 and group `socket_gid` when given.
pub fn bind(path: &Path, socket_gid: Option<u32>) -> Result<Bound, String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let _ = std::fs::create_dir_all(&dir);
    replace_stale(path)?;
    let mut warnings = Vec::new();
    if let Ok(meta) = std::fs::metadata(&dir) {
        let mode = meta.permissions().mode();
        if mode & 0o002 != 0 && mode & 0o1000 == 0 {
            warnings.push(format!(
                "the control socket's directory {} is writable by every user and not sticky: a local user could replace the socket (put it in a directory only root can write, such as /run, or make this one sticky: chmod +t)",
                dir.display()
            ));
        }
    }
    let private = nix::unistd::mkdtemp(&dir.join(".ctl.XXXXXX"))
        .map_err(|e| format!("cannot create the control socket in {}: {e}", dir.display()))?;
    let made = place(&private.join("s"), path, socket_gid);
    let _ = std::fs::remove_file(private.join("s"));
    let _ = std::fs::remove_dir(&private);
    Ok(Bound {
        listener: made?,
        warnings,
    })
}

/// Creates the socket at `tmp` (in the private directory), sets its group and mode there, and
/// renames it to `path`.
fn place(tmp: &Path, path: &Path, socket_gid: Option<u32>) -> Result<UnixListener, String> {
    let longest = tmp.as_os_str().len().max(path.as_os_str().len());
    if longest > SUN_PATH {
        return Err(format!(
            "the control socket path {} is too long for a unix socket (at most {} bytes, with room for ctrlinit's private directory)",
            path.display(),
            SUN_PATH - (tmp.as_os_str().len() - path.as_os_str().len())
        ));
    }
    let listener = UnixListener::bind(tmp)
        .map_err(|e| format!("cannot create the control socket {}: {e}", path.display()))?;
    if let Some(gid) = socket_gid {
        nix::unistd::chown(tmp, None, Some(nix::unistd::Gid::from_raw(gid)))
            .map_err(|e| format!("cannot give the control socket to group {gid}: {e}"))?;
    }
    let mode = if socket_gid.is_some() { 0o660 } else { 0o600 };
    std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot set the control socket's mode: {e}"))?;
    std::fs::rename(tmp, path)
        .map_err(|e| format!("cannot put the control socket at {}: {e}", path.display()))?;
    Ok(listener)
}

/// Removes a socket nobody listens on; refuses a live one and anything that is not a socket.
fn replace_stale(path: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    // Only a socket is ours to replace; anything else at the path was put there by someone.
    if !meta.file_type().is_socket() {
        return Err(format!(
            "{} exists and is not a socket; ctrlinit will not remove it\n    fix: remove it, or give ctrlinit another socket path (--socket PATH, CTRLINIT_SOCKET or [init] socket)",
            path.display()
        ));
    }
    if UnixStream::connect(path).is_ok() {
        return Err(format!(
            "the control socket {} is in use by a running ctrlinit\n    fix: stop it, or give this one another socket (--socket PATH or CTRLINIT_SOCKET)",
            path.display()
        ));
    }
    std::fs::remove_file(path)
        .map_err(|e| format!("cannot remove the stale socket {}: {e}", path.display()))
}

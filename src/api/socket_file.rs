//! The control socket's file. A stale one (a killed init's) is replaced; a live one, or anything
//! that is not a socket, is refused. The socket is placed with its mode and group through a
//! private directory (see [`crate::sys::socket_file`]), so nobody who can write the socket's
//! directory can turn a root-only file into `root:GROUP 0660`.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use crate::sys::socket_file::{Placement, dir_of, place};

/// The bound socket, and what is worth a warning about where it is.
pub struct Bound {
    /// The listening socket.
    pub listener: UnixListener,
    /// Warnings for the start-up log.
    pub warnings: Vec<String>,
}

/// Binds the control socket at `path`: mode 0600, or 0660 and group `socket_gid` when given.
pub fn bind(path: &Path, socket_gid: Option<u32>) -> Result<Bound, String> {
    let dir = dir_of(path);
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
    let placement = Placement {
        what: "the control socket",
        path,
        mode: if socket_gid.is_some() { 0o660 } else { 0o600 },
        gid: socket_gid,
    };
    let listener = place(&placement, |tmp| UnixListener::bind(tmp))?;
    Ok(Bound { listener, warnings })
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

/// Where the control socket goes when its default place cannot be written (a non-root user, a
/// read-only root): a directory of ctrlinit's own user, mode 0700, in `$TMPDIR` (when set),
/// `/tmp` or `/dev/shm` (a tmpfs Docker gives even a `--read-only` container). Clients of the
/// same user look there too.
pub fn fallback_candidates(uid: u32) -> Vec<std::path::PathBuf> {
    let tmpdir = std::env::var_os("TMPDIR")
        .map(std::path::PathBuf::from)
        .filter(|d| d.is_absolute());
    tmpdir
        .into_iter()
        .chain(["/tmp", "/dev/shm"].map(std::path::PathBuf::from))
        .map(|base| base.join(format!("ctrlinit-{uid}")).join("ctrlinit.sock"))
        .collect()
}

/// Whether ctrlinit can create a socket in `path`'s directory (creating the directory first).
pub fn place_writable(path: &Path) -> Result<(), String> {
    let dir = dir_of(path);
    let _ = std::fs::create_dir_all(&dir);
    nix::unistd::access(
        &dir,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .map_err(|e| format!("cannot write {}: {}", dir.display(), e.desc()))
}

/// The first fallback place whose private directory ctrlinit could make (or finds already made
/// by its own user, closed to everyone else); `None` when there is none.
pub fn private_fallback() -> Option<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = nix::unistd::geteuid().as_raw();
    fallback_candidates(uid).into_iter().find(|sock| {
        let dir = dir_of(sock);
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        // A directory someone else made (or a link) in a world-writable /tmp is not ours.
        std::fs::symlink_metadata(&dir).is_ok_and(|m| {
            m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0
        }) && place_writable(sock).is_ok()
            // Another init of this user already serves there (a shared host).
            && UnixStream::connect(sock).is_err()
    })
}

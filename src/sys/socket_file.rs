//! Creating a unix socket file with its mode and group, safely in a directory others may write.
//!
//! The socket is made in a private directory ctrlinit creates next to the final path, given its
//! group and mode there, then renamed into place. Every step after the directory's creation goes
//! through descriptors, never through a path someone else could change:
//!
//! 1. the socket's directory is opened once (`parent`); the private directory is made in it
//!    (`mkdirat`) and opened with `O_DIRECTORY | O_NOFOLLOW` (`private`);
//! 2. `fstat` on that descriptor must show a directory owned by ctrlinit's uid that no one else
//!    may enter or write (group and other bits clear). Another user who can write the socket's
//!    directory can rename the private directory away between `mkdirat` and the open, and put
//!    one of theirs in its place: theirs is owned by them (refused here), and a link is refused
//!    by `O_NOFOLLOW`. A directory of ctrlinit's uid without group or other bits is one nobody
//!    else can add a name to, so whatever is inside it from then on is ctrlinit's own;
//! 3. the socket is bound at `/proc/self/fd/N/NAME`, which the kernel resolves through the
//!    descriptor to that very directory however it has been renamed since (and the bound path
//!    is short, whatever the final path's length);
//! 4. the socket's inode is opened with `O_PATH | O_NOFOLLOW` and checked to be a socket; its
//!    group is set through that descriptor (`fchownat(AT_EMPTY_PATH)`) and its mode through
//!    `/proc/self/fd/M` (Linux has no `fchmodat(AT_SYMLINK_NOFOLLOW)`; the magic link names the
//!    inode itself, never a path);
//! 5. it is renamed from the private directory's descriptor into the parent's (`renameat`),
//!    which replaces whatever entry is at the final name and follows no link.
//!
//! No chown or chmod ever resolves a name in a directory another user can write, so no swap,
//! however timed, can make ctrlinit give away another file. No step changes the process's
//! working directory or umask: threads may run meanwhile. What others can still do in such a
//! directory is remove or replace the finished socket, so ctrlinit warns about one.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat, mkdirat};
use nix::unistd::{Gid, UnlinkatFlags, fchownat, unlinkat};

/// Longest path a unix socket can be bound at (`sun_path`, with its NUL).
pub const SUN_PATH: usize = 107;

/// The socket's name inside the private directory.
const INSIDE: &str = "s";

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

/// Binds a socket with `bind` in a private directory, gives it `place`'s group and mode, and
/// renames it to `place.path` (see the module's steps). `bind` gets the path to bind at.
pub fn place<T>(
    place: &Placement<'_>,
    bind: impl FnOnce(&Path) -> std::io::Result<T>,
) -> Result<T, String> {
    let (what, path) = (place.what, place.path);
    if path.as_os_str().len() > SUN_PATH {
        return Err(format!(
            "the path of {what} {} is too long for a unix socket (at most {SUN_PATH} bytes)",
            path.display()
        ));
    }
    let Some(name) = path.file_name() else {
        return Err(format!(
            "the path of {what} {} names no file",
            path.display()
        ));
    };
    let dir = dir_of(path);
    let parent: OwnedFd = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(&dir)
        .map_err(|e| format!("cannot open the directory of {what} {}: {e}", dir.display()))?
        .into();
    let (private_name, private) = make_private_dir(&parent, &dir, what)?;
    let made = bind_inside(place, &private, bind).and_then(|socket| {
        renameat(&private, INSIDE, &parent, name)
            .map_err(|e| format!("cannot put {what} at {}: {e}", path.display()))?;
        Ok(socket)
    });
    // What is left inside is ours (nobody else can write there); the directory's name in the
    // parent is removed only while it is still our directory. Should another user swap it in
    // the instant between the check and the removal, the removal takes their empty directory
    // in a directory they can write: nothing they could not do themselves.
    let _ = unlinkat(&private, INSIDE, UnlinkatFlags::NoRemoveDir);
    if let (Ok(ours), Ok(there)) = (
        fstat(&private),
        fstatat(
            &parent,
            private_name.as_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ),
    ) && (ours.st_dev, ours.st_ino) == (there.st_dev, there.st_ino)
    {
        let _ = unlinkat(&parent, private_name.as_str(), UnlinkatFlags::RemoveDir);
    }
    made
}

/// Creates a private directory in `parent` and opens it; refuses one that is not ctrlinit's own
/// and closed to everyone else (it was swapped between the creation and the open).
fn make_private_dir(parent: &OwnedFd, dir: &Path, what: &str) -> Result<(String, OwnedFd), String> {
    let mut tries = 0;
    let name = loop {
        let name = format!(".ctl.{:012x}", random() & 0xffff_ffff_ffff);
        match mkdirat(parent, name.as_str(), Mode::S_IRWXU) {
            Ok(()) => break name,
            Err(Errno::EEXIST) if tries < 100 => tries += 1,
            Err(e) => {
                return Err(format!(
                    "cannot create {what} in {}: cannot make a private directory there: {e}",
                    dir.display()
                ));
            }
        }
    };
    let opened = openat(
        parent,
        name.as_str(),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    );
    let tampered = || {
        format!(
            "cannot create {what} in {}: its private directory {name} was replaced by someone else while ctrlinit made it\n    fix: keep the socket in a directory only root (or ctrlinit's user) can write, such as /run, or make this one sticky (chmod +t)",
            dir.display()
        )
    };
    let private = opened.map_err(|e| match e {
        Errno::ELOOP | Errno::ENOTDIR | Errno::ENOENT => tampered(),
        e => format!(
            "cannot open the private directory {name} in {}: {e}",
            dir.display()
        ),
    })?;
    let meta = fstat(&private).map_err(|e| format!("cannot inspect {name}: {e}"))?;
    if !is_private(&meta) {
        return Err(tampered());
    }
    // Exactly 0700 whatever the umask: it must be searchable and writable by us.
    nix::sys::stat::fchmod(&private, Mode::S_IRWXU)
        .map_err(|e| format!("cannot set the mode of {name}: {e}"))?;
    Ok((name, private))
}

/// A directory of ctrlinit's effective uid that no one else may enter or write.
fn is_private(meta: &FileStat) -> bool {
    SFlag::from_bits_truncate(meta.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR
        && meta.st_uid == nix::unistd::geteuid().as_raw()
        && meta.st_mode & 0o077 == 0
}

/// Binds the socket inside `private` (through its descriptor) and gives it its group and mode.
fn bind_inside<T>(
    place: &Placement<'_>,
    private: &OwnedFd,
    bind: impl FnOnce(&Path) -> std::io::Result<T>,
) -> Result<T, String> {
    let (what, path) = (place.what, place.path);
    let at = fd_path(private).join(INSIDE);
    let socket = bind(&at).map_err(|e| {
        let hint = if fd_path(private).exists() {
            String::new()
        } else {
            " (ctrlinit binds sockets through /proc/self/fd: mount /proc)".into()
        };
        format!("cannot create {what} {}: {e}{hint}", path.display())
    })?;
    let inode = openat(
        private,
        INSIDE,
        OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open {what} just made: {e}"))?;
    let meta = fstat(&inode).map_err(|e| format!("cannot inspect {what}: {e}"))?;
    if SFlag::from_bits_truncate(meta.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
        return Err(format!("{what} just made is not a socket; not touching it"));
    }
    if let Some(gid) = place.gid {
        fchownat(
            &inode,
            "",
            None,
            Some(Gid::from_raw(gid)),
            nix::fcntl::AtFlags::AT_EMPTY_PATH,
        )
        .map_err(|e| format!("cannot give {what} to group {gid}: {e}"))?;
    }
    std::fs::set_permissions(fd_path(&inode), std::fs::Permissions::from_mode(place.mode))
        .map_err(|e| format!("cannot set the mode of {what}: {e}"))?;
    Ok(socket)
}

/// `/proc/self/fd/N`: the kernel resolves it to the descriptor's own file, whatever its name now.
fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// A number for the private directory's name. It need not be secret: a name someone took first
/// is skipped (`EEXIST`), and what is opened is verified, not trusted for its name.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};

    #[test]
    fn a_socket_is_placed_with_its_mode_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.sock");
        let placement = Placement {
            what: "the test socket",
            path: &path,
            mode: 0o640,
            gid: Some(nix::unistd::getegid().as_raw()),
        };
        let listener = place(&placement, |at| {
            assert!(at.starts_with("/proc/self/fd/"), "{}", at.display());
            std::os::unix::net::UnixListener::bind(at)
        })
        .unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.mode() & 0o7777, 0o640);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        drop(listener);
    }

    #[test]
    fn a_private_directory_of_someone_else_or_open_to_others_is_refused() {
        let mut meta = fstat(std::fs::File::open("/").unwrap()).unwrap();
        meta.st_uid = nix::unistd::geteuid().as_raw();
        meta.st_mode = libc::S_IFDIR | 0o700;
        assert!(is_private(&meta));
        meta.st_mode = libc::S_IFDIR | 0o770;
        assert!(!is_private(&meta));
        meta.st_mode = libc::S_IFDIR | 0o700;
        meta.st_uid = meta.st_uid.wrapping_add(1);
        assert!(!is_private(&meta));
        meta.st_uid = nix::unistd::geteuid().as_raw();
        meta.st_mode = libc::S_IFLNK | 0o700;
        assert!(!is_private(&meta));
    }
}

//! Bounded reads of files that input names (config files, env_files, `/etc/passwd`): only
//! regular files, only up to a cap, and never a blocking open. A FIFO, a device, a socket or a
//! directory where a file was expected is an error naming what it is; so is a file over the cap.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// It could not be opened or read.
    Io(std::io::Error),
    /// It is not a regular file; the word says what it is.
    NotRegular(&'static str),
    /// It is larger than the cap (its size, the cap).
    TooLarge(u64, u64),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::NotRegular(what) => write!(f, "it is {what}, not a regular file"),
            ReadError::TooLarge(size, cap) => write!(
                f,
                "it is {} large, over the limit of {}",
                human(*size),
                human(*cap)
            ),
        }
    }
}

/// `4.0 MiB`, `512 KiB`, `300 B`.
fn human(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else if n >= 1 << 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// What a file type is, in words (`a FIFO`), for one that is not a regular file.
pub fn kind_name(t: std::fs::FileType) -> &'static str {
    kind_of(t)
}

/// What a file type is, in words, for one that is not a regular file.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a file"
    }
}

/// Reads `path` whole, when it is a regular file of at most `cap` bytes (symbolic links are
/// followed: a Kubernetes ConfigMap or Secret is mounted as links).
pub fn read_regular(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    // Non-blocking, so opening a FIFO returns at once instead of waiting for a writer.
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular(kind_of(meta.file_type())));
    }
    if meta.len() > cap {
        return Err(ReadError::TooLarge(meta.len(), cap));
    }
    // The size may grow while it is read: the cap holds whatever the file does meanwhile.
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(ReadError::Io)?;
    if out.len() as u64 > cap {
        return Err(ReadError::TooLarge(out.len() as u64, cap));
    }
    Ok(out)
}

/// Reads `path` whole for ctrlinit to act on as root when a less trusted user can write where it
/// is (a forking daemon's pid file): never through a symbolic link (`O_NOFOLLOW`: a link the
/// daemon's user planted would have root read a file of its choosing), a regular file only, of at
/// most `cap` bytes, and owned by root or by one of `owners`. Each refusal says why.
pub fn read_trusted_regular(path: &Path, cap: u64, owners: &[u32]) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                std::io::Error::other("it is a symbolic link, which ctrlinit does not follow")
            } else {
                e
            }
        })?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other(format!(
            "it is {}, not a regular file",
            kind_of(meta.file_type())
        )));
    }
    if meta.uid() != 0 && !owners.contains(&meta.uid()) {
        return Err(std::io::Error::other(format!(
            "it is owned by uid {}, neither root nor the program's user",
            meta.uid()
        )));
    }
    let mut out = Vec::new();
    file.take(cap + 1).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(std::io::Error::other(format!(
            "it is over the limit of {}",
            human(cap)
        )));
    }
    Ok(out)
}

/// Whether whatever is at `path` (following links) is something other than a regular file:
/// the word for what it is, when it exists and is not one.
pub fn not_regular(path: &Path) -> Option<&'static str> {
    let meta = std::fs::metadata(path).ok()?;
    (!meta.file_type().is_file()).then(|| kind_of(meta.file_type()))
}

/// The directory mode that goes with a file mode: search (x) wherever read is allowed
/// (`0640` → `0750`).
pub fn dir_mode(file_mode: u32) -> u32 {
    file_mode | ((file_mode & 0o444) >> 2)
}

/// Creates `dir` and its missing parents with `mode` (exactly: not narrowed or widened by the
/// umask); a directory that exists is left as it is (a host mount keeps its owner's mode).
pub fn create_dir_with_mode(dir: &Path, mode: u32) -> std::io::Result<()> {
    if std::fs::symlink_metadata(dir).is_ok() {
        return Ok(());
    }
    if let Some(parent) = dir.parent()
        && !parent.as_os_str().is_empty()
    {
        create_dir_with_mode(parent, mode)?;
    }
    match std::fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)),
        // Made meanwhile by someone else (a parallel start): theirs, left alone.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Opens `path` for appending, never through a symbolic link: a new file is created with
/// exactly `mode`; one that exists must be a regular file owned by ctrlinit's own user (a file
/// planted by someone else is refused, not appended to).
pub fn open_private_append(path: &Path, mode: u32) -> std::io::Result<File> {
    let new = File::options()
        .append(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    match new {
        Ok(f) => {
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
            Ok(f)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let f = File::options()
                .append(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(path)
                .map_err(refused_link)?;
            verify_own_file(&f)?;
            Ok(f)
        }
        Err(e) => Err(refused_link(e)),
    }
}

/// Creates `path` as a new regular file with exactly `mode`, never through a symbolic link.
pub fn create_private_new(path: &Path, mode: u32) -> std::io::Result<File> {
    let f = File::options()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(refused_link)?;
    f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok(f)
}

/// ELOOP from O_NOFOLLOW, in words.
fn refused_link(e: std::io::Error) -> std::io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        std::io::Error::other("it is a symbolic link, which ctrlinit does not write through")
    } else {
        e
    }
}

/// An existing file ctrlinit is about to write must be a regular file of its own user.
fn verify_own_file(f: &File) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other(format!(
            "it is {}, not a regular file",
            kind_of(meta.file_type())
        )));
    }
    let own = nix::unistd::geteuid().as_raw();
    if meta.uid() != own {
        return Err(std::io::Error::other(format!(
            "it is owned by uid {}, not by ctrlinit (uid {own}); remove it or give it to ctrlinit's user",
            meta.uid()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "hello").unwrap();
        assert_eq!(read_regular(&f, 5).unwrap(), b"hello");
        assert!(matches!(
            read_regular(&f, 4),
            Err(ReadError::TooLarge(5, 4))
        ));
        assert!(matches!(
            read_regular(dir.path(), 100),
            Err(ReadError::NotRegular("a directory")) | Err(ReadError::Io(_))
        ));
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // Returns at once (no writer will ever come).
        assert!(matches!(
            read_regular(&fifo, 100),
            Err(ReadError::NotRegular("a FIFO"))
        ));
        assert!(matches!(
            read_regular(Path::new("/dev/zero"), 100),
            Err(ReadError::NotRegular("a character device"))
        ));
        assert_eq!(not_regular(&fifo), Some("a FIFO"));
        assert_eq!(not_regular(&f), None);
        assert!(read_regular(&dir.path().join("missing"), 1).is_err());
    }

    #[test]
    fn private_files_have_their_mode_whatever_the_umask_and_links_are_refused() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::empty());
        let sub = dir.path().join("a/b");
        create_dir_with_mode(&sub, dir_mode(0o640)).unwrap();
        let f = sub.join("x.log");
        drop(open_private_append(&f, 0o640).unwrap());
        nix::sys::stat::umask(old);
        assert_eq!(std::fs::metadata(&sub).unwrap().mode() & 0o777, 0o750);
        assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o777, 0o640);
        // Again: the same file, appended to.
        drop(open_private_append(&f, 0o640).unwrap());
        // A planted link is not followed.
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep").unwrap();
        let link = sub.join("y.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = open_private_append(&link, 0o640).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(create_private_new(&link, 0o640).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(dir_mode(0o600), 0o700);
    }

    #[test]
    fn trusted_files_are_never_read_through_a_link_nor_from_a_stranger() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pid");
        std::fs::write(&f, "42\n").unwrap();
        assert_eq!(read_trusted_regular(&f, 64, &[]).unwrap(), b"42\n");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let e = read_trusted_regular(&link, 64, &[]).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(read_trusted_regular(&f, 2, &[]).is_err());
        let e = read_trusted_regular(dir.path(), 64, &[]).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let mine = nix::unistd::geteuid().as_raw();
        if mine == 0 {
            nix::unistd::chown(&f, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            let e = read_trusted_regular(&f, 64, &[]).unwrap_err();
            assert!(e.to_string().contains("uid 65534"), "{e}");
            assert!(read_trusted_regular(&f, 64, &[65534]).is_ok());
        }
    }
}

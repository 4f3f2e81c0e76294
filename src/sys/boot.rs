//! Who this boot is: its id (new at each start of ctrlinit, shared by the probe endpoint's
//! `/v1/peer` and the run ledger) and the container's hostname.

use std::path::Path;
use std::sync::OnceLock;

/// This ctrlinit's boot id: the kernel's random UUID, read once (the time, if unreadable).
pub fn boot_id() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| {
        super::files::read_regular(Path::new("/proc/sys/kernel/random/uuid"), 64)
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .unwrap_or_else(|_| {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                format!("t{}", t.as_nanos())
            })
    })
}

/// The container's hostname (empty when it cannot be read).
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads at most the last `max` bytes of `path` for ctrlinit to trust: never through a symbolic
/// link, a regular file only, owned by ctrlinit's own user. `Ok(None)` when it does not exist;
/// else the bytes and whether they start at the file's beginning. Each refusal says why.
pub fn read_own_tail(path: &Path, max: u64) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let opened = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path);
    let mut file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(std::io::Error::other(
                "it is a symbolic link, which ctrlinit does not follow",
            ));
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other(format!(
            "it is {}, not a regular file",
            super::files::kind_name(meta.file_type())
        )));
    }
    let own = nix::unistd::geteuid().as_raw();
    if meta.uid() != own {
        return Err(std::io::Error::other(format!(
            "it is owned by uid {}, not by ctrlinit (uid {own})",
            meta.uid()
        )));
    }
    let start = meta.len().saturating_sub(max);
    file.seek(SeekFrom::Start(start))?;
    let mut out = Vec::new();
    file.take(max).read_to_end(&mut out)?;
    Ok(Some((out, start == 0)))
}

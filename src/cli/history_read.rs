//! Reading the run ledger for `ctrlinit history`, without a running init: the file and its
//! rotated older copies (`ledger.jsonl.N` … `.1`, then `ledger.jsonl`), oldest first.
//!
//! Every read is bounded and opened so nothing can hang or mislead it: never through a symbolic
//! link, a regular file only (a FIFO is refused, not waited on), owned by the caller or root,
//! at most [`MAX_FILE`] bytes. The file asked for that fails these is an error; a rotated copy
//! that does is skipped and counted. Lines that are not ledger records (torn, foreign, too long)
//! are skipped and counted, never fatal.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::model::ledger::{Record, parse_line};

/// The largest ledger file read (the init rotates at 10 MiB by default).
pub(super) const MAX_FILE: u64 = 256 << 20;

/// Rotated copies looked for (`.1` … `.MAX_ROTATED`).
const MAX_ROTATED: u32 = 100;

/// What was read.
#[derive(Debug, Default)]
pub(super) struct LedgerText {
    /// Every record, oldest first.
    pub records: Vec<Record>,
    /// Lines that were not records.
    pub skipped_lines: u64,
    /// Rotated files that could not be read, each with why.
    pub skipped_files: Vec<String>,
    /// The files read, oldest first.
    pub files: Vec<PathBuf>,
}

/// Reads `path` and its rotated copies; an error names the file and says why.
pub(super) fn read_ledger(path: &Path) -> Result<LedgerText, String> {
    let mut out = LedgerText::default();
    let mut rotated = Vec::new();
    for i in 1..=MAX_ROTATED {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{i}"));
        let p = PathBuf::from(p);
        if std::fs::symlink_metadata(&p).is_err() {
            break;
        }
        rotated.push(p);
    }
    for p in rotated.iter().rev() {
        match read_file(p) {
            Ok(bytes) => out.take(p, &bytes),
            Err(e) => out.skipped_files.push(format!("{}: {e}", p.display())),
        }
    }
    match read_file(path) {
        Ok(bytes) => out.take(path, &bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !out.files.is_empty() => {}
        Err(e) => {
            return Err(format!(
                "cannot read the run ledger {}: {e}",
                path.display()
            ));
        }
    }
    Ok(out)
}

impl LedgerText {
    fn take(&mut self, path: &Path, bytes: &[u8]) {
        self.files.push(path.to_path_buf());
        for line in bytes.split(|&b| b == b'\n') {
            if line.is_empty() {
                continue;
            }
            match parse_line(line) {
                Some(r) => self.records.push(r),
                None => self.skipped_lines += 1,
            }
        }
    }
}

/// One file, whole, when it may be read (see the module's comment).
fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                std::io::Error::other("it is a symbolic link, which history does not follow (give the file it points to)")
            } else {
                e
            }
        })?;
    let meta = file.metadata()?;
    let t = meta.file_type();
    if !t.is_file() {
        let what = if t.is_fifo() {
            "a FIFO"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_socket() {
            "a socket"
        } else {
            "a device"
        };
        return Err(std::io::Error::other(format!(
            "it is {what}, not a regular file"
        )));
    }
    let own = nix::unistd::geteuid().as_raw();
    if meta.uid() != own && meta.uid() != 0 {
        return Err(std::io::Error::other(format!(
            "it is owned by uid {}, neither you (uid {own}) nor root",
            meta.uid()
        )));
    }
    if meta.len() > MAX_FILE {
        return Err(std::io::Error::other(format!(
            "it is {} MiB, over the limit of {} MiB (a ledger rotates long before)",
            meta.len() >> 20,
            MAX_FILE >> 20
        )));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE + 1).read_to_end(&mut out)?;
    if out.len() as u64 > MAX_FILE {
        return Err(std::io::Error::other(
            "it grew over the limit while it was read",
        ));
    }
    Ok(out)
}

//! Reading the run ledger for `ctrlinit history`, without a running init: the file and its
//! rotated older copies (`ledger.jsonl.N` … `.1`, then `ledger.jsonl`), oldest first.
//!
//! Each file is streamed, a line at a time with a cap of [`MAX_LINE`] (the rest of a longer
//! line is read past, not kept): memory does not grow with the files, however many there are.
//!
//! Every read is bounded and opened so nothing can hang or mislead it: never through a symbolic
//! link, a regular file only (a FIFO is refused, not waited on), owned by the caller or root,
//! at most [`MAX_FILE`] bytes. The file asked for that fails these is an error; a rotated copy
//! that does is skipped and counted. Lines that are not ledger records (torn, foreign, too long)
//! are skipped and counted, never fatal.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::model::ledger::{MAX_LINE, Record, parse_line};

/// The largest ledger file read (the init rotates at 10 MiB by default).
pub(super) const MAX_FILE: u64 = 256 << 20;

/// Rotated copies looked for (`.1` … `.MAX_ROTATED`).
const MAX_ROTATED: u32 = 100;

/// What was read, besides the records themselves.
#[derive(Debug, Default)]
pub(super) struct LedgerText {
    /// Lines that were not records.
    pub skipped_lines: u64,
    /// Rotated files that could not be read, each with why.
    pub skipped_files: Vec<String>,
    /// The files read, oldest first.
    pub files: Vec<PathBuf>,
}

/// Streams the records of `path` and its rotated copies, oldest first, to `each`; an error
/// names the file and says why.
pub(super) fn read_ledger(path: &Path, mut each: impl FnMut(Record)) -> Result<LedgerText, String> {
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
        match open_file(p).and_then(|f| out.take(p, f, &mut each)) {
            Ok(()) => {}
            Err(e) => out.skipped_files.push(format!("{}: {e}", p.display())),
        }
    }
    match open_file(path).and_then(|f| out.take(path, f, &mut each)) {
        Ok(()) => {}
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
    fn take(
        &mut self,
        path: &Path,
        file: std::fs::File,
        each: &mut impl FnMut(Record),
    ) -> std::io::Result<()> {
        self.files.push(path.to_path_buf());
        let mut reader = BufReader::new(file.take(MAX_FILE + 1));
        let mut line = Vec::with_capacity(MAX_LINE + 1);
        let mut total: u64 = 0;
        while let Some(n) = next_line(&mut reader, &mut line)? {
            total += n;
            if total > MAX_FILE {
                return Err(std::io::Error::other(
                    "it grew over the limit while it was read",
                ));
            }
            if line.is_empty() {
                continue;
            }
            match parse_line(&line) {
                Some(r) => each(r),
                None => self.skipped_lines += 1,
            }
        }
        Ok(())
    }
}

/// The next line of `reader` into `line` (without its newline, at most [`MAX_LINE`] + 1 bytes
/// kept: a longer one is no record, and its rest is read past); the bytes read, `None` at the
/// end.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<u64>> {
    line.clear();
    let mut read: u64 = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((read > 0).then_some(read));
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = (MAX_LINE + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        read += used as u64;
        if done.is_some() {
            return Ok(Some(read));
        }
    }
}

/// One file, opened when it may be read (see the module's comment).
fn open_file(path: &Path) -> std::io::Result<std::fs::File> {
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
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_kept_to_its_cap_and_the_rest_read_past() {
        let long = "x".repeat(MAX_LINE * 3);
        let text = format!("a\n{long}\nb");
        let mut r = BufReader::with_capacity(64, text.as_bytes());
        let mut line = Vec::new();
        assert_eq!(next_line(&mut r, &mut line).unwrap(), Some(2));
        assert_eq!(line, b"a");
        assert_eq!(
            next_line(&mut r, &mut line).unwrap(),
            Some(long.len() as u64 + 1)
        );
        assert_eq!(line.len(), MAX_LINE + 1);
        assert_eq!(next_line(&mut r, &mut line).unwrap(), Some(1));
        assert_eq!(line, b"b");
        assert_eq!(next_line(&mut r, &mut line).unwrap(), None);
    }
}

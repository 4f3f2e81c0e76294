//! A program's log file: appended in blocks of whole lines, rotated by size at a line boundary,
//! reopened on request (SIGUSR1, for an external logrotate).
//!
//! A write error (a full disk) is reported once and the data for this sink is dropped; the
//! program and the other sinks carry on. The next successful write says the file recovered.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tracing::warn;

use super::frame::Block;
use crate::config::LogSettings;

/// One rotating log file.
#[derive(Debug)]
pub struct FileSink {
    path: PathBuf,
    file: Option<File>,
    size: u64,
    max_size: u64,
    keep: u32,
    timestamps: bool,
    /// Mode of files it creates.
    mode: u32,
    scratch: Vec<u8>,
    failing: bool,
}

impl FileSink {
    /// Opens (or creates, with `mode`) `path` for appending; see
    /// [`crate::sys::files::open_private_append`] for what it refuses.
    pub fn open(path: &Path, settings: &LogSettings, mode: u32) -> io::Result<Self> {
        let mut sink = FileSink {
            path: path.to_path_buf(),
            file: None,
            size: 0,
            max_size: settings.max_size,
            keep: settings.keep,
            timestamps: settings.timestamps,
            mode,
            scratch: Vec::new(),
            failing: false,
        };
        sink.open_file()?;
        Ok(sink)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open_file(&mut self) -> io::Result<()> {
        let file = crate::sys::files::open_private_append(&self.path, self.mode)?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }

    /// Closes and reopens the file (it may have been moved away).
    pub fn reopen(&mut self) {
        self.file = None;
        if let Err(e) = self.open_file() {
            self.report(&e);
        }
    }

    /// Writes a block, adding timestamps and the final newline as configured.
    pub fn write_block(&mut self, block: Block<'_>) {
        if !self.timestamps && block.terminated {
            self.write_lines(block.data);
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        if self.timestamps {
            let stamp = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
            for line in block.lines() {
                scratch.extend_from_slice(stamp.as_bytes());
                scratch.push(b' ');
                scratch.extend_from_slice(line);
                scratch.push(b'\n');
            }
        } else {
            scratch.extend_from_slice(block.data);
            scratch.push(b'\n');
        }
        self.write_lines(&scratch);
        self.scratch = scratch;
    }

    /// Whether the last write failed (then its line may be cut short in the file).
    pub fn is_failing(&self) -> bool {
        self.failing
    }

    /// Writes whole lines, rotating first whenever the next lines would pass `max_size`.
    fn write_lines(&mut self, mut rest: &[u8]) {
        while !rest.is_empty() {
            let room = self.max_size.saturating_sub(self.size) as usize;
            if rest.len() <= room {
                self.append(rest);
                return;
            }
            let fits = memchr::memrchr(b'\n', &rest[..room]).map(|p| p + 1);
            match fits {
                Some(n) => {
                    self.append(&rest[..n]);
                    rest = &rest[n..];
                }
                None if self.size == 0 => {
                    // One line longer than a whole file: it gets a file to itself.
                    let n = memchr::memchr(b'\n', rest).map_or(rest.len(), |p| p + 1);
                    self.append(&rest[..n]);
                    rest = &rest[n..];
                }
                None => {}
            }
            if !rest.is_empty() {
                self.rotate();
            }
        }
    }

    fn append(&mut self, data: &[u8]) {
        let result = match &mut self.file {
            Some(f) => f.write_all(data),
            None => self.open_file().and_then(|()| match &mut self.file {
                Some(f) => f.write_all(data),
                None => Ok(()),
            }),
        };
        match result {
            Ok(()) => {
                self.size += data.len() as u64;
                if self.failing {
                    self.failing = false;
                    warn!("{}: writing works again", self.path.display());
                }
            }
            Err(e) => self.report(&e),
        }
    }

    fn report(&mut self, e: &io::Error) {
        if !self.failing {
            self.failing = true;
            warn!(
                "failed to write {}: {e}; its lines are dropped until writing works again (the console still gets them)",
                self.path.display()
            );
        }
    }

    /// `x.log` → `x.log.1` → … → `x.log.<keep>`; the oldest goes.
    fn rotate(&mut self) {
        self.file = None;
        let numbered = |i: u32| {
            let mut p = self.path.clone().into_os_string();
            p.push(format!(".{i}"));
            PathBuf::from(p)
        };
        if self.keep == 0 {
            let _ = std::fs::remove_file(&self.path);
        } else {
            let _ = std::fs::remove_file(numbered(self.keep));
            for i in (1..self.keep).rev() {
                let _ = std::fs::rename(numbered(i), numbered(i + 1));
            }
            let _ = std::fs::rename(&self.path, numbered(1));
        }
        self.size = 0;
        if let Err(e) = self.open_file() {
            self.report(&e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(max_size: u64, keep: u32) -> LogSettings {
        LogSettings {
            max_size,
            keep,
            ..LogSettings::default()
        }
    }

    fn block(data: &[u8]) -> Block<'_> {
        Block {
            data,
            terminated: true,
        }
    }

    #[test]
    fn rotates_at_line_boundaries_and_keeps_n_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api.log");
        let mut sink = FileSink::open(&path, &settings(20, 2), 0o640).unwrap();
        for i in 0..10 {
            sink.write_block(block(format!("line-{i:02}\n").as_bytes()));
        }
        // 8 bytes a line, 20 bytes a file: two lines per file.
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        assert_eq!(read(&path), "line-08\nline-09\n");
        assert_eq!(read(&dir.path().join("api.log.1")), "line-06\nline-07\n");
        assert_eq!(read(&dir.path().join("api.log.2")), "line-04\nline-05\n");
        assert!(!dir.path().join("api.log.3").exists());
    }

    #[test]
    fn a_big_block_is_split_across_files_without_breaking_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut sink = FileSink::open(&path, &settings(10, 5), 0o640).unwrap();
        sink.write_block(block(b"aaaa\nbbbb\ncccc\ndddd\neeee\n"));
        let mut all = String::new();
        for p in ["w.log.2", "w.log.1", "w.log"] {
            let t = std::fs::read_to_string(dir.path().join(p)).unwrap();
            assert!(t.len() <= 10 && t.ends_with('\n'), "{p}: {t:?}");
            all.push_str(&t);
        }
        assert_eq!(all, "aaaa\nbbbb\ncccc\ndddd\neeee\n");
    }

    #[test]
    fn unterminated_lines_get_a_newline_and_timestamps_are_optional() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.log");
        let mut s = settings(1 << 20, 1);
        s.timestamps = true;
        let mut sink = FileSink::open(&path, &s, 0o640).unwrap();
        sink.write_block(Block {
            data: b"last words",
            terminated: false,
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("Z last words\n"), "{text:?}");
        assert!(text.starts_with("20"), "{text:?}");
    }

    #[test]
    fn reopen_follows_a_moved_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.log");
        let mut sink = FileSink::open(&path, &settings(1 << 20, 1), 0o640).unwrap();
        sink.write_block(block(b"before\n"));
        std::fs::rename(&path, dir.path().join("m.log.old")).unwrap();
        sink.reopen();
        sink.write_block(block(b"after\n"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "after\n");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("m.log.old")).unwrap(),
            "before\n"
        );
    }
}

//! Telling fresh evidence from stale: a file a program writes to say it is ready (or alive)
//! counts only if this run wrote it. Before a spawn ctrlinit notes the clock the kernel stamps
//! files with (`CLOCK_REALTIME_COARSE`: a file written after the spawn is never older) and what
//! the file was then (a file left by an earlier run, unchanged, never counts).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a file was at a moment: enough to see that it was rewritten or replaced since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    /// Its modification time.
    pub mtime: SystemTime,
}

/// `path`'s stamp (following links), or `None` when it does not exist or cannot be seen.
/// `stat` never opens the file, so a FIFO or device planted there cannot block it.
pub fn stamp(path: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = UNIX_EPOCH
        + Duration::from_secs(m.mtime().max(0) as u64)
        + Duration::from_nanos(m.mtime_nsec().clamp(0, 999_999_999) as u64);
    Some(FileStamp {
        dev: m.dev(),
        ino: m.ino(),
        mtime,
    })
}

/// The clock file times come from (at most a tick behind the precise clock).
pub fn coarse_now() -> SystemTime {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME_COARSE) {
        Ok(ts) => {
            UNIX_EPOCH
                + Duration::from_secs(ts.tv_sec().max(0) as u64)
                + Duration::from_nanos(ts.tv_nsec().clamp(0, 999_999_999) as u64)
        }
        Err(_) => SystemTime::now() - Duration::from_millis(20),
    }
}

/// The file as it was before a spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Baseline {
    /// When the spawn began, on the file clock.
    pub since: SystemTime,
    /// The file then, if it existed.
    pub before: Option<FileStamp>,
}

impl Baseline {
    /// Notes `path` as it is now.
    pub fn of(path: &Path) -> Baseline {
        Baseline {
            since: coarse_now(),
            before: stamp(path),
        }
    }

    /// Whether `now` (the file as it is now) was written since the baseline.
    pub fn is_fresh(&self, now: &FileStamp) -> bool {
        now.mtime >= self.since && self.before.as_ref() != Some(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_left_from_before_is_stale_and_a_rewrite_is_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready");
        std::fs::write(&path, "old").unwrap();
        // An old file: its time is before the baseline, whatever the clock's grain.
        let old = SystemTime::now() - Duration::from_secs(60);
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(old).unwrap();
        let base = Baseline::of(&path);
        assert!(
            !base.is_fresh(&stamp(&path).unwrap()),
            "left by an earlier run"
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "new").unwrap();
        assert!(
            base.is_fresh(&stamp(&path).unwrap()),
            "written after the spawn"
        );
        assert!(stamp(&dir.path().join("missing")).is_none());
    }

    #[test]
    fn a_file_that_did_not_exist_counts_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready");
        let base = Baseline::of(&path);
        assert_eq!(base.before, None);
        std::fs::write(&path, "").unwrap();
        assert!(base.is_fresh(&stamp(&path).unwrap()));
    }
}

//! What ctrlinit reads of its own cgroup: how many processes the OOM killer took in it, so that
//! a program's SIGKILL can be told for what it was.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::files::read_regular;

/// The files that may hold the OOM-kill count for the cgroup at `path` (from
/// `/proc/self/cgroup`), best first: v1's `memory.oom_control`, v2's `memory.events`, each at
/// the full path and at the mount's root (a container usually sees its own cgroup there).
fn candidates(proc_cgroup: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "memory") {
            let root = Path::new("/sys/fs/cgroup/memory");
            out.push(root.join(rel).join("memory.oom_control"));
            out.push(root.join("memory.oom_control"));
        } else if controllers.is_empty() {
            let root = Path::new("/sys/fs/cgroup");
            out.push(root.join(rel).join("memory.events"));
            out.push(root.join("memory.events"));
        }
    }
    out
}

/// The `oom_kill N` value of a `memory.oom_control` or `memory.events` text.
fn oom_kill_count(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|n| n.trim().parse().ok())
}

/// The OOM killer's count in ctrlinit's memory cgroup, its file found once (at start) and kept
/// open: every SIGKILL death of a program reads it, and in a storm of SIGKILLed restarts one
/// `pread` from offset 0 (the kernel shows the file afresh) costs far less than finding and
/// opening the file each time (two path walks).
#[derive(Debug)]
pub struct OomCounter {
    file: File,
}

impl OomCounter {
    /// The counter of ctrlinit's memory cgroup, when one can be read (no memory controller, or
    /// no access: `None`).
    pub fn open() -> Option<OomCounter> {
        let text = read_regular(Path::new("/proc/self/cgroup"), 64 << 10).ok()?;
        let text = String::from_utf8_lossy(&text);
        candidates(&text).into_iter().find_map(|path| {
            let file = File::options()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(path)
                .ok()?;
            if !file.metadata().ok()?.file_type().is_file() {
                return None;
            }
            let counter = OomCounter { file };
            counter.count().map(|_| counter)
        })
    }

    /// How many processes the OOM killer has killed in the cgroup so far.
    pub fn count(&self) -> Option<u64> {
        // A few short lines; more than this is not one of the two files.
        let mut buf = [0u8; 4096];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        oom_kill_count(&String::from_utf8_lossy(&buf[..n]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_hierarchies_are_read() {
        let v1 = "4:memory:/docker/abc\n1:cpu:/\n";
        let c = candidates(v1);
        assert_eq!(
            c[0],
            Path::new("/sys/fs/cgroup/memory/docker/abc/memory.oom_control")
        );
        assert_eq!(c[1], Path::new("/sys/fs/cgroup/memory/memory.oom_control"));
        let v2 = "0::/system.slice/x.service\n";
        assert_eq!(
            candidates(v2)[0],
            Path::new("/sys/fs/cgroup/system.slice/x.service/memory.events")
        );
        assert_eq!(
            oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"),
            Some(3)
        );
        assert_eq!(
            oom_kill_count("low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n"),
            Some(1)
        );
        assert_eq!(oom_kill_count("nothing"), None);
    }
}

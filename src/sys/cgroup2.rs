//! A cgroup v2 child group per program, where ctrlinit can make them: every process a program
//! starts stays in its group whatever it does with sessions and process groups, so stopping the
//! program stops all of it, and the group says how much memory and CPU it uses.
//!
//! ctrlinit uses the cgroup v2 hierarchy it is in (`/proc/self/cgroup`'s `0::` line, found in
//! `/proc/self/mountinfo`). When none is mounted and ctrlinit is PID 1 (so in a mount namespace
//! of its own) and allowed to mount, it mounts one privately at [`PRIVATE_MOUNT`]. Under its own
//! cgroup it makes `ctrlinit-<nonce>/`, one directory per program inside, and removes them at
//! exit. A read-only hierarchy (Docker and Kubernetes mount it so by default) means no cgroups:
//! the caller falls back to markers (see `supervisor::processes::tracking`).

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::files::read_regular;

/// Where ctrlinit mounts a cgroup v2 hierarchy of its own when none is mounted.
pub const PRIVATE_MOUNT: &str = "/run/ctrlinit/cgroup2";

/// Largest cgroup file read (`cgroup.procs` of a large group).
const READ_CAP: u64 = 1 << 20;

/// Most groups below a program's group that ctrlinit walks (to list, signal and remove them).
const MAX_SUBTREE: usize = 4096;

/// Deepest a program's sub-groups are walked.
const MAX_DEPTH: usize = 32;

/// Set once a group that exists had no `memory.current`: the memory controller is not enabled
/// below ctrlinit (and cannot be enabled later by ctrlinit), so no group has it.
static NO_MEMORY_CONTROLLER: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Reads a file of ctrlinit's own sub-tree (kernel files, in directories only ctrlinit makes):
/// open, one read (more only while the buffer fills, up to `cap` bytes), close. Three system
/// calls where [`read_regular`] makes five (its type check and end-of-file read), which `status`
/// pays for three files of every program.
fn read_own(path: &Path, cap: usize) -> Option<Vec<u8>> {
    read_own_below(None, path, cap)
}

/// The sub-tree's top, open: files below it are opened relative to it (`openat`), so reading
/// a file of each of thousands of groups walks the hierarchy's mount path once, not once a
/// file (most of what a file's open cost, measured at 3,000 programs).
#[derive(Debug)]
pub struct Top {
    fd: OwnedFd,
    path: PathBuf,
}

/// [`read_own`], opened below `top` when `path` is in it.
fn read_own_below(top: Option<&Top>, path: &Path, cap: usize) -> Option<Vec<u8>> {
    use nix::fcntl::{OFlag, openat};
    use std::io::Read;
    let below = top.and_then(|t| Some((t, path.strip_prefix(&t.path).ok()?)));
    let mut file = match below {
        Some((top, rel)) => std::fs::File::from(
            openat(
                &top.fd,
                rel,
                OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
                nix::sys::stat::Mode::empty(),
            )
            .ok()?,
        ),
        None => std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(path)
            .ok()?,
    };
    let mut out = vec![0u8; cap.min(4096)];
    let mut len = 0;
    loop {
        let n = file.read(&mut out[len..]).ok()?;
        len += n;
        // A short read of a cgroup file is its end; a full buffer may have more behind it.
        if n == 0 || len < out.len() {
            break;
        }
        if out.len() >= cap {
            return None;
        }
        out.resize((out.len() * 4).min(cap), 0);
    }
    out.truncate(len);
    Some(out)
}

/// ctrlinit's sub-tree of the cgroup v2 hierarchy.
#[derive(Debug)]
pub struct Cgroups {
    base: PathBuf,
    mounted: bool,
}

/// What a program's group has used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `memory.current`, when the memory controller is enabled for the group.
    pub memory_bytes: Option<u64>,
    /// `cpu.stat`'s `usage_usec`.
    pub cpu_usec: Option<u64>,
}

impl Cgroups {
    /// Makes ctrlinit's sub-tree (`ctrlinit-<nonce>` under its own cgroup); `may_mount`: mount a
    /// private hierarchy when none is mounted (PID 1 only).
    pub fn open(nonce: &str, may_mount: bool) -> Result<Cgroups, String> {
        let own = own_cgroup().ok_or("ctrlinit is in no cgroup v2 hierarchy")?;
        let (dir, mounted) = match find_mount(&own) {
            Some(dir) => (dir, false),
            None if may_mount => (mount_private()?.join(own.trim_start_matches('/')), true),
            None => return Err("no cgroup v2 hierarchy is mounted".into()),
        };
        let base = dir.join(format!("ctrlinit-{nonce}"));
        std::fs::create_dir(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
        // Best effort: per-program memory figures need the memory controller below us.
        for parent in [&dir, &base] {
            let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+memory");
        }
        Ok(Cgroups { base, mounted })
    }

    /// Where the sub-tree is.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The directory of program `name`'s group, created if needed.
    pub fn group(&self, name: &str) -> io::Result<PathBuf> {
        let dir = self.base.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(dir),
            Err(e) => Err(e),
        }
    }

    /// The group's directory, open for a child to be created in (`CLONE_INTO_CGROUP`).
    pub fn dir_handle(dir: &Path) -> io::Result<OwnedFd> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC | libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(dir)?;
        Ok(OwnedFd::from(f))
    }

    /// The sub-tree's top, open (see [`Top`]).
    pub fn top(&self) -> Option<Top> {
        let fd = Cgroups::dir_handle(&self.base).ok()?;
        Some(Top {
            fd,
            path: self.base.clone(),
        })
    }

    /// The processes in a group.
    pub fn pids(dir: &Path) -> Vec<i32> {
        Cgroups::pids_below(None, dir)
    }

    /// [`Cgroups::pids`], its file opened below `top`.
    pub fn pids_below(top: Option<&Top>, dir: &Path) -> Vec<i32> {
        read_own_below(top, &dir.join("cgroup.procs"), READ_CAP as usize)
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .split_ascii_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many groups are below ctrlinit's sub-tree's top (`cgroup.stat`'s `nr_descendants`):
    /// one read tells whether any program made groups of its own below its group.
    pub fn descendants(&self) -> Option<usize> {
        let b = read_own(&self.base.join("cgroup.stat"), 4096)?;
        String::from_utf8_lossy(&b)
            .lines()
            .find_map(|l| l.strip_prefix("nr_descendants ")?.trim().parse().ok())
    }

    /// The processes in a group and in every group below it (a program may make sub-groups
    /// and move processes there: a container runtime or another init does), depth first.
    pub fn subtree_pids(dir: &Path) -> Vec<i32> {
        let mut pids = Vec::new();
        for group in Cgroups::subtree(dir) {
            pids.extend(Cgroups::pids(&group));
        }
        pids
    }

    /// `dir` and every group below it, deepest first (at most [`MAX_SUBTREE`] groups, at
    /// most [`MAX_DEPTH`] deep: a program cannot make ctrlinit walk without end).
    pub fn subtree(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![(dir.to_path_buf(), 0usize, false)];
        while let Some((d, depth, seen)) = stack.pop() {
            if seen {
                out.push(d);
                continue;
            }
            stack.push((d.clone(), depth, true));
            if depth >= MAX_DEPTH {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            // The entry's type comes with the listing; cgroup files are not directories.
            for e in entries.flatten() {
                if stack.len() + out.len() >= MAX_SUBTREE {
                    break;
                }
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((e.path(), depth + 1, false));
                }
            }
        }
        out
    }

    /// Removes the (empty) groups below a group, deepest first; the group itself stays.
    pub fn remove_below(dir: &Path) {
        for group in Cgroups::subtree(dir) {
            if group != dir {
                let _ = std::fs::remove_dir(group);
            }
        }
    }

    /// Whether any process (a zombie included) is in a group (see also [`Group::populated`]).
    pub fn populated(dir: &Path) -> bool {
        match read_regular(&dir.join("cgroup.events"), 4096) {
            Ok(b) => String::from_utf8_lossy(&b)
                .lines()
                .any(|l| l.trim() == "populated 1"),
            // Gone or unreadable: fall back to the list.
            Err(_) => !Cgroups::pids(dir).is_empty(),
        }
    }

    /// Sends `signal` to every process of a group and of the groups below it.
    pub fn signal(dir: &Path, signal: libc::c_int) {
        for pid in Cgroups::subtree_pids(dir) {
            // SAFETY: kill(2) takes no pointers; a process that is gone is only an error.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }

    /// What a group has used, its files opened below `top` when given.
    pub fn usage_below(top: Option<&Top>, dir: &Path) -> Usage {
        use std::sync::atomic::Ordering::Relaxed;
        let cpu = read_own_below(top, &dir.join("cpu.stat"), 4096);
        let cpu_usec = cpu.as_ref().and_then(|b| {
            String::from_utf8_lossy(b)
                .lines()
                .find_map(|l| l.strip_prefix("usage_usec ")?.trim().parse().ok())
        });
        // Without the memory controller (it could not be enabled at start) no group has the
        // file: after the first miss in a group that exists, it is not looked for again.
        let memory_bytes = if NO_MEMORY_CONTROLLER.load(Relaxed) {
            None
        } else {
            let read = read_own_below(top, &dir.join("memory.current"), 64);
            if read.is_none() && cpu.is_some() {
                NO_MEMORY_CONTROLLER.store(true, Relaxed);
            }
            read.and_then(|b| String::from_utf8_lossy(&b).trim().parse::<u64>().ok())
        };
        Usage {
            memory_bytes,
            cpu_usec,
        }
    }

    /// Removes a group and the groups below it, deepest first (they must be empty; a
    /// populated one stays).
    pub fn remove(dir: &Path) {
        for group in Cgroups::subtree(dir) {
            let _ = std::fs::remove_dir(group);
        }
    }

    /// Removes every (empty) program group and the sub-tree, and a private mount.
    pub fn cleanup(&self) {
        if let Ok(entries) = std::fs::read_dir(&self.base) {
            // The entry's type comes with the directory listing: no lookup per group.
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    Cgroups::remove(&e.path());
                }
            }
        }
        let _ = std::fs::remove_dir(&self.base);
        if self.mounted {
            let _ = nix::mount::umount2(PRIVATE_MOUNT, nix::mount::MntFlags::MNT_DETACH);
        }
    }
}

/// A program's group. Whether it has emptied is asked at the exit of the program's main
/// process, and again while what the run left drains: its `cgroup.events` is opened at the
/// first ask and kept open only until the group is found empty, so a `pread` from offset 0
/// (which makes the kernel show the file afresh) serves the repeated asks, and a running
/// program holds no descriptor for it (at 5,000 programs one descriptor a program is what
/// decides whether they fit under a limit of 20,000).
#[derive(Debug)]
pub struct Group {
    dir: PathBuf,
    events: std::cell::RefCell<Option<std::fs::File>>,
}

impl Group {
    /// The group at `dir` (nothing opened yet).
    pub fn new(dir: PathBuf) -> Group {
        Group {
            dir,
            events: std::cell::RefCell::new(None),
        }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether any process (a zombie included) is in the group. Once it is not, its events
    /// file is closed (the next run's first ask opens it again).
    pub fn populated(&self) -> bool {
        use std::os::unix::fs::FileExt;
        let mut events = self.events.borrow_mut();
        if events.is_none() {
            *events = std::fs::File::options()
                .read(true)
                .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
                .open(self.dir.join("cgroup.events"))
                .ok();
        }
        let Some(file) = events.as_ref() else {
            return Cgroups::populated(&self.dir);
        };
        // The file is a few short lines; more than this is not cgroup.events.
        let mut buf = [0u8; 512];
        let populated = match file.read_at(&mut buf, 0) {
            Ok(n) => String::from_utf8_lossy(&buf[..n])
                .lines()
                .any(|l| l.trim() == "populated 1"),
            Err(_) => Cgroups::populated(&self.dir),
        };
        if !populated {
            *events = None;
        }
        populated
    }
}

/// ctrlinit's cgroup v2 path (`0::PATH` in `/proc/self/cgroup`).
fn own_cgroup() -> Option<String> {
    let text = read_regular(Path::new("/proc/self/cgroup"), 64 << 10).ok()?;
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
}

/// The directory of cgroup `own` in a mounted cgroup v2 hierarchy, if one is mounted and
/// writable.
fn find_mount(own: &str) -> Option<PathBuf> {
    let text = read_regular(Path::new("/proc/self/mountinfo"), 4 << 20).ok()?;
    let text = String::from_utf8_lossy(&text);
    for line in text.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPER
        let (head, tail) = line.split_once(" - ")?;
        if !tail.starts_with("cgroup2 ") {
            continue;
        }
        let fields: Vec<&str> = head.split(' ').collect();
        let (root, point, options) = (fields.get(3)?, fields.get(4)?, fields.get(5)?);
        if options.split(',').any(|o| o == "ro") {
            continue;
        }
        // The mount shows the hierarchy from `root`; ctrlinit's cgroup must be inside it.
        let Some(rel) = own.strip_prefix(root.trim_end_matches('/')) else {
            continue;
        };
        return Some(Path::new(&unescape(point)).join(rel.trim_start_matches('/')));
    }
    None
}

/// `\040` and friends in mountinfo paths (octal escapes of bytes; the rest is kept as bytes,
/// so a name that is not UTF-8 survives).
fn unescape(s: &str) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) if b[i] == b'\\' => {
                let n = d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0'));
                out.push(n as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    std::ffi::OsString::from_vec(out)
}

/// Mounts a cgroup v2 hierarchy at [`PRIVATE_MOUNT`].
fn mount_private() -> Result<PathBuf, String> {
    let point = PathBuf::from(PRIVATE_MOUNT);
    std::fs::create_dir_all(&point).map_err(|e| format!("cannot create {PRIVATE_MOUNT}: {e}"))?;
    nix::mount::mount(
        Some("cgroup2"),
        &point,
        Some("cgroup2"),
        nix::mount::MsFlags::MS_NOSUID
            | nix::mount::MsFlags::MS_NODEV
            | nix::mount::MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| format!("cannot mount cgroup2 at {PRIVATE_MOUNT}: {e}"))?;
    Ok(point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_paths_are_unescaped() {
        assert_eq!(unescape("/sys/fs/cgroup"), "/sys/fs/cgroup");
        assert_eq!(unescape("/a\\040b"), "/a b");
        // A byte escape that is not UTF-8, a backslash before a multi-byte character, a
        // backslash at the end: kept as they are, never a panic.
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(unescape("/x\\377").as_bytes(), b"/x\xff");
        assert_eq!(unescape("/\\éé"), "/\\éé");
        assert_eq!(unescape("/a\\"), "/a\\");
    }
}

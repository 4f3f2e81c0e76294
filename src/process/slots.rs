//! A few low descriptor numbers kept for what a spawn hands its child (stdio, the exec-status
//! pipe), so the child takes a copy of the bottom of ctrlinit's descriptor table only.
//!
//! Why: a child created without `CLONE_FILES` gets a copy of the whole table, and its exec then
//! closes every close-on-exec entry one by one (flush, dnotify, POSIX locks for each). With
//! thousands of programs ctrlinit holds two log pipes (and more) a program, so every start cost
//! in proportion to the programs already started: starting N programs was O(N²) (perf, 3,000
//! programs: over half the samples in `filp_close` under `execve`). Instead the child shares
//! the table (`CLONE_FILES`, the parent is suspended by `CLONE_VFORK`) and its first call is
//! `close_range(cutoff, ~0, CLOSE_RANGE_UNSHARE)`, which copies only the descriptors below
//! `cutoff` (Linux 5.9): the slots, reserved at the lowest free numbers the first time a
//! program is spawned, hold the descriptors it needs, moved there with `dup3` for the spawn and
//! put back to `/dev/null` after.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, MutexGuard};

/// How many descriptors a spawn can hand over this way: three stdio and the status pipe.
const SLOTS: usize = 4;

/// The reserved numbers (each open on `/dev/null` while unused) and the `/dev/null` put back.
struct Reserve {
    slots: Vec<OwnedFd>,
    null: OwnedFd,
}

/// `None` until the first spawn; `Some(None)` when the reservation failed (then spawns copy
/// the whole table, as before).
static RESERVE: Mutex<Option<Option<Reserve>>> = Mutex::new(None);

fn open_null() -> Option<OwnedFd> {
    nix::fcntl::open(
        "/dev/null",
        nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .ok()
}

fn reserve() -> Option<Reserve> {
    let slots = (0..SLOTS)
        .map(|_| open_null())
        .collect::<Option<Vec<_>>>()?;
    Some(Reserve {
        slots,
        null: open_null()?,
    })
}

/// Reserves the slots now, at the lowest numbers free: called at ctrlinit's start, before the
/// log thread opens a file a program, so they sit near the bottom of the table (reserved at
/// the first spawn otherwise, wherever the lowest free numbers are then). Five descriptors,
/// out of the budget's share for ctrlinit itself (`config::descriptors::OWN`).
pub fn reserve_spawn_slots() {
    drop(Lent::take());
}

/// The slots, lent to one spawn at a time; put back to `/dev/null` when dropped.
pub(super) struct Lent {
    guard: MutexGuard<'static, Option<Option<Reserve>>>,
    used: usize,
}

impl Lent {
    /// The slots, or `None` when they could not be reserved.
    pub(super) fn take() -> Option<Lent> {
        let mut guard = RESERVE.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(reserve());
        }
        guard.as_ref()?.as_ref()?;
        Some(Lent { guard, used: 0 })
    }

    fn reserve(&self) -> &Reserve {
        // `take` returned only with a reservation in place.
        self.guard
            .as_ref()
            .and_then(Option::as_ref)
            .expect("lent slots")
    }

    /// Puts (a duplicate of) `fd` at the next free slot, close-on-exec; returns its number.
    /// Stdio that is ctrlinit's own (0, 1, 2) stays where it is: it is below every slot.
    pub(super) fn place(&mut self, fd: RawFd) -> Option<RawFd> {
        if fd <= libc::STDERR_FILENO {
            return Some(fd);
        }
        let slot = self.reserve().slots.get(self.used)?.as_raw_fd();
        // SAFETY: dup3 onto a number this module owns (open on /dev/null until now).
        if unsafe { libc::dup3(fd, slot, libc::O_CLOEXEC) } < 0 {
            return None;
        }
        self.used += 1;
        Some(slot)
    }

    /// The number below which the child keeps its copy of the table (above every slot).
    pub(super) fn cutoff(&self) -> RawFd {
        let r = self.reserve();
        r.slots.iter().map(AsRawFd::as_raw_fd).max().unwrap_or(2) + 1
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let r = self.reserve();
        let null = r.null.as_raw_fd();
        for slot in &r.slots[..self.used] {
            // SAFETY: dup3 onto a number this module owns; the descriptor it held (a copy made
            // by `place`) is closed by it.
            unsafe { libc::dup3(null, slot.as_raw_fd(), libc::O_CLOEXEC) };
        }
    }
}

/// The size of the descriptor table of the process `pid` (`FDSize` in its status): what its
/// exec had to go through. For tests.
#[cfg(test)]
pub(super) fn table_size(pid: i32) -> Option<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("FDSize:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::config::RunAs;
    use crate::process::{Grouping, Launch, Output, spawn};

    /// Counts work, not time: with two thousand descriptors open in the parent, a spawned
    /// child's table is as small as a fresh one (it copied the slots and what is below them,
    /// not everything), and its stdout, handed over through a slot, still works. Before the
    /// slots the child's table held a copy of every descriptor (`FDSize` of 2048 or more),
    /// which its exec then closed one by one: each start cost in proportion to the programs.
    #[test]
    fn a_child_copies_only_the_bottom_of_the_table() {
        reserve_spawn_slots();
        let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .expect("getrlimit");
        let soft = hard.min(4096);
        nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, soft, hard)
            .expect("setrlimit");
        let held: Vec<OwnedFd> = (0..2000).map_while(|_| open_null()).collect();
        assert!(
            held.len() >= 1000,
            "could open {} descriptors only",
            held.len()
        );
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).expect("pipe");
        let argv: Vec<String> = ["/bin/sh", "-c", "echo hi; exec sleep 30"]
            .map(String::from)
            .into();
        let run_as = RunAs {
            uid: None,
            gid: None,
            groups: None,
            user_name: None,
            home: None,
        };
        let child = spawn(Launch {
            argv: &argv,
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            workdir: None,
            run_as: &run_as,
            umask: None,
            rlimits: &[],
            core_dumps: None,
            stdout: Output::Fd(w),
            stderr: Output::Null,
            extra_fds: Vec::new(),
            stdin_inherit: false,
            grouping: Grouping::Session,
            signals_as_started: false,
            cgroup: None,
        })
        .expect("spawn");
        let size = table_size(child.pid);
        let mut out = [0u8; 3];
        let got = std::fs::File::from(r).read_exact(&mut out);
        let pid = nix::unistd::Pid::from_raw(child.pid);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(pid, None);
        drop(held);
        assert!(
            got.is_ok() && &out == b"hi\n",
            "stdout through a slot: {got:?} {out:?}"
        );
        let size = size.expect("the child's FDSize");
        assert!(
            size < 1024,
            "the child's table has {size} entries: it copied the parent's"
        );
    }
}

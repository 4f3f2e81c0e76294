//! Creating a child directly inside a cgroup: `clone3` with `CLONE_INTO_CGROUP` (Linux 5.7).
//!
//! Moving a running process into a cgroup (a write to `cgroup.procs`) takes the kernel's
//! cgroup-wide write lock, which waits for an RCU grace period: about 13 ms on the reference
//! machine, on every start, with ctrlinit suspended meanwhile. A child created inside its
//! cgroup takes only the read side, like any fork, so a start costs what it did without cgroups.
//!
//! `clone3` has no C-library wrapper, and a raw system call cannot share the caller's memory and
//! stack (`CLONE_VM`) safely: the child would return into frames it does not own. So the child
//! gets a copy of ctrlinit's memory, as with fork, and `CLONE_VFORK` still suspends the caller
//! until the child has exec'd or exited, so spawning knows at once whether the program runs.
//! The copy costs a few page tables of a small process; the child then runs `run_child`, whose
//! only calls are async-signal-safe, as after any fork of a multi-threaded process.

use std::os::fd::{AsRawFd, OwnedFd};

use super::child::{ChildPlan, run_child};

/// `CLONE_INTO_CGROUP`: the `cgroup` field of [`CloneArgs`] names the child's cgroup.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// The kernel's `struct clone_args` (version 2, with `cgroup`): every field a 64-bit word.
#[repr(C, align(8))]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `clone3(CLONE_VFORK | CLONE_INTO_CGROUP)` into the cgroup whose directory is open at
/// `cgroup`: the child's pid in the parent, 0 in the child.
///
/// # Safety
/// In the child, the caller may only make async-signal-safe calls and must exec or exit: it is
/// a copy of a multi-threaded process whose other threads (and any lock they held) are gone.
unsafe fn clone3_into(cgroup: libc::c_int) -> std::io::Result<i32> {
    let args = CloneArgs {
        flags: libc::CLONE_VFORK as u64 | CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup as u64,
        ..CloneArgs::default()
    };
    // SAFETY: the kernel reads `args` (valid, of the size given) and writes nothing through it;
    // no stack is given, so the child returns from this call on its copy of our stack, exactly
    // as from fork(2).
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if pid < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(pid as i32)
    }
}

/// Creates the child inside the cgroup whose directory is open at `cgroup` and runs `plan` in
/// it; returns once it exec'd or exited (see the module's comment).
pub(super) fn clone_into(plan: &ChildPlan<'_>, cgroup: libc::c_int) -> std::io::Result<i32> {
    // SAFETY: the child branch below only calls `run_child`, which makes async-signal-safe
    // system calls on `plan` (valid in the child's copy of our memory) and execs or exits.
    match unsafe { clone3_into(cgroup) }? {
        // SAFETY: a freshly created child, see `run_child`; never returns.
        0 => unsafe { run_child(plan) },
        pid => Ok(pid),
    }
}

/// Whether this kernel creates children inside a cgroup (`clone3` with `CLONE_INTO_CGROUP`,
/// Linux 5.7), tried once with a child that exits at once in the cgroup whose directory is
/// `dir`; it is left for ctrlinit's reaper.
pub fn can_clone_into(dir: &OwnedFd) -> Result<(), std::io::Error> {
    // SAFETY: the child calls only _exit, which is async-signal-safe.
    match unsafe { clone3_into(dir.as_raw_fd()) }? {
        // SAFETY: _exit ends the child without running anything of ours.
        0 => unsafe { libc::_exit(0) },
        _ => Ok(()),
    }
}

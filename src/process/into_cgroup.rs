//! Creating a child directly inside a cgroup: `clone3` with `CLONE_INTO_CGROUP` (Linux 5.7).
//!
//! Moving a running process into a cgroup (a write to `cgroup.procs`) takes the kernel's
//! cgroup-wide write lock, which waits for an RCU grace period: about 13 ms on the reference
//! machine, on every start, with ctrlinit suspended meanwhile. A child created inside its
//! cgroup takes only the read side, like any fork, so a start costs what it did without cgroups.
//!
//! `clone3` has no C-library wrapper. On x86-64 the child is created as `posix_spawn` creates
//! one (`CLONE_VM | CLONE_VFORK`: no page table copied), with the few instructions a wrapper has
//! to start it on a stack of its own: a raw system call cannot, since the child would return
//! into frames it does not own. Elsewhere the child is a fork-like copy (`CLONE_VFORK` without
//! `CLONE_VM`), which costs the copy and the copy-on-write faults that follow (about a quarter
//! of a restart), and otherwise behaves the same. Either way the caller is suspended until the
//! child has exec'd or exited, and the child runs `run_child`, whose only calls are
//! async-signal-safe.

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
unsafe fn clone3_into(cgroup: libc::c_int, table: libc::c_int) -> std::io::Result<i32> {
    let args = CloneArgs {
        flags: libc::CLONE_VFORK as u64 | CLONE_INTO_CGROUP | table as u64,
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
#[cfg(target_arch = "x86_64")]
pub(super) fn clone_into(plan: &ChildPlan<'_>, cgroup: libc::c_int) -> std::io::Result<i32> {
    extern "C" fn entry(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `&ChildPlan` passed below; the parent is suspended (CLONE_VFORK)
        // and keeps it alive until this child has exec'd or exited.
        let plan = unsafe { &*(arg as *const ChildPlan<'_>) };
        // SAFETY: a freshly cloned child, see `run_child`; never returns.
        unsafe { run_child(plan) }
    }
    super::child::with_child_stack(|stack| clone3_on(plan, cgroup, entry, stack))
}

/// [`clone_into`]'s clone3, the child on `stack`.
#[cfg(target_arch = "x86_64")]
fn clone3_on(
    plan: &ChildPlan<'_>,
    cgroup: libc::c_int,
    entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    stack: &mut [u8],
) -> std::io::Result<i32> {
    // The kernel starts the child at the top of [stack, stack + size): keep both 16-aligned, so
    // the `call` below leaves the stack as the ABI expects at a function's entry.
    let base = (stack.as_mut_ptr() as u64 + 15) & !15;
    let size = (stack.len() as u64 - 16) & !15;
    let args = CloneArgs {
        flags: libc::CLONE_VM as u64
            | libc::CLONE_VFORK as u64
            | CLONE_INTO_CGROUP
            | plan.table_flag() as u64,
        exit_signal: libc::SIGCHLD as u64,
        stack: base,
        stack_size: size,
        cgroup: cgroup as u64,
        ..CloneArgs::default()
    };
    let ret: i64;
    // SAFETY: clone3 reads `args` (valid, of the size given). In the parent it returns the
    // child's pid (or -errno) and the branch is skipped: nothing of ours is touched, no stack
    // is used. The child shares our memory and starts at the next instruction on its own stack
    // (`stack`, alive until this thread resumes, which CLONE_VFORK holds off until the child
    // exec'd or exited) with our registers but rax; it calls `entry(plan)`, which never returns
    // (`ud2` would stop it if it did). It may clobber this thread's errno (same TLS), which
    // nothing reads across this call.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r13",
            "call r12",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone3 => ret,
            in("rdi") &args as *const CloneArgs,
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r12") entry as extern "C" fn(*mut libc::c_void) -> libc::c_int,
            in("r13") plan as *const ChildPlan<'_> as *mut libc::c_void,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if ret < 0 {
        Err(std::io::Error::from_raw_os_error(-ret as i32))
    } else {
        Ok(ret as i32)
    }
}

/// Creates the child inside the cgroup whose directory is open at `cgroup` and runs `plan` in
/// it; returns once it exec'd or exited (see the module's comment).
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn clone_into(plan: &ChildPlan<'_>, cgroup: libc::c_int) -> std::io::Result<i32> {
    // SAFETY: the child branch below only calls `run_child`, which makes async-signal-safe
    // system calls on `plan` (valid in the child's copy of our memory) and execs or exits.
    match unsafe { clone3_into(cgroup, plan.table_flag()) }? {
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
    match unsafe { clone3_into(dir.as_raw_fd(), 0) }? {
        // SAFETY: _exit ends the child without running anything of ours.
        0 => unsafe { libc::_exit(0) },
        _ => Ok(()),
    }
}

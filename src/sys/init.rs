//! Taking the init role: PID 1 or child subreaper, inherited descriptors, stray processes.

use std::io;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, getpid};

/// How ctrlinit came to own orphans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// PID 1 of its PID namespace: the kernel gives it every orphan.
    Pid1,
    /// Not PID 1: registered as child subreaper, so orphans of its descendants come to it.
    Subreaper,
}

/// Becomes the reaper of orphans: nothing to do as PID 1, PR_SET_CHILD_SUBREAPER otherwise.
pub fn take_reaper_role() -> io::Result<Role> {
    if getpid().as_raw() == 1 {
        return Ok(Role::Pid1);
    }
    nix::sys::prctl::set_child_subreaper(true)?;
    Ok(Role::Subreaper)
}

/// Marks every descriptor above stderr close-on-exec, so nothing ctrlinit inherited (from
/// `docker run`, a shell, a test harness) leaks into the programs it starts.
pub fn cloexec_inherited_fds() {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors; it takes
    // no pointers. Failure (kernel < 5.11) is harmless: descriptors ctrlinit opens itself are
    // always O_CLOEXEC.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
        );
    }
}

/// Sends `signal` to every process ctrlinit may still own: as PID 1, every process of the
/// namespace (`kill(-1)`); as subreaper, its direct children (orphans were reparented to it).
pub fn signal_strays(role: Role, signal: Signal) {
    match role {
        Role::Pid1 => {
            let _ = kill(Pid::from_raw(-1), signal);
        }
        Role::Subreaper => {
            for pid in children() {
                let _ = kill(Pid::from_raw(pid), signal);
            }
        }
    }
}

/// Direct children of ctrlinit, from `/proc/self/task/*/children`.
pub fn children() -> Vec<i32> {
    super::procs::children_of(std::process::id() as i32)
}

/// Sends `signal` to process group `pgid`, then SIGCONT so a stopped process can act on it.
/// A group that no longer exists is not an error.
pub fn signal_group(pgid: i32, signal: Signal) {
    let group = Pid::from_raw(-pgid);
    let _ = kill(group, signal);
    if signal != Signal::SIGKILL && signal != Signal::SIGCONT {
        let _ = kill(group, Signal::SIGCONT);
    }
}

/// Stops ctrlinit itself (SIGSTOP), as a shell job is stopped: its parent sees it stopped, and
/// SIGCONT resumes it. Only meaningful as a subreaper: the kernel drops a SIGSTOP that PID 1
/// sends itself.
pub fn stop_self() {
    let _ = kill(getpid(), Signal::SIGSTOP);
}

static ORIGINAL_CWD: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Notes the working directory ctrlinit was started in, then moves ctrlinit itself to `/`, as
/// dumb-init does: an init that runs for the container's life must not keep the directory it
/// was started in busy (a mount under it could not be unmounted, a deleted one stays allocated).
/// Relative paths ctrlinit uses go through [`resolve`]; programs start in the original directory
/// (see `process::spawn`). Call once, at start, before anything reads a relative path.
pub fn leave_working_directory() {
    if let Ok(dir) = std::env::current_dir() {
        let _ = ORIGINAL_CWD.set(dir);
    }
    let _ = nix::unistd::chdir("/");
}

/// The directory ctrlinit was started in, once [`leave_working_directory`] ran.
pub fn original_cwd() -> Option<&'static std::path::Path> {
    ORIGINAL_CWD.get().map(|p| p.as_path())
}

/// `path` as it read in the directory ctrlinit was started in: a relative path joined to it,
/// anything else unchanged (also when ctrlinit never left it).
pub fn resolve(path: impl AsRef<std::path::Path>) -> std::path::PathBuf {
    let path = path.as_ref();
    match original_cwd() {
        Some(base) if path.is_relative() && !path.as_os_str().is_empty() => base.join(path),
        _ => path.to_path_buf(),
    }
}

/// Whether process group `pgid` has any member left (zombies count until reaped).
pub fn group_exists(pgid: i32) -> bool {
    !matches!(kill(Pid::from_raw(-pgid), None), Err(Errno::ESRCH))
}

/// Keeps glibc's allocator to two arenas: the supervisor's thread keeps the main arena to
/// itself (so it never waits for the log thread's allocator lock on a restart), and the log and
/// console threads share a second one instead of getting one each (each arena costs pages at
/// idle for no gain).
pub fn two_malloc_arenas() {
    // SAFETY: mallopt only sets an allocator parameter; called before any thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Opens `/dev/null` on any of fds 0, 1, 2 that is closed (an init may be started that way), so
/// no pipe or socket of ctrlinit's ever lands on a standard descriptor number.
pub fn ensure_stdio_open() {
    for fd in 0..3 {
        if nix::fcntl::fcntl(probe_fd(fd), nix::fcntl::FcntlArg::F_GETFD).is_err() {
            // open returns the lowest free descriptor: this one.
            let _ = nix::fcntl::open(
                "/dev/null",
                nix::fcntl::OFlag::O_RDWR,
                nix::sys::stat::Mode::empty(),
            )
            .map(std::mem::forget);
        }
    }
}

fn probe_fd(fd: i32) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: only used with F_GETFD, which is harmless on a closed descriptor (EBADF).
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

/// Lowers the calling thread's scheduling priority a little. The log and console threads call
/// it: when the CPUs are contended, a restart (fork, exec) and the supervisor's decisions go
/// first, and output waits (programs block on their pipes, which is the back-pressure the log
/// path is built around anyway).
pub fn lower_thread_priority() {
    // SAFETY: gettid and setpriority take plain integers; on Linux PRIO_PROCESS with a thread id
    // sets that thread's nice value only.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 5);
    }
}

/// What ctrlinit changed of its own process at start, so that programs get the original back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inherited {
    /// The `RLIMIT_NOFILE` soft limit ctrlinit was started with, when it raised its own.
    pub nofile_soft: Option<u64>,
    /// The `oom_score_adj` ctrlinit was started with, when it lowered its own.
    pub oom_score_adj: Option<i32>,
}

static INHERITED: std::sync::OnceLock<Inherited> = std::sync::OnceLock::new();

/// What [`harden_self`] changed (nothing, before it ran).
pub fn inherited() -> Inherited {
    INHERITED.get().copied().unwrap_or_default()
}

/// PID 1 must outlast what it supervises: its descriptor limit is raised to the hard limit
/// (thousands of pipes and connections must not fail it), and its OOM score is set to -1000
/// when allowed (the kernel then kills a program, never the init). Programs get the original
/// values back before exec (see `process::child`). Call once, at start.
pub fn harden_self() -> Inherited {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let mut changed = Inherited::default();
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
        && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok()
    {
        changed.nofile_soft = Some(soft);
    }
    let path = std::path::Path::new("/proc/self/oom_score_adj");
    let old = super::files::read_regular(path, 64)
        .ok()
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<i32>().ok());
    if let Some(old) = old
        && old != -1000
        && std::fs::write(path, "-1000").is_ok()
    {
        changed.oom_score_adj = Some(old);
    }
    let _ = INHERITED.set(changed);
    changed
}

//! The one place that creates processes.
//!
//! Everything the child needs (argv, environment, ids, limits) is built before the fork; the
//! child then only makes async-signal-safe system calls: `setsid`, signal dispositions back to
//! default, `umask`, `setrlimit`, `setgroups` → `setgid` → `setuid` (that order, or root's
//! supplementary groups survive), close-on-exec for every inherited descriptor, and last an empty
//! signal mask. std's `Command` does the fork and the stdio plumbing, and reports exec errors
//! through a close-on-exec pipe, so a missing binary is known before `spawn` returns.
//!
//! The returned child is never waited for through std: ctrlinit's own `waitpid(-1)` loop reaps it.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::config::{RlimitSetting, RunAs};
use crate::process::Exit;

/// Where a child's stdout or stderr goes.
#[derive(Debug)]
pub enum Output {
    /// ctrlinit's own descriptor.
    Inherit,
    /// A pipe (or any descriptor) ctrlinit holds the other end of.
    Fd(OwnedFd),
    /// `/dev/null`.
    Null,
}

impl Output {
    fn into_stdio(self) -> Stdio {
        match self {
            Output::Inherit => Stdio::inherit(),
            Output::Fd(fd) => Stdio::from(fd),
            Output::Null => Stdio::null(),
        }
    }
}

/// Everything needed to start one process.
#[derive(Debug)]
pub struct Launch<'a> {
    /// argv; `argv[0]` is looked up in the child's PATH when it has no `/`.
    pub argv: &'a [String],
    /// The complete environment.
    pub env: Vec<(OsString, OsString)>,
    /// Working directory.
    pub workdir: Option<&'a Path>,
    /// Identity.
    pub run_as: &'a RunAs,
    /// File mode creation mask.
    pub umask: Option<u32>,
    /// Resource limits.
    pub rlimits: &'a [RlimitSetting],
    /// `Some(true)`: RLIMIT_CORE unlimited; `Some(false)`: 0; `None`: inherited.
    pub core_dumps: Option<bool>,
    /// stdout.
    pub stdout: Output,
    /// stderr.
    pub stderr: Output,
}

/// Why a spawn failed, with the status a shell would give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnError {
    /// 127 (not found) or 126 (not executable or not permitted).
    pub exit: Exit,
    /// The OS error.
    pub message: String,
}

/// A limit as the child applies it: resource, soft, hard.
type RawLimit = (libc::__rlimit_resource_t, libc::rlim_t, libc::rlim_t);

/// Starts a process in its own session and process group; returns its pid.
pub fn spawn(launch: Launch<'_>) -> Result<i32, SpawnError> {
    let mut cmd = Command::new(&launch.argv[0]);
    cmd.args(&launch.argv[1..])
        .env_clear()
        .envs(launch.env)
        .stdin(Stdio::null())
        .stdout(launch.stdout.into_stdio())
        .stderr(launch.stderr.into_stdio());
    if let Some(dir) = launch.workdir {
        cmd.current_dir(dir);
    }
    let limits = raw_limits(launch.rlimits, launch.core_dumps);
    let umask = launch.umask;
    let rtmax = libc::SIGRTMAX();
    // Only root can set supplementary groups; a non-root ctrlinit may only run programs as
    // itself (the config check enforces that), so it keeps its groups.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let groups: Option<Vec<libc::gid_t>> = launch.run_as.groups.clone().filter(|_| root);
    let gid = launch.run_as.gid;
    let uid = launch.run_as.uid;
    let child_setup = move || -> io::Result<()> {
        // SAFETY (for every call below): this runs in the forked child between fork and exec,
        // where only async-signal-safe functions may be called. Each call is a plain system
        // call wrapper on data built before the fork; nothing allocates or takes a lock.
        unsafe {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            reset_signal_dispositions(rtmax);
            if let Some(mask) = umask {
                libc::umask(mask as libc::mode_t);
            }
            for &(resource, soft, hard) in &limits {
                let lim = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                if libc::setrlimit(resource, &lim) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(groups) = &groups
                && libc::setgroups(groups.len(), groups.as_ptr()) < 0
            {
                return Err(io::Error::last_os_error());
            }
            if let Some(gid) = gid
                && libc::setgid(gid) < 0
            {
                return Err(io::Error::last_os_error());
            }
            if let Some(uid) = uid
                && libc::setuid(uid) < 0
            {
                return Err(io::Error::last_os_error());
            }
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
            );
            // ctrlinit blocks the signals it reads through its signalfd; the program must start
            // with an empty mask (std does not promise to clear it). Dispositions are already
            // default, so a signal that arrives from here on acts as it would after exec.
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            if libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
                return Err(io::Error::other("failed to clear the signal mask"));
            }
        }
        Ok(())
    };
    // SAFETY: `child_setup` only makes async-signal-safe calls (see above), as `pre_exec`
    // requires of code that runs after fork in a possibly multi-threaded process.
    unsafe {
        cmd.pre_exec(child_setup);
    }
    match cmd.spawn() {
        Ok(child) => Ok(child.id() as i32),
        Err(e) => Err(spawn_error(&launch.argv[0], e)),
    }
}

/// Resets every signal's disposition to default: ctrlinit installs no handlers, but it may have
/// inherited ignored signals (SIGPIPE from Rust's runtime, SIGHUP from nohup, glibc's internal
/// real-time signals from a parent) that must not leak into programs.
///
/// The raw `rt_sigaction` system call is used because glibc's wrapper refuses the two real-time
/// signals it reserves, which a parent may still have left ignored.
///
/// # Safety
/// Call only in a forked child before exec (a system call, async-signal-safe).
unsafe fn reset_signal_dispositions(rtmax: libc::c_int) {
    // An all-zero kernel sigaction is SIG_DFL with no flags and an empty mask, whatever the
    // architecture's field order; 32 bytes cover every layout.
    let default_action = [0u64; 4];
    for sig in 1..=rtmax.max(64) {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: the kernel reads `default_action` (valid for its size) and writes nothing
        // (null old-action pointer); errors for invalid numbers are ignored on purpose.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                default_action.as_ptr(),
                std::ptr::null_mut::<u64>(),
                8usize,
            );
        }
    }
}

fn raw_limits(rlimits: &[RlimitSetting], core_dumps: Option<bool>) -> Vec<RawLimit> {
    let mut out: Vec<RawLimit> = rlimits
        .iter()
        .map(|r| {
            let v = r.value.unwrap_or(libc::RLIM_INFINITY);
            (r.resource as libc::__rlimit_resource_t, v, v)
        })
        .collect();
    if let Some(on) = core_dumps {
        // Keep the hard limit where it is (a non-root ctrlinit cannot raise it); root lifts it.
        let mut current = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we pass and nothing else.
        let hard = if unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut current) } == 0 {
            current.rlim_max
        } else {
            0
        };
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let limit = match (on, root) {
            (true, true) => (libc::RLIM_INFINITY, libc::RLIM_INFINITY),
            (true, false) => (hard, hard),
            (false, _) => (0, hard),
        };
        out.push((libc::RLIMIT_CORE, limit.0, limit.1));
    }
    out
}

fn spawn_error(program: &str, e: io::Error) -> SpawnError {
    let code = match e.kind() {
        io::ErrorKind::NotFound => 127,
        _ => 126,
    };
    SpawnError {
        exit: Exit::Code(code),
        message: format!("{program}: {e}"),
    }
}

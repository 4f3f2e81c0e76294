//! The one place that creates processes.
//!
//! Everything the child needs (argv, environment, the executable's candidate paths, ids, limits,
//! descriptors) is built before the child exists; the child then only makes async-signal-safe
//! system calls (see [`child`](super::child)). The child is created as posix_spawn creates one,
//! sharing the address space until its exec (no page-table copy, no copy-on-write faults), so
//! `spawn` returns once the child has exec'd or given up: a few system calls. A child that cannot
//! exec writes the errno to a close-on-exec pipe before it exits with 127 (not found) or 126 (not
//! executable), like a shell; the parent resumes only after that exit or a successful exec (that
//! is what CLONE_VFORK waits for), so `spawn` knows at once whether the program runs, and a
//! failed exec is a [`SpawnError`], never a process that seemed to start.
//!
//! The child is reaped by ctrlinit's own `waitpid(-1)` loop, like every other process.

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::fcntl::OFlag;

use super::child::{ChildPlan, Grouping, RawLimit, Step, exec_failure_status, run_child};
use super::slots::Lent;
use crate::config::{RlimitSetting, RunAs};
use crate::model::Exit;

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

/// Everything needed to start one process.
#[derive(Debug)]
pub struct Launch<'a> {
    /// argv; `argv[0]` is looked up in the child's PATH when it has no `/`.
    pub argv: &'a [String],
    /// The complete environment.
    pub env: Vec<(OsString, OsString)>,
    /// Working directory.
    pub workdir: Option<&'a Path>,
    /// Who it runs as: user, group, supplementary groups.
    pub run_as: &'a RunAs,
    /// File mode creation mask.
    pub umask: Option<u32>,
    /// Resource limits.
    pub rlimits: &'a [RlimitSetting],
    /// `Some(true)`: RLIMIT_CORE unlimited; `Some(false)`: 0; `None`: inherited.
    pub core_dumps: Option<bool>,
    /// Where its stdout goes.
    pub stdout: Output,
    /// Where its stderr goes.
    pub stderr: Output,
    /// Descriptors it gets beyond stdio, at the number given (a readiness notification pipe).
    pub extra_fds: Vec<(i32, OwnedFd)>,
    /// stdin is ctrlinit's own (else `/dev/null`).
    pub stdin_inherit: bool,
    /// A session of its own, or a process group in ctrlinit's session.
    pub grouping: Grouping,
    /// It starts with the signal mask and ignored signals ctrlinit was started with (the `--`
    /// command, as tini runs its child), else with none blocked and none ignored.
    pub signals_as_started: bool,
    /// The directory of the cgroup it is created in (`clone3` with `CLONE_INTO_CGROUP`: see
    /// `into_cgroup`), or none: ctrlinit's own.
    pub cgroup: Option<OwnedFd>,
}

/// Why a program did not start, with the status a shell would give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnError {
    /// 127 (not found) or 126 (not executable, or the setup failed).
    pub exit: Exit,
    /// The OS error.
    pub message: String,
    /// Whether the command itself could not be executed (a missing or non-executable file), as
    /// opposed to a setup step (pipes, the working directory, the env_file) failing.
    pub exec_failed: bool,
}

/// A started child.
#[derive(Debug)]
pub struct Spawned {
    /// Its pid (also its process group and session).
    pub pid: i32,
}

/// Starts a process in its own session and process group.
pub fn spawn(launch: Launch<'_>) -> Result<Spawned, SpawnError> {
    let program: &str = &launch.argv[0];
    let strings = CStrings::of(&launch)?;
    let stdio = Stdio::open(program, launch.stdin_inherit, launch.stdout, launch.stderr)?;
    let started_with = launch
        .signals_as_started
        .then(crate::sys::signals::started_with);
    // Non-blocking: once the child has exec'd, its copy of the write end may still be open for a
    // moment (close-on-exec runs late in exec), and reading must not wait for that.
    let (status_r, status_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
        .map_err(|e| setup_error(program, "cannot create a pipe", &e))?;
    // The child puts extra descriptors at fixed numbers: nothing it still needs (the status
    // pipe, another extra descriptor's source) may sit at one of those numbers.
    let floor = launch
        .extra_fds
        .iter()
        .map(|(t, _)| *t)
        .max()
        .map_or(0, |t| t + 1);
    let status_w =
        above(status_w, floor).map_err(|e| setup_error(program, "cannot create a pipe", &e))?;
    let extra_fds: Vec<(i32, OwnedFd)> = launch
        .extra_fds
        .into_iter()
        .map(|(t, fd)| above(fd, floor).map(|fd| (t, fd)))
        .collect::<nix::Result<_>>()
        .map_err(|e| setup_error(program, "cannot pass a descriptor", &e))?;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let inherited = crate::sys::init::inherited();
    let oom = inherited.oom_score_adj.map(|v| v.to_string());
    let extra: Vec<(libc::c_int, libc::c_int)> = extra_fds
        .iter()
        .map(|(target, fd)| (fd.as_raw_fd(), *target))
        .collect();
    let (lent, child_stdio, child_status, own_table_below) =
        child_descriptors(extra.is_empty(), stdio.raw(), status_w.as_raw_fd());
    let argv_ptrs = null_terminated(&strings.argv);
    let envp_ptrs = null_terminated(&strings.envp);
    let plan = ChildPlan {
        candidates: &strings.candidates,
        argv: &argv_ptrs,
        envp: &envp_ptrs,
        workdir: strings.workdir.as_deref(),
        inherited_dir: strings.inherited_dir.as_deref(),
        stdio: child_stdio,
        status_fd: child_status,
        own_table_below,
        umask: launch.umask,
        limits: &raw_limits(launch.rlimits, launch.core_dumps, root),
        // Only root can set supplementary groups; a non-root ctrlinit may only run programs as
        // itself (the config check enforces that), so it keeps its groups.
        groups: launch.run_as.groups.as_deref().filter(|_| root),
        gid: launch.run_as.gid,
        uid: launch.run_as.uid,
        rtmax: libc::SIGRTMAX(),
        extra_fds: &extra,
        grouping: launch.grouping,
        signals: started_with.as_ref(),
        oom_score_adj: oom.as_deref().map(str::as_bytes),
    };
    let pid = match &launch.cgroup {
        Some(group) => super::into_cgroup::clone_into(&plan, group.as_raw_fd()),
        None => clone_and_run(&plan),
    }
    .map_err(|e| setup_error(program, "cannot create a process", &e))?;
    drop(lent);
    drop(status_w);
    // The child has exec'd or exited by now (CLONE_VFORK); a failure wrote its errno first. The
    // failed child is left for the reaper like any other process.
    match read_exec_status(&status_r) {
        Some((step, errno)) => Err(failed_step(program, launch.workdir, step, errno)),
        None => Ok(Spawned { pid }),
    }
}

/// The child copies only the bottom of the table when what it needs fits the slots (see
/// `slots`): the lent slots, the stdio and status numbers it uses, and the cutoff. With extra
/// descriptors (numbered targets a slot could sit at) it copies it all, from the numbers given.
type ChildDescriptors = (
    Option<Lent>,
    [libc::c_int; 3],
    libc::c_int,
    Option<libc::c_int>,
);

fn child_descriptors(
    no_extra: bool,
    stdio: [libc::c_int; 3],
    status: libc::c_int,
) -> ChildDescriptors {
    match no_extra.then(|| lend(stdio, status)).flatten() {
        Some((lent, placed, status)) => {
            let below = lent.cutoff();
            (Some(lent), placed, status, Some(below))
        }
        None => (None, stdio, status, None),
    }
}

/// Stdio and the status pipe placed in the slots, with the slots (which put them back when
/// dropped); `None` when they do not fit.
fn lend(
    stdio: [libc::c_int; 3],
    status: libc::c_int,
) -> Option<(Lent, [libc::c_int; 3], libc::c_int)> {
    let mut lent = Lent::take()?;
    let placed = [
        lent.place(stdio[0])?,
        lent.place(stdio[1])?,
        lent.place(stdio[2])?,
    ];
    let status = lent.place(status)?;
    Some((lent, placed, status))
}

/// `fd`, moved to a number of at least `floor` when it is below (close-on-exec either way).
fn above(fd: OwnedFd, floor: i32) -> nix::Result<OwnedFd> {
    if fd.as_raw_fd() >= floor {
        return Ok(fd);
    }
    let raw = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(floor))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) })
}

/// A failure before any process existed.
fn setup_error(program: &str, what: &str, e: &dyn std::fmt::Display) -> SpawnError {
    SpawnError {
        exit: Exit::Code(126),
        message: format!("{program}: {what}: {e}"),
        exec_failed: false,
    }
}

/// What the child reported: the step that failed, in words, with the shell's status.
fn failed_step(program: &str, workdir: Option<&Path>, step: Step, errno: i32) -> SpawnError {
    let status = exec_failure_status(errno);
    let os = std::io::Error::from_raw_os_error(errno);
    let what = match step {
        Step::Exec => format!("cannot execute {program:?}"),
        Step::Workdir => format!(
            "cannot change to its workdir {:?}",
            workdir.unwrap_or(Path::new("")).display()
        ),
        Step::Identity => "cannot switch to its user and groups".to_string(),
        Step::Rlimit => "cannot set its rlimits".to_string(),
        Step::Stdio | Step::Session => "cannot set up the new process".to_string(),
    };
    // The command is there: its arguments and environment are too large for the kernel (the
    // config's own are checked; ctrlinit's inherited environment may be what tips it over).
    if step == Step::Exec && errno == libc::E2BIG {
        return SpawnError {
            exit: Exit::Code(status),
            message: format!(
                "{what}: {os} (exit status {status}): its command line and environment are over the kernel's limit\n    fix: set fewer or shorter variables (env, env_file, or inherit_env = false to leave out ctrlinit's own environment) and arguments"
            ),
            exec_failed: false,
        };
    }
    SpawnError {
        exit: Exit::Code(status),
        message: format!("{what}: {os} (exit status {status})"),
        exec_failed: step == Step::Exec,
    }
}

/// The child's strings, NUL-terminated, built before it exists.
struct CStrings {
    argv: Vec<CString>,
    candidates: Vec<CString>,
    envp: Vec<CString>,
    workdir: Option<CString>,
    inherited_dir: Option<CString>,
}

impl CStrings {
    fn of(launch: &Launch<'_>) -> Result<Self, SpawnError> {
        let cstring = |bytes: Vec<u8>| {
            CString::new(bytes).map_err(|e| {
                setup_error(&launch.argv[0], "a NUL byte in an argument or variable", &e)
            })
        };
        let argv = launch
            .argv
            .iter()
            .map(|a| cstring(a.clone().into_bytes()))
            .collect::<Result<_, _>>()?;
        let path_var = launch
            .env
            .iter()
            .find(|(k, _)| k.as_bytes() == b"PATH")
            .map(|(_, v)| v.as_bytes().to_vec());
        let candidates = executable_candidates(&launch.argv[0], path_var.as_deref())
            .into_iter()
            .map(cstring)
            .collect::<Result<Vec<_>, _>>()?;
        let envp = launch
            .env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                cstring(kv)
            })
            .collect::<Result<_, _>>()?;
        let workdir = launch
            .workdir
            .map(|d| cstring(d.as_os_str().as_bytes().to_vec()))
            .transpose()?;
        let inherited_dir = crate::sys::init::original_cwd()
            .and_then(|d| CString::new(d.as_os_str().as_bytes().to_vec()).ok());
        Ok(CStrings {
            argv,
            candidates,
            envp,
            workdir,
            inherited_dir,
        })
    }
}

/// The child's standard descriptors: stdin from `/dev/null` (`None`: ctrlinit's own); stdout
/// and stderr as asked (`None`: ctrlinit's own).
struct Stdio {
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
}

impl Stdio {
    fn open(
        program: &str,
        stdin_inherit: bool,
        stdout: Output,
        stderr: Output,
    ) -> Result<Self, SpawnError> {
        let null = || {
            nix::fcntl::open(
                "/dev/null",
                OFlag::O_RDWR | OFlag::O_CLOEXEC,
                nix::sys::stat::Mode::empty(),
            )
            .map_err(|e| setup_error(program, "cannot open /dev/null", &e))
        };
        let to_fd = |o: Output| -> Result<Option<OwnedFd>, SpawnError> {
            match o {
                Output::Inherit => Ok(None),
                Output::Fd(fd) => Ok(Some(fd)),
                Output::Null => null().map(Some),
            }
        };
        Ok(Stdio {
            stdin: if stdin_inherit { None } else { Some(null()?) },
            stdout: to_fd(stdout)?,
            stderr: to_fd(stderr)?,
        })
    }

    fn raw(&self) -> [libc::c_int; 3] {
        [
            self.stdin
                .as_ref()
                .map_or(libc::STDIN_FILENO, |f| f.as_raw_fd()),
            self.stdout
                .as_ref()
                .map_or(libc::STDOUT_FILENO, |f| f.as_raw_fd()),
            self.stderr
                .as_ref()
                .map_or(libc::STDERR_FILENO, |f| f.as_raw_fd()),
        ]
    }
}

/// Creates the child as posix_spawn does: `clone(CLONE_VM | CLONE_VFORK)`, so no page table is
/// copied (a full fork copies the supervisor's and makes the child fault on every page it
/// touches before exec); the calling thread is suspended until the child has exec'd or exited,
/// which is the few system calls of `run_child`.
fn clone_and_run(plan: &ChildPlan<'_>) -> std::io::Result<i32> {
    extern "C" fn entry(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `&ChildPlan` passed to clone below; the parent is suspended
        // (CLONE_VFORK) and keeps it alive until this child has exec'd or exited.
        let plan = unsafe { &*(arg as *const ChildPlan<'_>) };
        // SAFETY: a freshly cloned child, see `run_child`; never returns.
        unsafe { run_child(plan) }
    }
    super::child::with_child_stack(|stack| clone_on(plan, entry, stack))
}

/// [`clone_and_run`]'s clone, the child on `stack`.
fn clone_on(
    plan: &ChildPlan<'_>,
    entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    stack: &mut [u8],
) -> std::io::Result<i32> {
    // The stack grows down: start at its (16-byte aligned) top.
    let top = (stack.as_mut_ptr() as usize + stack.len()) & !15;
    // SAFETY: the child runs `entry` on its own stack in our address space (CLONE_VM) while
    // this thread is suspended (CLONE_VFORK); it only makes async-signal-safe system calls on
    // `plan` and its stack, then execs or exits; only then does this thread resume and may
    // reuse `stack` (the kept one: see `with_child_stack`).
    // It may clobber this thread's errno, which nothing reads across this call.
    let pid = unsafe {
        libc::clone(
            entry,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD | plan.table_flag(),
            plan as *const ChildPlan<'_> as *mut libc::c_void,
        )
    };
    if pid < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(pid)
    }
}

/// Reads the exec-status pipe without blocking: the failed step and its errno (written before
/// the child exited), or `None` when the exec happened.
fn read_exec_status(fd: &OwnedFd) -> Option<(Step, i32)> {
    let mut buf = [0u8; 8];
    match nix::unistd::read(fd, &mut buf) {
        Ok(8) => {
            let step = i32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
            let errno = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
            Some((Step::from_code(step), errno))
        }
        _ => None,
    }
}

/// Paths to try for `program`: itself when it contains a `/`, else each PATH directory (the
/// program's PATH, or the default one a shell would use).
fn executable_candidates(program: &str, path: Option<&[u8]>) -> Vec<Vec<u8>> {
    if program.contains('/') {
        return vec![program.as_bytes().to_vec()];
    }
    let path = path.unwrap_or(b"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    path.split(|&b| b == b':')
        .map(|dir| {
            let mut p = if dir.is_empty() {
                b".".to_vec()
            } else {
                dir.to_vec()
            };
            p.push(b'/');
            p.extend_from_slice(program.as_bytes());
            p
        })
        .collect()
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

fn raw_limits(rlimits: &[RlimitSetting], core_dumps: Option<bool>, root: bool) -> Vec<RawLimit> {
    let mut out: Vec<RawLimit> = rlimits
        .iter()
        .map(|r| {
            let v = r.value.unwrap_or(libc::RLIM_INFINITY);
            (r.resource as libc::__rlimit_resource_t, v, v)
        })
        .collect();
    // ctrlinit raised its own descriptor limit; a program gets the one ctrlinit was given,
    // unless it sets its own.
    let sets_nofile = rlimits
        .iter()
        .any(|r| r.resource == nix::sys::resource::Resource::RLIMIT_NOFILE);
    if let (Some(soft), false) = (crate::sys::init::inherited().nofile_soft, sets_nofile)
        && let Ok((_, hard)) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
    {
        out.push((libc::RLIMIT_NOFILE, soft, hard));
    }
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
        let limit = match (on, root) {
            (true, true) => (libc::RLIM_INFINITY, libc::RLIM_INFINITY),
            (true, false) => (hard, hard),
            (false, _) => (0, hard),
        };
        out.push((libc::RLIMIT_CORE, limit.0, limit.1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousand_spawns_on_a_thread_use_one_kept_child_stack() {
        use super::super::child::{CHILD_STACK, with_child_stack};
        // A mark left at the bottom by one spawn is there at the next: the same block, kept (a
        // fresh one is zeroed, and a freed one may come back at the same address).
        let mut stacks = std::collections::HashSet::new();
        for i in 0..10_000u32 {
            stacks.insert(with_child_stack(|s| {
                assert_eq!(s.len(), CHILD_STACK);
                if i > 0 {
                    assert_eq!(s[..4], (i - 1).to_ne_bytes(), "spawn {i} got a new stack");
                }
                s[..4].copy_from_slice(&i.to_ne_bytes());
                s.as_ptr() as usize
            }));
        }
        assert_eq!(stacks.len(), 1, "a child stack a spawn, not one kept");
        // Should the kept one be in use, a fresh one serves, and the kept one stays.
        let nested = with_child_stack(|outer| {
            let outer = outer.as_ptr() as usize;
            (outer, with_child_stack(|inner| inner.as_ptr() as usize))
        });
        assert_ne!(nested.0, nested.1);
        assert_eq!(with_child_stack(|s| s.as_ptr() as usize), nested.0);
    }

    #[test]
    fn candidates_follow_path() {
        assert_eq!(
            executable_candidates("/bin/sh", None),
            vec![b"/bin/sh".to_vec()]
        );
        assert_eq!(
            executable_candidates("./x", Some(b"/a")),
            vec![b"./x".to_vec()]
        );
        assert_eq!(
            executable_candidates("api", Some(b"/opt/bin::/usr/bin")),
            vec![
                b"/opt/bin/api".to_vec(),
                b"./api".to_vec(),
                b"/usr/bin/api".to_vec()
            ]
        );
        assert_eq!(executable_candidates("sh", None).len(), 6);
    }

    #[test]
    fn exec_failures_map_to_shell_statuses() {
        assert_eq!(exec_failure_status(libc::ENOENT), 127);
        assert_eq!(exec_failure_status(libc::EACCES), 126);
        assert_eq!(exec_failure_status(libc::ENOEXEC), 126);
    }

    #[test]
    fn too_large_an_environment_is_not_a_missing_command() {
        let e = failed_step("/bin/true", None, Step::Exec, libc::E2BIG);
        assert_eq!(e.exit, Exit::Code(126));
        assert!(!e.exec_failed, "the command is there: no `install it` fix");
        assert!(
            e.message.contains("over the kernel's limit"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("fix: set fewer or shorter variables"),
            "{}",
            e.message
        );
        assert!(failed_step("/x", None, Step::Exec, libc::ENOENT).exec_failed);
    }
}

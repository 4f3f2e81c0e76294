//! The pipes a program's stdout and stderr go through.

use std::os::fd::OwnedFd;

use nix::fcntl::{FcntlArg, OFlag, fcntl};

/// Pipe capacity asked for stdout: larger reads, fewer wake-ups for chatty programs. Pages are
/// only allocated when written, so a silent program costs nothing for it.
const STDOUT_PIPE_BYTES: i32 = 1 << 20;

/// A program's output pipes: the read ends ctrlinit keeps (stderr's `None` when it shares
/// stdout's pipe) and the write ends the child gets as its fds 1 and 2 (then two descriptors of
/// one pipe). Every end is close-on-exec.
pub struct OutputPipes {
    /// stdout's read end.
    pub stdout_r: OwnedFd,
    /// stderr's read end, when it has a pipe of its own.
    pub stderr_r: Option<OwnedFd>,
    /// The child's fd 1.
    pub stdout_w: OwnedFd,
    /// The child's fd 2.
    pub stderr_w: OwnedFd,
}

/// Creates a program's output pipes: two, or one for both streams when `shared` (the program
/// then costs ctrlinit one descriptor instead of two while it runs).
pub fn output_pipes(shared: bool) -> nix::Result<OutputPipes> {
    let (stdout_r, stdout_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    // Best effort: an unprivileged ctrlinit may be limited by pipe-user-pages-soft.
    let _ = fcntl(&stdout_w, FcntlArg::F_SETPIPE_SZ(STDOUT_PIPE_BYTES));
    let (stderr_r, stderr_w) = if shared {
        (
            None,
            stdout_w
                .try_clone()
                .map_err(|e| nix::Error::from_raw(e.raw_os_error().unwrap_or(libc::EMFILE)))?,
        )
    } else {
        let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        (Some(r), w)
    };
    Ok(OutputPipes {
        stdout_r,
        stderr_r,
        stdout_w,
        stderr_w,
    })
}

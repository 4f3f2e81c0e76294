//! The pipes a program's stdout and stderr go through.

use std::os::fd::OwnedFd;

use nix::fcntl::{FcntlArg, OFlag, fcntl};

/// Pipe capacity asked for stdout: larger reads, fewer wake-ups for chatty programs. Pages are
/// only allocated when written, so a silent program costs nothing for it.
const STDOUT_PIPE_BYTES: i32 = 1 << 20;

/// Creates the stdout and stderr pipes: (stdout read, stdout write, stderr read, stderr write).
/// All ends are close-on-exec; the child gets the write ends as its fds 1 and 2.
pub fn output_pipes() -> nix::Result<(OwnedFd, OwnedFd, OwnedFd, OwnedFd)> {
    let (out_r, out_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let (err_r, err_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    // Best effort: an unprivileged ctrlinit may be limited by pipe-user-pages-soft.
    let _ = fcntl(&out_w, FcntlArg::F_SETPIPE_SZ(STDOUT_PIPE_BYTES));
    Ok((out_r, out_w, err_r, err_w))
}

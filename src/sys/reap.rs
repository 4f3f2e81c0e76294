//! Reaping: drain every exited child with `waitpid(-1, WNOHANG)`.
//!
//! This is the only place that waits for children (besides std's spawn, which reaps a child
//! whose exec failed before returning the error, inside the owner loop), so no two reapers race.

use nix::errno::Errno;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};

use crate::model::Exit;

/// Every child that has exited, and whether any child is left at all.
pub fn reap_exited(out: &mut Vec<(i32, Exit)>) -> Children {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => out.push((pid.as_raw(), Exit::Code(code))),
            Ok(WaitStatus::Signaled(pid, sig, core_dumped)) => out.push((
                pid.as_raw(),
                Exit::Signal {
                    sig: sig as i32,
                    core_dumped,
                },
            )),
            Ok(WaitStatus::StillAlive) => return Children::Some,
            Ok(_) => continue,
            Err(Errno::EINTR) => continue,
            Err(_) => return Children::None,
        }
    }
}

/// Whether children remain after a drain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Children {
    /// At least one child is still running.
    Some,
    /// No child at all.
    None,
}

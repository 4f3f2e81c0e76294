//! Main processes a run adopted (`MAINPID=`) that are not ctrlinit's children: their parent (the
//! launcher that forked them) may still be alive, so their exit would never reach ctrlinit's
//! reaper. A pidfd tells when one exits; its status is read from its zombie while its parent
//! has not reaped it.

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tracing::debug;

use crate::model::{Exit, ProgramId};
use crate::supervisor::checks::events::ProbeEvent;
use crate::supervisor::core::{Core, Input};
use crate::sys::init::group_exists;
use crate::sys::procs;

/// The adopted main processes being watched, one per program at most.
pub(crate) struct Adopted {
    watches: HashMap<ProgramId, (i32, JoinHandle<()>)>,
    /// A pidfd opened before a pid file's process was checked, for the watch its adoption
    /// starts: the watch holds the very process the checks looked at, never a later process
    /// that got its number (one program at most, replaced by the next).
    held: HashMap<ProgramId, (i32, OwnedFd)>,
    tx: UnboundedSender<ProbeEvent>,
}

impl Adopted {
    /// Nothing watched yet; exits are reported on `tx`.
    pub(crate) fn new(tx: UnboundedSender<ProbeEvent>) -> Self {
        Adopted {
            watches: HashMap::new(),
            held: HashMap::new(),
            tx,
        }
    }

    /// Keeps `fd`, a pidfd of `pid` opened before `pid` was checked for program `id`, for the
    /// watch that its adoption starts.
    pub(crate) fn hold(&mut self, id: ProgramId, pid: i32, fd: OwnedFd) {
        self.held.insert(id, (pid, fd));
    }

    /// Program `id`'s main process is now `pid`: watch it unless the reaper will see it.
    pub(crate) fn watch(&mut self, id: ProgramId, pid: i32) {
        if let Some((_, task)) = self.watches.remove(&id) {
            task.abort();
        }
        let held = self.held.remove(&id).filter(|(held, _)| *held == pid);
        if procs::is_own_child(pid) {
            return;
        }
        let fd = match held.map_or_else(|| procs::pidfd(pid), |(_, fd)| Ok(fd)) {
            Ok(fd) => fd,
            Err(e) => {
                debug!("cannot watch adopted main process {pid}: {e}");
                return;
            }
        };
        let tx = self.tx.clone();
        let task = tokio::spawn(async move {
            // SAFETY: the pidfd is owned here and moves into the AsyncFd, which deregisters it
            // before closing it.
            if let Ok(fd) = unsafe { AsyncFd::register(fd) } {
                let _ = fd.readable().await;
            }
            let _ = tx.send(ProbeEvent::AdoptedExited { id, pid });
        });
        self.watches.insert(id, (pid, task));
    }

    /// Adopted process `pid` of program `id` exited (the runner reaped first: if it was
    /// ctrlinit's child after all, it has been seen already). Its end, if still unseen.
    pub(crate) fn exited(&mut self, id: ProgramId, pid: i32, core: &Core) -> Option<Input> {
        self.watches.remove(&id);
        let pgid = core.group_of(pid)?;
        let exit = procs::zombie_exit(pid).unwrap_or_else(|| {
            debug!(
                "adopted main process {pid} ended; its status is unknown (its parent reaped it)"
            );
            Exit::Code(255)
        });
        Some(Input::Reaped {
            pid,
            exit,
            group_empty: !group_exists(pgid),
            oom_killed: false,
        })
    }

    /// Ends the watches of processes that are no longer their program's main process.
    pub(crate) fn cancel_stale(&mut self, core: &Core) {
        self.watches.retain(|&id, (pid, task)| {
            let current = core.program(id).and_then(|p| p.phase.pid()) == Some(*pid);
            if !current {
                task.abort();
            }
            current
        });
    }
}

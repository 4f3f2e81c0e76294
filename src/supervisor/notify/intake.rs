//! The sd_notify socket programs report to: datagrams are read (a bounded batch per wake-up),
//! attributed to a program by the sender's pid as the kernel gives it (the program's main
//! process or one of its descendants; anything else is ignored and counted), parsed, and handed
//! to the core as [`Input::Notified`].

use std::path::{Path, PathBuf};

use tokio::io::unix::AsyncFd;
use tracing::debug;

use super::message::NotifyMessage;
use crate::model::ProgramId;
use crate::supervisor::core::{Core, Input};
use crate::sys::notify_socket::NotifySocket;
use crate::sys::procs;

/// Datagrams handled per wake-up: a flood waits for the next turn of the loop instead of
/// holding it.
const BATCH: usize = 64;

/// The sd_notify socket and what it has refused.
pub(crate) struct NotifyIntake {
    socket: AsyncFd<NotifySocket>,
    /// Where it is bound (what programs are told, whatever a reload says).
    pub(crate) path: PathBuf,
    /// The last batch stopped at its size with datagrams still waiting.
    backlog: bool,
    /// Datagrams from processes that belong to no program speaking sd_notify.
    pub(crate) foreign: u64,
    /// Datagrams too long to read, or without credentials.
    pub(crate) dropped: u64,
}

impl NotifyIntake {
    /// Binds the socket at `path`.
    pub(crate) fn open(path: &Path) -> Result<NotifyIntake, String> {
        let socket = NotifySocket::bind(path)?;
        // SAFETY: the socket owns its descriptor and moves into the AsyncFd, which drops it (and
        // so closes the descriptor) only after deregistering it.
        let socket = unsafe { AsyncFd::register(socket) }
            .map_err(|e| format!("cannot watch the notify socket {}: {e}", path.display()))?;
        Ok(NotifyIntake {
            socket,
            path: path.to_path_buf(),
            backlog: false,
            foreign: 0,
            dropped: 0,
        })
    }

    /// Resolves when datagrams may be waiting.
    pub(crate) async fn ready(&self) {
        if self.backlog {
            return;
        }
        if let Ok(mut guard) = self.socket.readable().await {
            // Cleared before the drain: a datagram that arrives during it wakes the loop again.
            guard.clear_ready();
        }
    }

    /// Reads up to a batch of datagrams and returns the inputs they make.
    pub(crate) fn drain(&mut self, core: &Core) -> Vec<Input> {
        let mut inputs = Vec::new();
        self.backlog = false;
        for _ in 0..BATCH {
            let datagram = match self.socket.get_ref().recv() {
                Ok(Some(d)) => d,
                Ok(None) => return inputs,
                Err(e) => {
                    debug!("notify socket: {e}");
                    return inputs;
                }
            };
            let Some(pid) = datagram.pid.filter(|_| !datagram.truncated) else {
                self.dropped += 1;
                continue;
            };
            let Some(id) = owner(core, pid) else {
                self.foreign += 1;
                debug!(
                    "notify socket: ignored a message from pid {pid}, which belongs to no program that speaks sd_notify ({} so far)",
                    self.foreign
                );
                continue;
            };
            let mut message = NotifyMessage::parse(&datagram.bytes);
            let main_pgid = message
                .main_pid
                .and_then(|main| verified_main(core, id, main));
            if message.main_pid.is_some() && main_pgid.is_none() {
                debug!(
                    "notify socket: MAINPID={:?} is not in the program's process tree; ignored",
                    message.main_pid
                );
                message.main_pid = None;
            }
            inputs.push(Input::Notified {
                id,
                message,
                main_pgid,
            });
        }
        self.backlog = true;
        inputs
    }
}

/// The program speaking sd_notify that `pid` belongs to: its main process, a descendant, or a
/// member of the session its run leads.
fn owner(core: &Core, pid: i32) -> Option<ProgramId> {
    let speakers = || {
        core.programs()
            .iter()
            .filter(|p| p.spec.speaks_notify())
            .filter_map(|p| Some((p.id, p.phase.pid()?, p.phase.pgid()?)))
    };
    if let Some((id, ..)) = speakers().find(|&(_, main, _)| main == pid) {
        return Some(id);
    }
    speakers()
        .find(|&(_, main, pgid)| procs::in_tree_of(pid, main, pgid))
        .map(|(id, ..)| id)
}

/// `MAINPID=main`'s process group, when `main` belongs to program `id`'s tree.
fn verified_main(core: &Core, id: ProgramId, main: i32) -> Option<i32> {
    let p = core.program(id)?;
    let (current, pgid) = (p.phase.pid()?, p.phase.pgid()?);
    if !procs::in_tree_of(main, current, pgid) {
        return None;
    }
    let pgrp = procs::stat(main)?.pgrp;
    // Never another program's main process or a process of its run's group (a session number
    // can outlive its leader and be reused by another run).
    let theirs = core
        .programs()
        .iter()
        .any(|q| q.id != id && (q.phase.pid() == Some(main) || q.phase.pgid() == Some(pgrp)));
    (!theirs).then_some(pgrp)
}

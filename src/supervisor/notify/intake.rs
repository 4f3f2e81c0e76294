//! The sd_notify socket programs report to: datagrams are read (a bounded batch per wake-up),
//! attributed to a program by the sender's pid as the kernel gives it (the program's main
//! process or one of its descendants; anything else is ignored and counted), parsed, and handed
//! to the core as [`Input::Notified`].
//!
//! The socket is writable by every user, so what a sender can make the owner loop spend is
//! bounded: a turn of the loop reads datagrams for at most [`TURN_BUDGET`] (and [`BATCH`]), and
//! the loop serves signals, deadlines, reloads and control requests before it; a sender's
//! ancestry is read once per datagram at most (one walk up from the sender, matched against a
//! map of the speaking programs' main processes and sessions), and once per turn per sender;
//! and each user but root may send [`RATE`] datagrams a second (a burst of [`BURST`]): the rest
//! are dropped before any `/proc` read, counted, and said so at most every [`TELL_EVERY`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tracing::{debug, warn};

use crate::model::ProgramId;
use crate::supervisor::core::notify_message::NotifyMessage;
use crate::supervisor::core::{Core, Input};
use crate::sys::ancestry::Owners;
use crate::sys::notify_socket::NotifySocket;
use crate::sys::procs;

/// Datagrams handled per wake-up at most: a flood waits for the next turn of the loop instead
/// of holding it.
const BATCH: usize = 256;

/// Time spent reading datagrams per turn of the loop at most, whatever they cost.
const TURN_BUDGET: Duration = Duration::from_millis(2);

/// Datagrams a second one user (not root) may send; systemd's daemons send a few.
const RATE: f64 = 200.0;

/// How many one user may send at once before [`RATE`] applies.
const BURST: f64 = 400.0;

/// How often a user over its rate is said so in the log, at most.
const TELL_EVERY: Duration = Duration::from_secs(10);

/// Users whose rate is tracked, at most (the table is emptied past it).
const USERS_MAX: usize = 1024;

/// One user's allowance: a token bucket.
#[derive(Debug, Clone, Copy)]
struct Allowance {
    tokens: f64,
    at: Instant,
}

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
    /// Datagrams dropped because their sender's user was over its rate.
    pub(crate) rate_limited: u64,
    /// Each user's allowance.
    allowances: HashMap<u32, Allowance>,
    /// When a user over its rate was last said so.
    told: Option<Instant>,
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
            rate_limited: 0,
            allowances: HashMap::new(),
            told: None,
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

    /// Reads up to a batch of datagrams (within [`TURN_BUDGET`]) and returns the inputs they
    /// make.
    pub(crate) fn drain(&mut self, core: &Core) -> Vec<Input> {
        let began = Instant::now();
        let mut inputs = Vec::new();
        let speakers = speakers(core);
        let mut seen: HashMap<i32, Option<ProgramId>> = HashMap::new();
        self.backlog = false;
        for _ in 0..BATCH {
            if began.elapsed() >= TURN_BUDGET {
                self.backlog = true;
                return inputs;
            }
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
            if !self.allowed(datagram.uid.unwrap_or(0), began) {
                continue;
            }
            let owner = *seen.entry(pid).or_insert_with(|| speakers.owner(pid));
            let Some(id) = owner else {
                self.foreign += 1;
                debug!(
                    "notify socket: ignored a message from pid {pid}, which belongs to no program that speaks sd_notify ({} so far)",
                    self.foreign
                );
                continue;
            };
            inputs.push(notified(core, id, &datagram.bytes));
        }
        self.backlog = true;
        inputs
    }

    /// Whether user `uid` may send one more datagram now; counts (and tells, now and then)
    /// the one it may not.
    fn allowed(&mut self, uid: u32, now: Instant) -> bool {
        if uid == 0 {
            return true;
        }
        if self.allowances.len() >= USERS_MAX && !self.allowances.contains_key(&uid) {
            self.allowances.clear();
        }
        let a = self.allowances.entry(uid).or_insert(Allowance {
            tokens: BURST,
            at: now,
        });
        let refill = now.saturating_duration_since(a.at).as_secs_f64() * RATE;
        a.tokens = (a.tokens + refill).min(BURST);
        a.at = now;
        if a.tokens >= 1.0 {
            a.tokens -= 1.0;
            return true;
        }
        self.rate_limited += 1;
        if self
            .told
            .is_none_or(|t| now.duration_since(t) >= TELL_EVERY)
        {
            self.told = Some(now);
            warn!(
                "notify socket: uid {uid} sends more than {RATE} datagrams a second; dropping the rest ({} dropped so far)",
                self.rate_limited
            );
        }
        false
    }
}

/// The input one attributed datagram makes.
fn notified(core: &Core, id: ProgramId, bytes: &[u8]) -> Input {
    let mut message = NotifyMessage::parse(bytes);
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
    Input::Notified {
        id,
        message,
        main_pgid,
    }
}

/// The programs speaking sd_notify, by their main process and by the session their run leads
/// (read once per turn).
fn speakers(core: &Core) -> Owners<ProgramId> {
    let mut s = Owners::default();
    for p in core.programs().iter().filter(|p| p.spec.speaks_notify()) {
        if let (Some(main), Some(pgid)) = (p.phase.pid(), p.phase.pgid()) {
            s.add(p.id, main, pgid);
        }
    }
    s
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

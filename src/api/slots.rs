//! Connection slots: how many connections are served at once, in all and per user, so that no
//! local user can starve the socket. Root and ctrlinit's own user always find a slot (some are
//! kept for them); any other user may hold at most [`PER_USER`].

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Connections served at once, in all.
pub(crate) const MAX_CONNECTIONS: usize = 1024;

/// Of those, kept for root and ctrlinit's own user.
pub(crate) const RESERVED: usize = 64;

/// Most connections one other user (a socket group member) may hold.
pub(crate) const PER_USER: usize = 64;

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    by_uid: HashMap<u32, usize>,
}

/// The slots, shared by the accept loop, the connections and the init's exit.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    counts: Mutex<Counts>,
    freed: Condvar,
}

/// A connection's slot, given back however the connection ends.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Arc<Slots>,
    uid: u32,
}

impl Slots {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a peer of `uid` (`privileged`: root or ctrlinit's user), or why there is none.
    pub(crate) fn admit(self: &Arc<Self>, uid: u32, privileged: bool) -> Result<Slot, String> {
        let mut c = self.lock();
        let mine = c.by_uid.get(&uid).copied().unwrap_or(0);
        if c.total >= MAX_CONNECTIONS {
            return Err(format!(
                "ctrlinit is serving {MAX_CONNECTIONS} connections; try again"
            ));
        }
        if !privileged {
            if c.total >= MAX_CONNECTIONS - RESERVED {
                return Err("ctrlinit is busy: its free connections are kept for root".into());
            }
            if mine >= PER_USER {
                return Err(format!(
                    "uid {uid} holds {PER_USER} connections already, the most one user may"
                ));
            }
        }
        c.total += 1;
        *c.by_uid.entry(uid).or_default() += 1;
        Ok(Slot {
            slots: Arc::clone(self),
            uid,
        })
    }

    /// Waits until no connection is left, for at most `bound`.
    pub(crate) fn wait_empty(&self, bound: Duration) {
        let c = self.lock();
        let _ = self.freed.wait_timeout_while(c, bound, |c| c.total > 0);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.slots.lock();
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_uid.get_mut(&self.uid) {
            *n -= 1;
            if *n == 0 {
                c.by_uid.remove(&self.uid);
            }
        }
        self.slots.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_user_cannot_take_the_slots_root_needs() {
        let slots = Arc::new(Slots::default());
        let held: Vec<Slot> = (0..PER_USER)
            .map(|_| slots.admit(1000, false).unwrap())
            .collect();
        assert!(slots.admit(1000, false).unwrap_err().contains("uid 1000"));
        assert!(slots.admit(0, true).is_ok());
        drop(held);
        assert!(slots.admit(1000, false).is_ok());
        // Many users together still leave the reserved slots to root.
        let mut many = Vec::new();
        for uid in 2000.. {
            match slots.admit(uid, false) {
                Ok(s) => many.push(s),
                Err(e) => {
                    assert!(e.contains("kept for root"), "{e}");
                    break;
                }
            }
        }
        assert!(slots.admit(0, true).is_ok());
    }
}

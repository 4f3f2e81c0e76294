//! Which program a process belongs to, by its ancestry: the program's current main process, a
//! descendant of it, or a member of the session its run leads (each run starts in a session of
//! its own). One walk up from the process through `/proc/PID/stat`, at most [`DEPTH`] levels.
//!
//! Used by the sd_notify intake (on the owner loop) and the syslog intake (on the log thread,
//! given a copy of the table by the owner loop): the same rule for both, so a program's
//! processes are its own whichever way they speak.

use std::collections::HashMap;

use super::procs;

/// How far up a walk goes at most.
pub const DEPTH: usize = 64;

/// Programs by their main process and by the session their run leads. `K` names a program (an
/// id on the owner loop, a name on the log thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owners<K> {
    mains: HashMap<i32, K>,
    sessions: HashMap<i32, K>,
}

impl<K> Default for Owners<K> {
    fn default() -> Self {
        Owners {
            mains: HashMap::new(),
            sessions: HashMap::new(),
        }
    }
}

impl<K: Clone> Owners<K> {
    /// Adds program `key`'s run: its main process `main` and the session (process group) its
    /// run leads, `session`. The first program to claim a pid keeps it.
    pub fn add(&mut self, key: K, main: i32, session: i32) {
        self.mains.entry(main).or_insert_with(|| key.clone());
        self.sessions.entry(session).or_insert(key);
    }

    /// Whether no program is known.
    pub fn is_empty(&self) -> bool {
        self.mains.is_empty()
    }

    /// The program `pid` belongs to: its main process, a descendant, or a member of the session
    /// its run leads.
    pub fn owner(&self, pid: i32) -> Option<K> {
        if self.mains.is_empty() {
            return None;
        }
        if let Some(k) = self.mains.get(&pid) {
            return Some(k.clone());
        }
        self.owner_by(pid, procs::stat(pid)?)
    }

    /// [`Owners::owner`] of `pid`, whose `/proc` stat was read just now as `stat` (the first
    /// step of the walk is not read again, so the process checked and the one walked from are
    /// one, whatever exits in between).
    pub fn owner_by(&self, pid: i32, stat: procs::ProcStat) -> Option<K> {
        if self.mains.is_empty() {
            return None;
        }
        if let Some(k) = self.mains.get(&pid) {
            return Some(k.clone());
        }
        let mut s = stat;
        for _ in 0..DEPTH {
            if let Some(k) = self.sessions.get(&s.session) {
                return Some(k.clone());
            }
            if s.ppid <= 1 {
                return None;
            }
            if let Some(k) = self.mains.get(&s.ppid) {
                return Some(k.clone());
            }
            s = procs::stat(s.ppid)?;
        }
        None
    }

    /// Whether `key` is still one of the runs in the table.
    pub fn holds(&self, key: &K) -> bool
    where
        K: PartialEq,
    {
        self.sessions.values().any(|k| k == key) || self.mains.values().any(|k| k == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_found_by_its_ancestry_and_session() {
        let me = std::process::id() as i32;
        let mine = procs::stat(me).unwrap();
        let mut o = Owners::default();
        assert_eq!(o.owner(me), None, "no program: no walk");
        o.add("parent", mine.ppid, -5);
        assert_eq!(o.owner(me), Some("parent"), "a child of a main process");
        let mut o = Owners::default();
        o.add("session", -7, mine.session);
        assert_eq!(o.owner(me), Some("session"), "a member of its session");
        let mut o = Owners::default();
        o.add("other", -7, -8);
        assert_eq!(o.owner(me), None);
    }
}

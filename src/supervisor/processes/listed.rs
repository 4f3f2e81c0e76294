//! Every program's processes from one listing of `/proc` (cgroup mode), for a look at all
//! programs at once (`status`): the main processes ctrlinit knows are taken as they are, and
//! only the other processes are read, each its `/proc/PID/cgroup`, instead of every program's
//! `cgroup.procs` (see `sys::proc_listing`).

use std::collections::{HashMap, HashSet};

use crate::sys::proc_listing;

/// The fewest processes outside the known main ones read before per-group reads are cheaper:
/// a listing with more strangers than programs falls back to them (a host's `/proc`).
const STRANGERS_MIN: usize = 256;

/// What one listing found.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    /// Every process that exists.
    live: HashSet<i32>,
    /// The other processes in each program's group (or a group below it), by program name.
    strays: HashMap<String, Vec<i32>>,
}

impl Listed {
    /// Lists `/proc` and reads the group of each process that is not ctrlinit, a known main
    /// process (`leaders`: each is in its program's group, where it was put before its exec or
    /// checked at its adoption). `top` is the name of ctrlinit's sub-tree's directory and
    /// `names` maps a group's directory name to its program. `None` when `/proc` is not
    /// ctrlinit's PID namespace's, or holds more strangers than `programs` (each costs a read,
    /// as a group does).
    pub(crate) fn take(
        leaders: &HashSet<i32>,
        top: &str,
        names: &HashMap<&str, &str>,
        programs: usize,
    ) -> Option<Listed> {
        let live = proc_listing::listing()?;
        let me = std::process::id() as i32;
        let strangers: Vec<i32> = live
            .iter()
            .copied()
            .filter(|p| *p != me && !leaders.contains(p))
            .collect();
        if strangers.len() > programs.max(STRANGERS_MIN) {
            return None;
        }
        let mut strays: HashMap<String, Vec<i32>> = HashMap::new();
        for pid in strangers {
            let Some(path) = proc_listing::cgroup_path(pid) else {
                continue;
            };
            if let Some(name) = proc_listing::group_below(&path, top).and_then(|g| names.get(g)) {
                strays.entry((*name).to_string()).or_default().push(pid);
            }
        }
        Some(Listed { live, strays })
    }

    /// A run's processes: its main process while it exists, and the others in its group.
    pub(crate) fn members(&self, name: &str, leader: Option<i32>) -> Vec<i32> {
        let mut pids: Vec<i32> = leader
            .filter(|p| self.live.contains(p))
            .into_iter()
            .collect();
        pids.extend(self.strays.get(name).into_iter().flatten());
        pids
    }
}

//! Which processes belong to which program's run, whatever they did with sessions and process
//! groups (a daemon that double-forks, `setsid`, `nohup … &`): so stopping a program stops all
//! of it, and a restart leaks nothing.
//!
//! Two ways, chosen at start:
//! - **cgroup**: each program has a cgroup v2 group (see [`crate::sys::cgroup2`]); its processes
//!   join it before exec and no process can leave it. Catches everything, and gives per-program
//!   memory and CPU.
//! - **marker** (where no writable cgroup v2 hierarchy exists, as in a default Docker or
//!   Kubernetes container): each run starts with `CTRLINIT_RUN=<nonce>.<id>.<run>` first in its
//!   environment, which every descendant inherits; a process carrying it belongs to that run.
//!   Catches what keeps its initial environment: not a process that was exec'd with a new,
//!   emptied environment (`env -i`, some daemons' sanitising), nor one whose marker a program
//!   rewrote; those are still caught while they stay in the run's process group.
//!
//! The process group is always signalled first (as before); the tracking adds the processes
//! that left it.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;

use tracing::{debug, info};

use crate::model::ProgramId;
use crate::sys::cgroup2::{Cgroups, Group, Usage};
use crate::sys::init::{Role, group_exists};
use crate::sys::procs;

/// What ties a process to a program's run: its marker (`CTRLINIT_RUN=…`) and, in cgroup mode,
/// the run's group to be created in.
pub(crate) type RunTag = ((&'static str, String), Option<OwnedFd>);

/// The environment variable that marks a run's processes.
pub(crate) const MARKER: &str = "CTRLINIT_RUN";

/// How processes are tied to their program.
pub(crate) struct Tracking {
    cgroups: Option<Cgroups>,
    nonce: String,
    /// Program name -> its cgroup (cgroup mode).
    groups: HashMap<String, Group>,
    /// ctrlinit's children that are no run's main process, with their group and marker, as
    /// read in this turn of the owner loop (markers): a stop of every program reads them once.
    strangers: std::cell::RefCell<Option<Vec<Stranger>>>,
}

/// What one look at every run's processes (a `status` of all programs) reads once for all,
/// instead of once a program: with thousands of programs the per-program reads were most of
/// the answer's time.
#[derive(Debug, Default)]
pub(crate) struct Look {
    /// Cgroups: no program has groups below its own, so its group's `cgroup.procs` is all of
    /// it (no listing of its directory).
    flat: bool,
    /// Markers: every process's parent, from one pass over `/proc`.
    tree: Option<procs::Tree>,
    /// Cgroups: the sub-tree's top, open, so each group's files are opened below it.
    top: Option<crate::sys::cgroup2::Top>,
    /// Cgroups: every process, from one listing of `/proc`, and the group of each that is no
    /// known main process; when it could be had, no group's file is read for processes.
    listed: Option<super::listed::Listed>,
}

/// A child of ctrlinit that is no run's main process.
#[derive(Debug, Clone)]
struct Stranger {
    pid: i32,
    pgrp: Option<i32>,
    marker: Option<String>,
}

/// One run, as the tracking knows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunRef<'a> {
    /// Program name (its cgroup's name).
    pub(crate) name: &'a str,
    /// Its id.
    pub(crate) id: ProgramId,
    /// The run.
    pub(crate) run: u64,
    /// Its process group.
    pub(crate) pgid: i32,
    /// Its main process, while it lives.
    pub(crate) leader: Option<i32>,
}

/// The run a program has now (while any of it may be alive).
pub(crate) fn run_of(p: &crate::supervisor::core::program::Program) -> Option<RunRef<'_>> {
    Some(RunRef {
        name: p.name(),
        id: p.id,
        run: p.run,
        pgid: p.phase.pgid()?,
        leader: p.phase.pid(),
    })
}

impl Tracking {
    /// Cgroups when ctrlinit can make them (mounting a private hierarchy only as PID 1),
    /// markers otherwise; says which.
    pub(crate) fn start(role: Role) -> Tracking {
        let nonce = nonce();
        // CTRLINIT_TRACKING=marker chooses markers even where cgroups would work (to try what a
        // default Docker container gets).
        let forced = std::env::var("CTRLINIT_TRACKING").is_ok_and(|v| v == "marker");
        let opened = if forced {
            Err("CTRLINIT_TRACKING=marker".to_string())
        } else {
            Cgroups::open(&nonce, role == Role::Pid1).and_then(usable)
        };
        let cgroups = match opened {
            Ok(c) => {
                info!(
                    "programs' processes are tracked by cgroup ({})",
                    c.base().display()
                );
                Some(c)
            }
            Err(why) => {
                info!("programs' processes are tracked by environment marker ({why})");
                None
            }
        };
        Tracking {
            cgroups,
            nonce,
            groups: HashMap::new(),
            strangers: std::cell::RefCell::new(None),
        }
    }

    /// `cgroup` or `marker`.
    pub(crate) fn mode(&self) -> &'static str {
        if self.cgroups.is_some() {
            "cgroup"
        } else {
            "marker"
        }
    }

    /// The marker of run `run` of program `id`.
    fn marker(&self, id: ProgramId, run: u64) -> String {
        marker_of(&self.nonce, id, run)
    }

    /// What the launcher needs to start a check in a run's tracking (see [`Tagger`]).
    pub(crate) fn tagger(&self) -> Tagger {
        Tagger {
            nonce: self.nonce.clone(),
            base: self.cgroups.as_ref().map(|c| c.base().to_path_buf()),
        }
    }

    /// What a run is started with: its marker (always: it also ties adopted and orphaned
    /// processes to their run) and, in cgroup mode, its group's directory to be created in.
    pub(crate) fn prepare(&mut self, name: &str, id: ProgramId, run: u64) -> RunTag {
        let env = (MARKER, self.marker(id, run));
        let Some(cg) = &self.cgroups else {
            return (env, None);
        };
        // A run whose group cannot be had is known by its marker (and process group) instead.
        let join = cg
            .group(name)
            .and_then(|dir| Cgroups::dir_handle(&dir).map(|fd| (dir, fd)));
        let join = match join {
            Ok((dir, fd)) => {
                if self.groups.get(name).is_none_or(|g| g.dir() != dir) {
                    self.groups.insert(name.to_string(), Group::new(dir));
                }
                Some(fd)
            }
            Err(e) => {
                debug!("{name}: cannot use its cgroup: {e}; its marker tracks it");
                self.groups.remove(name);
                None
            }
        };
        (env, join)
    }

    /// Every process of a run: its cgroup's; or, with markers, its main process and all it
    /// started (whatever they did with sessions and groups, they are its descendants), and the
    /// subtrees that were reparented to ctrlinit when their parent died: those of ctrlinit's
    /// children that carry the run's marker or are in its group. `others(pid)`: `pid` is
    /// another run's main process (its environment need not be read). Reads a few `/proc` files
    /// per process of the run, not every process of the machine.
    pub(crate) fn members(&self, r: RunRef<'_>, others: &dyn Fn(i32) -> bool) -> Vec<i32> {
        self.members_in(&Look::default(), r, others)
    }

    /// What a look at every run's processes at once shares (see [`Look`]). `leaders`: every
    /// run's main process.
    pub(crate) fn look(&self, leaders: &HashSet<i32>) -> Look {
        match &self.cgroups {
            // Groups below a program's own are what `nr_descendants` counts beyond one a
            // program; any, or a count that cannot be read, and each group's sub-tree is
            // walked.
            Some(cg) => {
                let mut count = cg.descendants();
                if count == Some(self.groups.len() + 1) {
                    // The start's probe group, if its child had not ended when it was
                    // removed (a program's group is never named in upper case).
                    Cgroups::remove(&cg.base().join("PROBE"));
                    count = cg.descendants();
                }
                Look {
                    flat: count == Some(self.groups.len()),
                    tree: None,
                    top: cg.top(),
                    listed: self.listed(cg, leaders),
                }
            }
            None => Look {
                flat: false,
                // ctrlinit's children are every main process it started: their parent is
                // known without reading each one's `stat`.
                tree: Some(procs::Tree::scan_knowing(&crate::sys::init::children())),
                top: None,
                listed: None,
            },
        }
    }

    /// Every program's processes from one listing of `/proc` (see [`super::listed`]).
    fn listed(&self, cg: &Cgroups, leaders: &HashSet<i32>) -> Option<super::listed::Listed> {
        let top = cg.base().file_name()?.to_str()?;
        let names: HashMap<&str, &str> = self
            .groups
            .iter()
            .filter_map(|(name, g)| Some((g.dir().file_name()?.to_str()?, name.as_str())))
            .collect();
        super::listed::Listed::take(leaders, top, &names, self.groups.len())
    }

    /// [`Tracking::members`], with what `look` read for every run.
    pub(crate) fn members_in(
        &self,
        look: &Look,
        r: RunRef<'_>,
        others: &dyn Fn(i32) -> bool,
    ) -> Vec<i32> {
        if let Some(g) = self.groups.get(r.name) {
            if let Some(listed) = &look.listed {
                return listed.members(r.name, r.leader);
            }
            if look.flat {
                return Cgroups::pids_below(look.top.as_ref(), g.dir());
            }
            // The groups a program made below its own hold its processes too.
            return Cgroups::subtree_pids(g.dir());
        }
        let mut roots: Vec<i32> = r.leader.into_iter().collect();
        roots.extend(self.reparented(r, others));
        match &look.tree {
            Some(tree) => tree.descendants(&roots),
            None => procs::descendants(&roots),
        }
    }

    /// ctrlinit's children (not `r`'s leader, not another run's main process) that belong to run
    /// `r`: in its process group, or carrying its marker.
    fn reparented(&self, r: RunRef<'_>, others: &dyn Fn(i32) -> bool) -> Vec<i32> {
        let marker = self.marker(r.id, r.run);
        let mut cache = self.strangers.borrow_mut();
        let strangers = cache.get_or_insert_with(|| {
            crate::sys::init::children()
                .into_iter()
                .filter(|&c| !others(c))
                .map(|pid| Stranger {
                    pid,
                    pgrp: procs::stat(pid).map(|s| s.pgrp),
                    marker: procs::marker_value(pid, MARKER.as_bytes()),
                })
                .collect()
        });
        strangers
            .iter()
            .filter(|s| Some(s.pid) != r.leader)
            .filter(|s| {
                s.pgrp == Some(r.pgid) || s.marker.as_deref().is_some_and(|m| of_marker(m, &marker))
            })
            .map(|s| s.pid)
            .collect()
    }

    /// A new turn of the owner loop (or a new batch of reaped processes): what was read of
    /// ctrlinit's children may have changed.
    pub(crate) fn new_turn(&self) {
        self.strangers.borrow_mut().take();
    }

    /// Whether nothing of a run whose main process has ended is left (zombies count until
    /// reaped). With markers: whatever is left of such a run hangs from ctrlinit (every process
    /// whose parent dies is reparented to it, as PID 1 or subreaper), so ctrlinit's children
    /// are all there is to look at. `others` as for [`Tracking::members`].
    pub(crate) fn is_empty(&self, r: RunRef<'_>, others: &dyn Fn(i32) -> bool) -> bool {
        if group_exists(r.pgid) {
            return false;
        }
        if let Some(g) = self.groups.get(r.name) {
            // `populated` counts the groups below too. Once the run is empty, the sub-groups
            // it made go, so a restart does not leave one more folder each time.
            let empty = !g.populated();
            if empty {
                Cgroups::remove_below(g.dir());
            }
            return empty;
        }
        self.reparented(r, others).is_empty()
    }

    /// Sends `signal` to the processes of a run that left its process group (the group itself
    /// was signalled already), then SIGCONT when `cont`.
    pub(crate) fn signal_escaped(
        &self,
        r: RunRef<'_>,
        others: &dyn Fn(i32) -> bool,
        signal: libc::c_int,
        cont: bool,
    ) {
        // Not `cgroup.kill`: on the kernels here (6.18) a group killed through it SIGKILLs
        // every process later created in it with CLONE_INTO_CGROUP, so the program's next run
        // died at birth. Each member of the group and of the groups below it is signalled.
        for pid in self.members(r, others) {
            // getpgid(2) rather than /proc/PID/stat: one call, no file, for every member.
            if nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid)))
                .is_ok_and(|g| g.as_raw() == r.pgid)
            {
                continue;
            }
            debug!(
                "{}: signal {signal} to pid {pid}, which left its process group",
                r.name
            );
            // SAFETY: kill(2) takes no pointers; a process that is gone is only an error.
            unsafe {
                libc::kill(pid, signal);
                if cont {
                    libc::kill(pid, libc::SIGCONT);
                }
            }
        }
    }

    /// SIGKILLs what a check or hook that ended left outside its process group (a job in a
    /// session of its own, `setsid cmd &`): the processes carrying its own marker (see
    /// [`own_marker`]), which hang from ctrlinit once the hook is gone, and their descendants.
    /// Else each check would leave one for good, until the program stops.
    pub(crate) fn end_marked(&self, marker: &str, others: &dyn Fn(i32) -> bool) {
        let roots: Vec<i32> = crate::sys::init::children()
            .into_iter()
            .filter(|&c| !others(c))
            .filter(|&c| procs::marker_value(c, MARKER.as_bytes()).as_deref() == Some(marker))
            .collect();
        if roots.is_empty() {
            return;
        }
        let left = procs::descendants(&roots);
        debug!(
            "{} processes outlived the check or hook that started them; killing them",
            left.len()
        );
        for pid in left {
            // SAFETY: kill(2) takes no pointers; a process that is gone is only an error.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }

    /// The run `pid` belongs to, by its cgroup or its marker: (program id, run).
    pub(crate) fn owner(&self, pid: i32) -> Option<(ProgramId, u64)> {
        let environ = procs::marker_value(pid, MARKER.as_bytes())?;
        // A check's or hook's own marker is its run's plus a serial.
        let mut parts = environ.splitn(4, '.');
        if parts.next()? != self.nonce {
            return None;
        }
        let id = ProgramId::from_index(parts.next()?.parse().ok()?);
        let run = parts.next()?.parse().ok()?;
        Some((id, run))
    }

    /// Whether `pid` belongs to run `r`: in its cgroup, or carrying its marker.
    pub(crate) fn belongs(&self, pid: i32, r: RunRef<'_>) -> bool {
        if let Some(g) = self.groups.get(r.name)
            && Cgroups::subtree_pids(g.dir()).contains(&pid)
        {
            return true;
        }
        self.owner(pid) == Some((r.id, r.run))
    }

    /// Whether program `name` has a cgroup of its own (then membership is decided by it alone).
    pub(crate) fn has_group(&self, name: &str) -> bool {
        self.groups.contains_key(name)
    }

    /// The directory of program `name`'s group, when it has one.
    pub(crate) fn group_dir(&self, name: &str) -> Option<&std::path::Path> {
        self.groups.get(name).map(|g| g.dir())
    }

    /// What a program's group has used (cgroup mode), its files opened below `look`'s top.
    pub(crate) fn usage_in(&self, look: &Look, name: &str) -> Option<Usage> {
        self.groups
            .get(name)
            .map(|g| Cgroups::usage_below(look.top.as_ref(), g.dir()))
    }

    /// A program left the configuration: its (empty) group goes.
    pub(crate) fn forget(&mut self, name: &str) {
        if let Some(g) = self.groups.remove(name) {
            Cgroups::remove(g.dir());
        }
    }

    /// At exit: every group and the sub-tree go.
    pub(crate) fn cleanup(&mut self) {
        // Their open event files go first.
        self.groups.clear();
        if let Some(cg) = &self.cgroups {
            cg.cleanup();
        }
    }
}

/// Whether marker value `m` is `run`'s marker or that of one of its checks or hooks.
fn of_marker(m: &str, run: &str) -> bool {
    m.strip_prefix(run)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// A check's or hook's own marker: `base` (its run's marker, so the program's stop still stops
/// what it leaves) and a serial, so what it leaves can be told from the rest of the run and
/// ended with it.
pub(crate) fn own_marker(base: &str) -> String {
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{base}.{n}")
}

/// The marker of run `run` of program `id` for the ctrlinit of `nonce`.
fn marker_of(nonce: &str, id: ProgramId, run: u64) -> String {
    format!("{nonce}.{}.{run}", id.index())
}

/// Ties a process that is not a run's own (an exec check) to a run, as [`Tracking::prepare`]
/// ties the run: its marker and, in cgroup mode, the run's group (never created here: a check
/// runs only while its run does). So the program's stop also stops what a check leaves.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tagger {
    nonce: String,
    base: Option<std::path::PathBuf>,
}

impl Tagger {
    /// A marker of this ctrlinit's that belongs to no run (a finish hook's: its run is over),
    /// for [`own_marker`].
    pub(crate) fn no_run(&self) -> String {
        format!("{}.hook", self.nonce)
    }

    /// The marker and group of run `run` of program `id` (named `name`).
    pub(crate) fn tag(&self, name: &str, id: ProgramId, run: u64) -> RunTag {
        let group = self
            .base
            .as_ref()
            .and_then(|b| Cgroups::dir_handle(&b.join(name)).ok());
        ((MARKER, marker_of(&self.nonce, id, run)), group)
    }
}

/// `cgroups`, if this kernel can create a child inside one of them (moving a running process
/// in instead would cost every start an RCU grace period: see `process::into_cgroup`).
fn usable(cgroups: Cgroups) -> Result<Cgroups, String> {
    // In a group of its own, as a program's run would be (the sub-tree's root may have
    // controllers enabled, and then holds no process). Upper case: no program can be named so.
    let tried = cgroups
        .group("PROBE")
        .and_then(|dir| Cgroups::dir_handle(&dir))
        .and_then(|fd| crate::process::can_clone_into(&fd))
        .map_err(|e| e.to_string());
    match tried {
        Ok(()) => {
            // Gone once tried (its child has been reaped): then the sub-tree's count of groups
            // is one a program, which `status` relies on to skip listing each group.
            Cgroups::remove(&cgroups.base().join("PROBE"));
            Ok(cgroups)
        }
        Err(e) => {
            cgroups.cleanup();
            Err(format!(
                "this kernel cannot create a process inside a cgroup (clone3 with CLONE_INTO_CGROUP, Linux 5.7): {e}"
            ))
        }
    }
}

/// A short random word that tells this ctrlinit's markers and cgroups from any other's.
fn nonce() -> String {
    let mut bytes = [0u8; 6];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer given.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        bytes.copy_from_slice(&t.to_le_bytes()[..6]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checks_own_marker_is_of_its_run_and_of_no_other() {
        let run = marker_of("abc", ProgramId::from_index(3), 7);
        let own = own_marker(&run);
        assert!(of_marker(&run, &run));
        assert!(of_marker(&own, &run));
        assert_ne!(own, own_marker(&run), "each check its own");
        // Run 7 is not run 70, nor a marker of no run.
        assert!(!of_marker(
            &marker_of("abc", ProgramId::from_index(3), 70),
            &run
        ));
        assert!(!of_marker("abc.hook.1", &run));
    }
}

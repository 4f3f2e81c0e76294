//! Forking daemons (`type = "forking"`): once the launcher exited 0, the pid file is awaited
//! (see `checks::readiness`); the pid it names is adopted as the run's main process only if it belongs to
//! the run (its cgroup, its marker, or its process group), since a pid file can name anything.

use super::*;
use crate::supervisor::core::program::Phase;
use crate::sys::procs;

impl Runner {
    /// Starts waiting for program `id`'s pid file (run `run`).
    pub(super) fn await_pid_file(&mut self, id: ProgramId, run: u64) {
        if let Some(p) = self.core.program(id) {
            let spec = Arc::clone(&p.spec);
            let evidence = self.evidence.entry(id).or_default();
            self.probes.await_pid_file(id, run, &spec, evidence);
        }
    }

    /// The pid file of run `run` of program `id` names `pid`: `Adopt` when that process is
    /// alive and of the run, else `AdoptRefused` saying why.
    pub(super) fn pid_file_read(&mut self, id: ProgramId, run: u64, pid: i32) -> Option<Input> {
        let p = self.core.program(id)?;
        let Phase::Forked { pgid, .. } = p.phase else {
            return None;
        };
        if p.run != run {
            return None;
        }
        let file = p
            .spec
            .pidfile
            .as_deref()
            .map_or_else(String::new, |f| f.display().to_string());
        let refuse = |why: String| Input::AdoptRefused { id, run, why };
        // Held from before the checks: if the process dies while they run and its number is
        // reused, the pidfd still names the one they looked at, and says it is gone.
        let pidfd = procs::pidfd(pid).ok();
        let Some(stat) = procs::stat(pid).filter(|_| procs::zombie_exit(pid).is_none()) else {
            return Some(refuse(format!(
                "the pid file {file} names pid {pid}, which is not running (the daemon died, or the file is not its)"
            )));
        };
        if let Some(other) = self.other_run_of(id, run, pid, stat.pgrp) {
            return Some(refuse(format!(
                "the pid file {file} names pid {pid} ({}), a process of {other}, not of this run: refused",
                procs::comm(pid).unwrap_or_default()
            )));
        }
        if !self.of_run(p, pid, stat.pgrp, pgid) {
            return Some(refuse(format!(
                "the pid file {file} names pid {pid} ({}), which its launcher did not start: refused",
                procs::comm(pid).unwrap_or_default()
            )));
        }
        if pidfd.as_ref().is_some_and(procs::pidfd_exited) {
            return Some(refuse(format!(
                "the pid file {file} names pid {pid}, which ended while it was checked"
            )));
        }
        debug!(
            "{}: pid file {file} names pid {pid}, a process of this run",
            p.name()
        );
        if let Some(fd) = pidfd {
            self.adopted.hold(id, pid, fd);
        }
        Some(Input::Adopt {
            id,
            run,
            pid,
            pgid: stat.pgrp,
        })
    }

    /// Whether `pid` (in process group `pgrp`) belongs to program `p`'s run, whose launcher led
    /// group `launcher_pgid`: in its cgroup (where it has one, that is the whole answer: nothing
    /// leaves a cgroup), or carrying its marker, or, with no marker at all (a daemon that
    /// emptied its environment), still in the launcher's process group.
    fn of_run(
        &self,
        p: &crate::supervisor::core::program::Program,
        pid: i32,
        pgrp: i32,
        launcher_pgid: i32,
    ) -> bool {
        let Some(r) = tracking::run_of(p) else {
            return false;
        };
        if self.tracking.belongs(pid, r) {
            return true;
        }
        if self.tracking.has_group(r.name) {
            return false;
        }
        pgrp == launcher_pgid && procs::marker_value(pid, tracking::MARKER.as_bytes()).is_none()
    }

    /// The other program whose process `pid` is (its main process or a process of its run's
    /// group, or carrying its run's marker), in words: a launcher's old number can be reused by
    /// another run, and every run leads a group of that number.
    fn other_run_of(&self, id: ProgramId, run: u64, pid: i32, pgrp: i32) -> Option<String> {
        let others = || self.core.programs().iter().filter(move |q| q.id != id);
        if let Some(q) =
            others().find(|q| q.phase.pid() == Some(pid) || q.phase.pgid() == Some(pgrp))
        {
            return Some(format!("program {}", q.name()));
        }
        match self.tracking.owner(pid) {
            Some((oid, orun)) if (oid, orun) != (id, run) => {
                Some(self.core.program(oid).map_or_else(
                    || "another run".to_string(),
                    |q| format!("program {}", q.name()),
                ))
            }
            _ => None,
        }
    }
}

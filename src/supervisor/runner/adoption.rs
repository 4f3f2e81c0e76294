//! Forking daemons (`type = "forking"`): once the launcher exited 0, the pid file is awaited
//! (see `probes`); the pid it names is adopted as the run's main process only if it belongs to
//! the run (its cgroup, its marker, or its process group), since a pid file can name anything.

use super::*;
use crate::supervisor::program::Phase;
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
    pub(super) fn pid_file_read(&self, id: ProgramId, run: u64, pid: i32) -> Option<Input> {
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
        let Some(stat) = procs::stat(pid).filter(|_| procs::zombie_exit(pid).is_none()) else {
            return Some(refuse(format!(
                "the pid file {file} names pid {pid}, which is not running (the daemon died, or the file is not its)"
            )));
        };
        let of_run =
            stat.pgrp == pgid || tracking::run_of(p).is_some_and(|r| self.tracking.belongs(pid, r));
        if !of_run {
            return Some(refuse(format!(
                "the pid file {file} names pid {pid} ({}), which its launcher did not start: refused",
                procs::comm(pid).unwrap_or_default()
            )));
        }
        debug!(
            "{}: pid file {file} names pid {pid}, a process of this run",
            p.name()
        );
        Some(Input::Adopt {
            id,
            run,
            pid,
            pgid: stat.pgrp,
        })
    }
}

//! Reaping: every exited child, handed to its owner (a check, a program run) or counted as an
//! orphan, and the process groups that emptied.

use super::*;

impl Runner {
    pub(super) fn reap(&mut self) {
        let mut reaped = std::mem::take(&mut self.reaped);
        reaped.clear();
        reap_exited(&mut reaped);
        // Children exited: what was read of them before is stale.
        self.tracking.new_turn();
        let mut orphans = 0u64;
        for &(pid, exit) in &reaped {
            // First, for every check (an external's too): its marker is forgotten with it, and
            // what it started in a session of its own ends.
            self.end_what_it_left(pid);
            if self.external_exec_reaped(pid, exit) {
                // An external's exec check leads a process group of its own, as every check.
                end_leftovers(pid);
                continue;
            }
            if self.probes.owns(pid) {
                if let Some(input) = self.probes.reaped(pid, exit, &self.core) {
                    self.feed(input);
                }
            } else if self.health.owns(pid) {
                if let Some(input) = self.health.reaped(pid, exit, &self.core) {
                    self.feed(input);
                }
            } else if let Some(pgid) = self.core.group_of(pid) {
                // A program that had the terminal's foreground ended: take it back, so the
                // terminal does not belong to a group that is gone.
                let had_terminal = self.core.programs().iter().any(|p| {
                    p.phase.pid() == Some(pid) && p.spec.stdio == crate::config::StdioMode::Inherit
                });
                if had_terminal {
                    crate::sys::tty::take_foreground_back();
                }
                // Is anything of the run left to stop (its group, and what left it)?
                let group_empty = match self
                    .core
                    .programs()
                    .iter()
                    .find(|p| p.phase.pid() == Some(pid))
                    .and_then(tracking::run_of)
                {
                    Some(r) => self.tracking.is_empty(r, &|pid| self.core.owns_pid(pid)),
                    None => !group_exists(pgid),
                };
                let oom_killed = self.oom_killed(exit);
                self.feed(Input::Reaped {
                    pid,
                    exit,
                    group_empty,
                    oom_killed,
                });
            } else {
                // An orphan (or a program's child): reaped, counted, nothing to decide. A burst
                // of thousands costs one waitpid each and no trip through the core.
                orphans += 1;
            }
        }
        // Orphans are reparented when their parent dies, and a run's end may leave some: look.
        if !reaped.is_empty() {
            self.look_for_strays();
        }
        if orphans > 0 {
            self.orphans_reaped += orphans;
            debug!(
                "reaped {orphans} orphaned processes ({} so far)",
                self.orphans_reaped
            );
            // Their deaths may have emptied a program's process group.
            for input in self.emptied_groups() {
                self.feed(input);
            }
        }
        self.reaped = reaped;
    }

    /// `pid` ended: if it was a check or a hook, what it left running ends with it.
    fn end_what_it_left(&mut self, pid: i32) {
        // A check or a hook leads a process group of its own: what it left running there
        // (`sleep 1000 &`) ends with it, as a run's leftovers end with the run.
        if self.probes.owns(pid) || self.health.owns(pid) || self.core.is_hook(pid) {
            end_leftovers(pid);
        }
        // And what it started in a session of its own (`setsid cmd &`), by its own marker.
        if let Some(marker) = self.launcher.ended(pid) {
            self.tracking
                .end_marked(&marker, &|p| self.core.owns_pid(p));
        }
    }

    /// Whether a SIGKILL death was the OOM killer's: the cgroup's count moved since the last look
    /// (read only for SIGKILLs; with several at once, each is credited while the count moves).
    pub(super) fn oom_killed(&mut self, exit: Exit) -> bool {
        if exit.signal() != Some(libc::SIGKILL) {
            return false;
        }
        let now = self.oom_counter.as_ref().and_then(|c| c.count());
        let moved = matches!((self.oom_kills, now), (Some(before), Some(after)) if after > before);
        if now.is_some() {
            self.oom_kills = now;
        }
        moved
    }

    /// `GroupGone` for every program whose leader is gone and whose group is now empty.
    pub(super) fn emptied_groups(&self) -> Vec<Input> {
        self.core
            .draining_groups()
            .filter(
                |&(id, pgid)| match self.core.program(id).and_then(tracking::run_of) {
                    Some(r) => self.tracking.is_empty(r, &|pid| self.core.owns_pid(pid)),
                    None => !group_exists(pgid),
                },
            )
            .map(|(id, _)| Input::GroupGone { id })
            .collect()
    }
}

/// SIGKILLs what is left in the process group `pgid` of a check or hook that ended (nothing, for
/// most): a process group outlives its leader, so a background job would run on for good.
fn end_leftovers(pgid: i32) {
    if group_exists(pgid) {
        debug!("process group {pgid} outlived its check or hook; killing what is left");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(-pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

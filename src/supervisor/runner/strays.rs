//! Strays: processes reparented to ctrlinit that belong to no program (a `docker exec` session
//! that left a daemon behind, what a removed program left). They are reaped when they exit;
//! with `[init] orphans = "kill"` they are also stopped (SIGTERM, then SIGKILL) once they have
//! been strays for `orphan_grace`. They are looked for when something was reaped (orphans are
//! reparented when their parent dies); but a process reparented to ctrlinit whose parent was not
//! ctrlinit's child (a `docker exec` shell's background job, a double fork inside a program) makes
//! no sound, so with `orphans = "kill"`, and only then, ctrlinit also looks every
//! `orphan_grace` (at least every second, reading one `/proc` file per ctrlinit thread). With the
//! default `orphans = "reap"` nothing is scanned: an idle init has no timer.

use super::*;
use crate::config::OrphanPolicy;

/// How long a stray gets between SIGTERM and SIGKILL.
const STRAY_KILL_GRACE: Duration = Duration::from_secs(2);

/// The shortest time between two looks for strays.
const MIN_SCAN_PERIOD: Duration = Duration::from_secs(1);

impl Runner {
    /// Looks at ctrlinit's children for processes that belong to no program.
    pub(super) fn look_for_strays(&mut self) {
        // With `orphans = "reap"` nothing is done about strays: not worth a look (a burst of
        // thousands of orphans must cost one waitpid each, nothing more).
        if self.config.init.orphans != OrphanPolicy::Kill || self.core.shutting_down() {
            return;
        }
        let now = Instant::now();
        let children = crate::sys::init::children();
        self.strays.retain(|pid, _| children.contains(pid));
        for pid in children {
            if self.strays.contains_key(&pid) || self.belongs_somewhere(pid) {
                continue;
            }
            debug!("pid {pid} belongs to no program: a stray");
            self.strays.insert(
                pid,
                Stray {
                    seen: now,
                    termed: None,
                },
            );
        }
    }

    /// Whether `pid` is a program's (its main process, a hook, a check, or a process of a live
    /// run by its cgroup or marker).
    fn belongs_somewhere(&self, pid: i32) -> bool {
        if self.core.owns_pid(pid)
            || self.probes.owns(pid)
            || self.health.owns(pid)
            || self.external_execs.contains_key(&pid)
        {
            return true;
        }
        let live_run = |id, run| {
            self.core
                .program(id)
                .is_some_and(|p| p.run == run && p.phase.is_live())
        };
        if let Some((id, run)) = self.tracking.owner(pid)
            && live_run(id, run)
        {
            return true;
        }
        self.core
            .programs()
            .iter()
            .filter_map(tracking::run_of)
            .any(|r| self.tracking.belongs(pid, r))
    }

    /// When strays must next be looked for or stopped (`orphans = "kill"` only).
    pub(super) fn stray_deadline(&mut self) -> Option<Instant> {
        if self.config.init.orphans != OrphanPolicy::Kill || self.core.shutting_down() {
            self.next_stray_scan = None;
            return None;
        }
        let grace = self.config.init.orphan_grace;
        let scan = *self
            .next_stray_scan
            .get_or_insert_with(|| Instant::now() + grace.max(MIN_SCAN_PERIOD));
        self.strays
            .values()
            .map(|s| match s.termed {
                Some(t) => t + STRAY_KILL_GRACE,
                None => s.seen + grace,
            })
            .chain([scan])
            .min()
    }

    /// The strays' timer: a look for new ones when due, then stops those whose grace is over.
    /// Returns whether anything changed (a routine look that found nothing is not work).
    pub(super) fn on_stray_timer(&mut self) -> bool {
        let now = Instant::now();
        let known = self.strays.len();
        if self.next_stray_scan.is_some_and(|t| t <= now) {
            self.next_stray_scan = None;
            self.look_for_strays();
        }
        let found = self.strays.len() != known;
        self.stop_strays() || found
    }

    /// Stops the strays whose grace is over: SIGTERM first, SIGKILL if they outlive it. Returns
    /// whether it signalled any.
    fn stop_strays(&mut self) -> bool {
        let mut signalled = false;
        let now = Instant::now();
        let grace = self.config.init.orphan_grace;
        for (&pid, s) in self.strays.iter_mut() {
            match s.termed {
                None if s.seen + grace <= now => {
                    info!(
                        "stopping stray pid {pid} ({}): it belongs to no program ([init] orphans = \"kill\")",
                        crate::sys::procs::comm(pid).unwrap_or_default()
                    );
                    // SAFETY: kill(2) takes no pointers; a process that is gone is only an error.
                    unsafe {
                        libc::kill(pid, libc::SIGTERM);
                        libc::kill(pid, libc::SIGCONT);
                    }
                    s.termed = Some(now);
                    signalled = true;
                }
                Some(t) if t + STRAY_KILL_GRACE <= now => {
                    warn!("stray pid {pid} outlived SIGTERM; sending SIGKILL");
                    // SAFETY: as above.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    s.termed = Some(now + Duration::from_secs(3600));
                    signalled = true;
                }
                _ => {}
            }
        }
        signalled
    }
}

//! The syslog intake's table of runs (`[init] syslog`): the intake runs on the log thread and
//! attributes a sender by its ancestry ([`crate::sys::ancestry`]); the owner loop, which owns
//! the runs, sends it each running program's main process and session whenever they change
//! (checked once the inputs of a turn are handled: a comparison of a few integers per program,
//! and only when syslog is on).
//!
//! A run just spawned is sent at once, before the core has even heard of it: one turn spawns
//! every program that may start, and the first one's start-up lines would otherwise reach the
//! log thread before the table that names it, and land in the `syslog` stream.

use super::*;
use crate::logs::Command as LogCommand;
use crate::logs::syslog::run::Run;
use crate::model::ProgramId;
use crate::sys::ancestry::Owners;

/// What the intake was last told: (program, main process, session) of each run.
pub(super) type Shared = Vec<(ProgramId, i32, i32)>;

impl Runner {
    /// Sends the intake the runs, when they changed since it was last told.
    pub(super) fn share_owners(&mut self) {
        let Some(last) = &mut self.syslog_owners else {
            return;
        };
        let now: Shared = self
            .core
            .programs()
            .iter()
            .filter_map(|p| Some((p.id, p.phase.pid()?, p.phase.pgid()?)))
            .collect();
        if *last == now {
            return;
        }
        *last = now;
        let owners = owners_of(&self.core, last);
        let _ = self.opts.logs.send(LogCommand::SyslogOwners(owners));
    }

    /// Adds program `id`'s run, spawned just now as `pid` (the leader of its own session), to
    /// the table and sends it.
    pub(super) fn share_spawned(&mut self, id: ProgramId, pid: i32) {
        let Some(last) = &mut self.syslog_owners else {
            return;
        };
        last.retain(|&(other, _, _)| other != id);
        last.push((id, pid, pid));
        let owners = owners_of(&self.core, last);
        let _ = self.opts.logs.send(LogCommand::SyslogOwners(owners));
    }
}

/// The intake's table of the runs in `runs`.
fn owners_of(core: &Core, runs: &Shared) -> Owners<Run> {
    let mut owners = Owners::default();
    for &(id, main, session) in runs {
        if let Some(p) = core.program(id) {
            let run = Run {
                name: p.name().to_string(),
                session,
            };
            owners.add(run, main, session);
        }
    }
    owners
}

//! The syslog intake's table of runs (`[init] syslog`): the intake runs on the log thread and
//! attributes a sender by its ancestry ([`crate::sys::ancestry`]); the owner loop, which owns
//! the runs, sends it each running program's main process and session whenever they change
//! (checked after every input the core handles, so a run spawned just now is in the table
//! before the turn ends: a comparison of a few integers per program, and only when syslog is
//! on).

use super::Runner;
use crate::logs::Command as LogCommand;
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
        let mut owners = Owners::default();
        for &(id, main, session) in &now {
            if let Some(p) = self.core.program(id) {
                owners.add(p.name().to_string(), main, session);
            }
        }
        *last = now;
        let _ = self.opts.logs.send(LogCommand::SyslogOwners(owners));
    }
}

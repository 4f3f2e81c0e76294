//! The owner loop's part of external dependencies' checks: their tasks (started at boot and
//! after a reload), their results fed to the core, and their `exec` checks, which are
//! processes this loop spawns and reaps like every other (one reaper).

use super::*;
use crate::config::{ExternalCheck, Kind, ProgramSpec};

impl Runner {
    /// A check task's report: a result for the core, or an `exec` check to start.
    pub(super) fn on_external_event(&mut self, event: ProbeEvent) {
        match event {
            ProbeEvent::External { mailbox } => {
                let Some(r) = mailbox.take() else { return };
                let name = mailbox.name.clone();
                match r.passed {
                    Some(passed) => self.feed(Input::ExternalChecked {
                        name,
                        passed,
                        output: r.output,
                        peer_run: r.peer_run,
                    }),
                    None => self.feed(Input::ExternalNoVerdict {
                        name,
                        output: r.output,
                    }),
                }
            }
            ProbeEvent::ExternalExecDue { name, done } => self.start_external_exec(name, done),
            ProbeEvent::ExternalExecOverdue { pid } => {
                if let Some(x) = self.external_execs.get_mut(&pid) {
                    x.timed_out = true;
                    signal_group(pid, Signal::SIGKILL);
                }
            }
            _ => {}
        }
    }

    fn start_external_exec(&mut self, name: String, done: oneshot::Sender<()>) {
        let Some(spec) = self.config.externals.iter().find(|e| e.name == name) else {
            return;
        };
        let ExternalCheck::Exec(argv) = &spec.check else {
            return;
        };
        // The check runs as ctrlinit's own child with ctrlinit's environment, as `root` does.
        let mut as_program =
            ProgramSpec::new(&format!("external.{name}"), argv.clone(), Kind::Oneshot);
        as_program.inherit_env = true;
        match self.launcher.untracked_check(&as_program, argv) {
            Ok(pid) => {
                let tx = self.probe_tx.clone();
                let timeout = spec.timeout;
                let deadline = tokio::spawn(async move {
                    tokio::time::sleep(timeout).await;
                    let _ = tx.send(ProbeEvent::ExternalExecOverdue { pid });
                });
                self.external_execs.insert(
                    pid,
                    ExternalExec {
                        name,
                        started: Instant::now(),
                        deadline,
                        timed_out: false,
                        _done: done,
                    },
                );
            }
            Err(e) => self.feed(Input::ExternalChecked {
                name,
                passed: false,
                output: e.message,
                peer_run: None,
            }),
        }
    }

    /// An external's `exec` check ended: its result for the core.
    pub(super) fn external_exec_reaped(&mut self, pid: i32, exit: Exit) -> bool {
        let Some(x) = self.external_execs.remove(&pid) else {
            return false;
        };
        x.deadline.abort();
        let took = crate::supervisor::core::notices::fmt_duration(x.started.elapsed());
        let (passed, output) = if x.timed_out {
            (false, "timed out; killed".to_string())
        } else {
            (exit == Exit::Code(0), format!("{exit} after {took}"))
        };
        self.feed(Input::ExternalChecked {
            name: x.name,
            passed,
            output,
            peer_run: None,
        });
        true
    }

    /// Starts the checks of the externals in force (again, after a reload).
    pub(super) fn start_external_checks(&mut self) {
        let specs = self.config.externals.clone();
        self.external_checks.start(&specs, &self.probe_tx);
    }
}

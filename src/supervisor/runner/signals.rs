//! Signals: the container's stop requests, reloads, reopening logs, and what a `--` command
//! gets forwarded.

use super::*;

impl Runner {
    pub(super) fn on_signals(&mut self, arrived: &[Arrived]) {
        let mut reap = false;
        for a in arrived {
            if a.signo == libc::SIGCHLD {
                reap = true;
            } else if self.opts.forward_to.is_some() {
                self.passthrough_signal(a);
            } else {
                self.own_signal(a);
            }
        }
        if reap {
            self.reap();
        }
    }

    /// Without a `--` command: TERM, INT and QUIT stop the container (a second TERM or INT
    /// kills at once), HUP reloads, USR1 reopens the log files.
    fn own_signal(&mut self, a: &Arrived) {
        match a.signal() {
            Some(s @ (Signal::SIGTERM | Signal::SIGINT | Signal::SIGQUIT)) => {
                if self.core.shutting_down() && s != Signal::SIGQUIT {
                    self.feed(Input::ForceKill);
                } else {
                    let reason = stop_reason(s, a.sender);
                    self.feed(Input::Shutdown {
                        reason,
                        signal: None,
                    });
                }
            }
            Some(Signal::SIGHUP) => self.ask_reload(None),
            Some(Signal::SIGUSR1) => {
                let _ = self.opts.logs.send(LogCommand::Reopen);
            }
            _ => debug!("ignoring signal {}", a.signo),
        }
    }

    /// With a `--` command, as tini does: TERM, INT and QUIT start the container's stop and
    /// reach the command as they came (a repeat is forwarded again, never turned into a kill);
    /// every other signal is forwarded to its process group as it came. A SIGPIPE ctrlinit
    /// raised itself (a write of its own to a closed pipe) is not the command's. Not PID 1,
    /// TSTP, TTIN and TTOU stop ctrlinit too, once forwarded.
    fn passthrough_signal(&mut self, a: &Arrived) {
        if a.signo == libc::SIGPIPE && a.sender == std::process::id() as i32 {
            return;
        }
        if let Some(s @ (Signal::SIGTERM | Signal::SIGINT | Signal::SIGQUIT)) = a.signal()
            && !self.core.shutting_down()
        {
            let reason = stop_reason(s, a.sender);
            self.feed(Input::Shutdown {
                reason,
                signal: Some(s),
            });
            return;
        }
        self.forward(a.signo);
        if self.opts.role == Role::Subreaper
            && matches!(a.signo, libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU)
        {
            // A shell's job (dumb-init's behaviour): the command stopped, so does ctrlinit, and
            // the shell sees its job stopped; SIGCONT resumes ctrlinit, which forwards it.
            crate::sys::init::stop_self();
        }
    }

    /// Sends signal `signo` to the `--` command's process group, as it came.
    fn forward(&self, signo: i32) {
        let Some(name) = &self.opts.forward_to else {
            return;
        };
        let Some(pgid) = self
            .core
            .id_of(name)
            .and_then(|id| self.core.program(id))
            .filter(|p| p.phase.pid().is_some())
            .and_then(|p| p.phase.pgid())
        else {
            debug!("signal {signo}: {name} is not running; not forwarded");
            return;
        };
        debug!("forwarding signal {signo} to {name} (process group {pgid})");
        // SAFETY: kill(2) takes no pointers; a group that is gone is only an error.
        unsafe {
            libc::kill(-pgid, signo);
        }
    }
}

/// `received SIGTERM from pid 7`.
fn stop_reason(signal: Signal, sender: i32) -> String {
    let name = signal.as_str();
    match sender {
        0 => format!("received {name}"),
        pid => format!("received {name} from pid {pid}"),
    }
}

//! Control requests and reloads: each answered from the core's state, a reload read off the
//! loop and applied when read.

use super::*;

impl Runner {
    /// Answers one control request.
    pub(super) fn on_control(&mut self, request: Control) {
        match request {
            Control::Status { names, reply } => {
                let mut answer = control::status(&self.core, self.seq, &names, Instant::now());
                if let Ok((_, programs)) = &mut answer {
                    self.add_processes(programs);
                }
                let _ = reply.send(answer);
            }
            Control::Change {
                kind,
                names,
                all,
                reply,
            } => {
                let answer =
                    control::plan_change(&self.core, kind, &names, all).map(|(input, plan)| {
                        self.feed(input);
                        plan
                    });
                let _ = reply.send(answer);
            }
            Control::Signal {
                signal,
                names,
                reply,
            } => {
                let answer =
                    control::plan_signal(&self.core, &signal, &names).map(|(inputs, sent)| {
                        for input in inputs {
                            self.feed(input);
                        }
                        sent
                    });
                let _ = reply.send(answer);
            }
            Control::Health { strict, reply } => {
                let _ = reply.send(control::health(&self.core, strict));
            }
            // Answered once the configuration is read (off this loop) and applied.
            Control::Reload { reply } => match self.reload_refusal() {
                Some(refusal) => {
                    let _ = reply.send(Err(refusal));
                }
                None => self.start_reload(Some(reply)),
            },
            Control::Shutdown { reply } => {
                self.feed(Input::Shutdown {
                    signal: None,
                    reason: "requested over the control socket".into(),
                });
                let _ = reply.send("shutting down".into());
            }
            Control::Graph { reply } => {
                let _ = reply.send(control::graph(&self.core));
            }
            Control::Probe { reply } => {
                let _ = reply.send(telemetry::probe_answer(&self.core));
            }
            Control::Metrics { reply } => {
                let foreign = self.notify.as_ref().map_or(0, |n| n.foreign);
                let _ = reply.send(telemetry::metrics(&self.core, self.orphans_reaped, foreign));
            }
        }
    }

    /// Why a reload cannot start now: while shutting down, or while another is under way.
    pub(super) fn reload_refusal(&self) -> Option<Refusal> {
        if self.core.shutting_down() {
            return Some(Refusal::new(
                ErrorKind::Refused,
                "the container is shutting down",
            ));
        }
        if self.reading_config || self.core.reload_pending() {
            return Some(Refusal::new(
                ErrorKind::Refused,
                "a reload is already in progress",
            ));
        }
        None
    }

    /// Starts a reload: the configuration is read and validated on a thread of its own (a large
    /// or slow file never holds up reaping, restarts or requests), then [`Runner::reload_read`]
    /// applies it and answers `reply` (`None`: SIGHUP, which logs the outcome).
    pub(super) fn start_reload(&mut self, reply: Option<oneshot::Sender<Result<String, Refusal>>>) {
        let (load, overrides) = (self.opts.load.clone(), self.opts.overrides.clone());
        let tx = self.reloads_tx.clone();
        // The reply travels with the work (should the thread not start, dropping it tells the
        // client the request failed).
        let spawned = std::thread::Builder::new()
            .name("ctrlinit-reload".into())
            .spawn(move || {
                let loaded = crate::config::load_with(&load, &overrides);
                let _ = tx.send(Reloaded { loaded, reply });
            });
        match spawned {
            Ok(_) => self.reading_config = true,
            Err(e) => error!("reload refused: cannot start reading the configuration: {e}"),
        }
    }

    /// A configuration was read for a reload: on success the core stops what was removed or
    /// changed, then switches; on failure the running configuration stays, and every error is
    /// returned.
    pub(super) fn reload_read(&mut self, done: Reloaded) {
        self.reading_config = false;
        let answer = match done.loaded {
            _ if self.core.shutting_down() => Err(Refusal::new(
                ErrorKind::Refused,
                "the container is shutting down",
            )),
            Err(errors) => {
                for w in &errors.warnings {
                    warn!("reload: {w}");
                }
                Err(Refusal::new(ErrorKind::Failed, errors.to_string()))
            }
            Ok(config) => {
                self.cold_memory = ColdMemory::AfterStartup;
                // Said in ctrlinit's log and in the answer, as `check` and the start say them.
                let mut summary = self.core.reload_summary(&config);
                for w in &config.warnings {
                    warn!("reload: {w}");
                    summary.push_str(&format!("\nwarning: {w}"));
                }
                self.pending_config = Some(Arc::new(config.clone()));
                self.feed(Input::Reload(Box::new(config)));
                Ok(summary)
            }
        };
        match (done.reply, answer) {
            (Some(reply), answer) => {
                let _ = reply.send(answer);
            }
            (None, Ok(summary)) => info!("SIGHUP: reload: {summary}"),
            (None, Err(e)) => error!(
                "SIGHUP: reload refused, keeping the running configuration: {}",
                e.message
            ),
        }
    }

    /// Each running program's processes (its group and those that left it) and, with cgroups,
    /// what its group has used.
    fn add_processes(&self, programs: &mut [crate::model::protocol::ProgramStatus]) {
        for status in programs.iter_mut() {
            let Some(p) = self
                .core
                .id_of(&status.name)
                .and_then(|id| self.core.program(id))
            else {
                continue;
            };
            if let Some(r) = tracking::run_of(p) {
                let mut pids = self.tracking.members(r, &|pid| self.core.owns_pid(pid));
                pids.sort_unstable();
                status.processes = Some(pids.len() as u32);
                status.pids = pids;
            }
            if let Some(u) = self.tracking.usage(p.name()) {
                status.memory_bytes = u.memory_bytes;
                status.cpu_usec = u.cpu_usec;
            }
            status.tracking = Some(self.tracking.mode().to_string());
        }
    }
}

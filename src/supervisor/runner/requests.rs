//! Control requests and reloads: each answered from the core's state, a reload read off the
//! loop and applied when read.

use std::collections::HashMap;

use super::*;

/// Reloads that may wait for the one under way.
const QUEUED_RELOADS: usize = 16;

/// Tells a reload's asker (a client, or SIGHUP's log line) it was refused.
fn refuse_reload(reply: Option<ReloadReply>, refusal: Refusal) {
    match reply {
        Some(reply) => {
            let _ = reply.send(Err(refusal));
        }
        None => error!("SIGHUP: reload refused: {}", refusal.message),
    }
}

/// How long a look at the programs' processes serves `status` answers (unless a state changes).
const PROCESSES_FOR: Duration = Duration::from_secs(1);

impl Runner {
    /// Answers one control request.
    pub(super) fn on_control(&mut self, request: Control) {
        match request {
            Control::Status {
                names,
                detail,
                reply,
            } => {
                let mut answer = control::status(&self.core, self.seq, &names, Instant::now());
                if let Ok((_, programs)) = &mut answer
                    && detail > Detail::States
                {
                    self.add_processes(programs, detail == Detail::Usage);
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
            Control::Reload { reply } => self.ask_reload(Some(reply)),
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
                let mut answer = telemetry::probe_answer(&self.core);
                self.network_readiness(&mut answer);
                let _ = reply.send(answer);
            }
            Control::Metrics { reply } => {
                let _ = reply.send(self.metrics());
            }
            Control::Snapshot {
                names,
                detail,
                externals,
                reply,
            } => {
                let _ = reply.send(self.snapshot(&names, detail, externals));
            }
        }
    }

    /// The metrics: the core's figures and those of the parts beside it (notify, the
    /// network watch, syslog).
    fn metrics(&self) -> telemetry::Metrics {
        let foreign = self.notify.as_ref().map_or(0, |n| n.foreign);
        let mut m = telemetry::metrics(&self.core, self.orphans_reaped, foreign);
        self.network_metrics(&mut m);
        m.notify_rate_limited = self.notify.as_ref().map_or(0, |n| n.rate_limited);
        if let Some(c) = &self.opts.syslog {
            m.syslog = c.figures();
        }
        m
    }

    /// Everything one `status` shows, taken in this one turn so the programs, the network
    /// watch and the externals agree with each other.
    fn snapshot(
        &mut self,
        names: &[String],
        detail: Detail,
        externals: bool,
    ) -> control::Answer<control::Snapshot> {
        let now = Instant::now();
        let (seq, mut programs) = control::status(&self.core, self.seq, names, now)?;
        if detail > Detail::States {
            self.add_processes(&mut programs, detail == Detail::Usage);
        }
        Ok(control::Snapshot {
            seq,
            programs,
            network: self.network_status(),
            externals: if externals {
                control::externals(&self.core, now)
            } else {
                Vec::new()
            },
        })
    }

    /// A reload asked for (`reply`: the client's; `None`: SIGHUP). While another is under way
    /// (its file being read, or its changed programs still stopping, though the client that
    /// asked for it has had its answer), it waits its turn instead of being refused: it starts
    /// once that one is applied. At most [`QUEUED_RELOADS`] wait, all served by one read.
    pub(super) fn ask_reload(&mut self, reply: Option<ReloadReply>) {
        let refusal = if self.core.shutting_down() {
            "the container is shutting down"
        } else if !self.reading_config && !self.core.reload_pending() {
            return self.start_reload(vec![reply]);
        } else if self.queued_reloads.len() < QUEUED_RELOADS {
            return self.queued_reloads.push(reply);
        } else {
            "a reload is already in progress, and others wait for it"
        };
        refuse_reload(reply, Refusal::new(ErrorKind::Refused, refusal));
    }

    /// After a turn of the loop: the reloads that waited start once none is under way (or are
    /// refused once the container stops).
    pub(super) fn start_queued_reload(&mut self) {
        if self.queued_reloads.is_empty() || self.reading_config || self.core.reload_pending() {
            return;
        }
        let waiting = std::mem::take(&mut self.queued_reloads);
        if self.core.shutting_down() {
            for reply in waiting {
                let refusal = Refusal::new(ErrorKind::Refused, "the container is shutting down");
                refuse_reload(reply, refusal);
            }
            return;
        }
        self.start_reload(waiting);
    }

    /// Starts a reload: the configuration is read and validated on a thread of its own (a large
    /// or slow file never holds up reaping, restarts or requests), then [`Runner::reload_read`]
    /// applies it and answers each of `replies` (`None`: SIGHUP, which logs the outcome).
    fn start_reload(&mut self, replies: Vec<Option<ReloadReply>>) {
        let (load, overrides) = (self.opts.load.clone(), self.opts.overrides.clone());
        let tx = self.reloads_tx.clone();
        // The replies travel with the work (should the thread not start, dropping them tells
        // the clients the request failed).
        let spawned = std::thread::Builder::new()
            .name("ctrlinit-reload".into())
            .spawn(move || {
                // Refused, as at start, when it cannot fit under the descriptor limit.
                let loaded = crate::config::load_with(&load, &overrides)
                    .and_then(|c| crate::config::descriptors::fit(&c, &load.dir).map(|()| c));
                let _ = tx.send(Reloaded { loaded, replies });
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
        // The log says a refused reload too, not only the clients that asked.
        if let Err(e) = &answer
            && done.replies.iter().any(Option::is_some)
        {
            error!(
                "reload (asked over the control socket) refused, keeping the running configuration: {}",
                e.message
            );
        }
        for reply in done.replies {
            match (reply, &answer) {
                (Some(reply), answer) => {
                    let _ = reply.send(answer.clone());
                }
                (None, Ok(summary)) => info!("SIGHUP: reload: {summary}"),
                (None, Err(e)) => error!(
                    "SIGHUP: reload refused, keeping the running configuration: {}",
                    e.message
                ),
            }
        }
    }

    /// Adds each program's processes (and, with `usage`, its CPU time and memory) to a
    /// `status` answer. Finding them reads a few `/proc` or cgroup files per program, so what
    /// was found is kept and reused until a state changes or a second passes: a storm of
    /// `status` requests costs the loop one look a second, not one per request.
    fn add_processes(
        &mut self,
        programs: &mut [crate::model::protocol::ProgramStatus],
        usage: bool,
    ) {
        let now = Instant::now();
        let fresh = self.processes_seen.as_ref().is_some_and(|seen| {
            seen.seq == self.seq
                && now.duration_since(seen.at) < PROCESSES_FOR
                && (seen.usage || !usage)
        });
        if !fresh {
            let programs = self.look_at_processes(usage);
            self.processes_seen = Some(ProcessesSeen {
                seq: self.seq,
                at: now,
                usage,
                programs,
            });
        }
        let Some(seen) = &self.processes_seen else {
            return;
        };
        for status in programs.iter_mut() {
            if let Some(found) = seen.programs.get(&status.name) {
                status.processes = found.pids.as_ref().map(|p| p.len() as u32);
                status.pids = found.pids.clone().unwrap_or_default();
                if usage {
                    status.memory_bytes = found.usage.and_then(|u| u.memory_bytes);
                    status.cpu_usec = found.usage.and_then(|u| u.cpu_usec);
                }
            }
            status.tracking = Some(self.tracking.mode().to_string());
        }
    }

    /// Every program's processes (while its run may have any) and, with `usage`, its cgroup
    /// usage, now.
    fn look_at_processes(&self, usage: bool) -> HashMap<String, Processes> {
        let owned = self.core.owned_pids();
        let others = |pid| owned.contains(&pid);
        let leaders: std::collections::HashSet<i32> = self
            .core
            .programs()
            .iter()
            .filter_map(|p| p.phase.pid())
            .collect();
        let look = self.tracking.look(&leaders);
        self.core
            .programs()
            .iter()
            .map(|p| {
                let run = tracking::run_of(p);
                let pids = run.map(|r| {
                    let mut pids = self.tracking.members_in(&look, r, &others);
                    pids.sort_unstable();
                    pids
                });
                // A program with no run has no processes to account for: its group is not read.
                let usage = run
                    .filter(|_| usage)
                    .and_then(|_| self.tracking.usage_in(&look, p.name()));
                (p.name().to_string(), Processes { pids, usage })
            })
            .collect()
    }
}

//! Starting what the core asks for: a program's run (with its wiring), a finish hook, and the
//! crash report of a run that died of a signal nobody in ctrlinit sent.

use super::*;

impl Runner {
    pub(super) fn spawn_program(&mut self, id: ProgramId) -> Input {
        let Some(p) = self.core.program(id) else {
            return Input::Tick;
        };
        let (spec, run) = (Arc::clone(&p.spec), p.run);
        let notify_path = self
            .notify
            .as_ref()
            .map_or_else(|| self.config.init.notify_socket_path(), |n| n.path.clone());
        let (mut wiring, evidence) =
            match wiring::prepare(&spec, id, run, &notify_path, &self.probe_tx) {
                Ok(w) => w,
                Err(e) => {
                    return Input::SpawnFailed {
                        id,
                        exit: Exit::Code(126),
                        error: format!("{}: cannot prepare its start: {e}", spec.command[0]),
                        exec_failed: false,
                    };
                }
            };
        self.evidence.insert(id, evidence);
        let (marker, cgroup) = self.tracking.prepare(&spec.name, id, run);
        if let Some(limits) = &spec.limits {
            // Before the run joins its group, so its first allocation is already bounded.
            self.apply_hard_limits(&spec.name, limits);
        }
        wiring.env.push(marker);
        wiring.cgroup = cgroup;
        if spec.kind == crate::config::Kind::Oneshot {
            wiring.env.extend(previous_boot_env());
        }
        let spawned = self.launcher.program(&spec, run, wiring);
        if let Some(p) = self.core.program(id) {
            let pid = spawned.as_ref().ok().copied();
            self.ledger.spawned(p, pid, Instant::now());
        }
        match spawned {
            Ok(pid) => Input::Spawned { id, pid },
            Err(e) => Input::SpawnFailed {
                id,
                exit: e.exit,
                error: e.message,
                exec_failed: e.exec_failed,
            },
        }
    }

    pub(super) fn spawn_finish(&mut self, id: ProgramId, exit: Option<Exit>) -> Input {
        let Some(spec) = self.core.program(id).map(|p| Arc::clone(&p.spec)) else {
            return Input::Tick;
        };
        match self.launcher.finish(&spec, exit) {
            Ok(pid) => Input::FinishSpawned { id, pid },
            Err(e) => {
                warn!("{}: finish hook failed to start: {}", spec.name, e.message);
                Input::FinishFailed { id }
            }
        }
    }

    /// Runs program `id`'s `pre_stop` hook (its main process is `main`).
    pub(super) fn spawn_pre_stop(&mut self, id: ProgramId, main: i32) -> Input {
        let Some((spec, run)) = self.core.program(id).map(|p| (Arc::clone(&p.spec), p.run)) else {
            return Input::Tick;
        };
        let tag = self.tracking.prepare(&spec.name, id, run);
        match self.launcher.pre_stop(&spec, main, tag) {
            Ok(pid) => Input::PreStopSpawned { id, pid },
            Err(e) => Input::PreStopFailed {
                id,
                error: e.message,
            },
        }
    }

    pub(super) fn report_crash(
        &mut self,
        id: ProgramId,
        pid: i32,
        exit: Exit,
        uptime: Duration,
        oom_killed: bool,
        limit: Option<String>,
    ) {
        let Some(p) = self.core.program(id) else {
            return;
        };
        let spec = &p.spec;
        let cwd = spec
            .workdir
            .clone()
            .or_else(|| crate::sys::init::original_cwd().map(|d| d.to_path_buf()))
            .unwrap_or_else(|| "/".into());
        let claimed_core = match exit {
            Exit::Signal {
                core_dumped: true, ..
            } => claim_core(&self.core_pattern, pid, &spec.command, &cwd),
            _ => None,
        };
        let info = CrashInfo {
            claimed_core,
            program: spec.name.clone(),
            pid,
            run: p.run,
            command: spec.command.clone(),
            exit,
            uptime,
            restarts: p.history.total,
            cwd,
            core_dumps: spec.core_dumps,
            max_cores: spec.max_cores,
            max_reports: spec.max_reports,
            oom_killed,
            limit,
            at: std::time::SystemTime::now(),
        };
        debug!(
            "{}: pid {pid} crashed: {exit}; writing a crash report",
            spec.name
        );
        let _ = self.opts.logs.send(LogCommand::Crash(Box::new(info)));
    }
}

/// What a oneshot is told of the boot before this one (from the run ledger), so idempotent
/// provisioning can clean what an unclean end left:
/// `CTRLINIT_PREVIOUS_BOOT=clean|unclean|unknown|first` and, when known,
/// `CTRLINIT_PREVIOUS_EXIT_STATUS`; `unknown` when the ledger was refused. Nothing when the
/// ledger is off.
fn previous_boot_env() -> Vec<(&'static str, String)> {
    let Some(ended) = crate::logs::ledger::previous_for_oneshots() else {
        return Vec::new();
    };
    let mut env = vec![("CTRLINIT_PREVIOUS_BOOT", ended.to_string())];
    if let Some(code) = crate::logs::ledger::previous_boot().and_then(|b| b.exit_status) {
        env.push(("CTRLINIT_PREVIOUS_EXIT_STATUS", code.to_string()));
    }
    env
}

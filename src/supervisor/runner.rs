//! The owner loop: the one task that holds the [`Core`] and carries out its decisions.
//!
//! Signals (through the signalfd), deadlines (one sleep until the core's earliest deadline),
//! readiness reports and control requests all arrive here; each becomes an [`Input`], and the
//! returned [`Action`]s are executed in order. Spawning and reaping both happen in this loop, so a
//! pid is always registered before its exit can be seen. When nothing is pending and no deadline
//! is set, the loop sleeps in epoll with no timeout: an idle container costs no wake-ups.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tracing::{debug, error, info, warn};

use super::adopted::Adopted;
use super::control::{self, Control, Refusal};
use super::core::{Action, Core, Input, Level, Notice};
use super::events::EventLog;
use super::health_checks::HealthChecks;
use super::idle::ColdMemory;
use super::launch::Launcher;
use super::notify_intake::NotifyIntake;
use super::probes::{ProbeEvent, Probes};
use super::telemetry;
use super::upward::Upward;
use super::wiring::{self, Evidence};
use crate::config::{Config, LoadOptions, Overrides};
use crate::crash::{CorePattern, CrashInfo, claim_core};
use crate::logs::Command as LogCommand;
use crate::model::protocol::{ErrorKind, EventRecord};
use crate::model::{Exit, ProgramId};
use crate::sys::init::{Role, group_exists, signal_group, signal_strays};
use crate::sys::memory::release_cold_memory;
use crate::sys::reap::{Children, reap_exited};
use crate::sys::signals::{Arrived, Signals};

/// How the init was asked to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// PID 1 or subreaper.
    pub role: Role,
    /// The program made from the `--` command, which gets HUP, USR1, USR2 and WINCH forwarded.
    pub forward_to: Option<String>,
    /// The log thread.
    pub logs: tokio::sync::mpsc::UnboundedSender<LogCommand>,
    /// How to load the configuration again (reload).
    pub load: LoadOptions,
    /// Command-line and environment settings that win over the files.
    pub overrides: Overrides,
}

/// A configuration loaded off the owner loop for a reload (from `ctrlinit reload` when `reply`
/// is set, else from SIGHUP).
struct Reloaded {
    loaded: Result<Config, crate::config::ConfigErrors>,
    reply: Option<oneshot::Sender<Result<String, Refusal>>>,
}

/// The owner of all program state.
pub struct Runner {
    core: Core,
    opts: RunOptions,
    launcher: Launcher,
    probes: Probes,
    health: HealthChecks,
    /// Adopted main processes that are not ctrlinit's children.
    adopted: Adopted,
    /// What each program's current run is judged by, until its checks take it.
    evidence: std::collections::HashMap<ProgramId, Evidence>,
    /// Where check tasks report.
    probe_tx: UnboundedSender<ProbeEvent>,
    probe_events: UnboundedReceiver<ProbeEvent>,
    /// The sd_notify socket, while some program speaks sd_notify.
    notify: Option<NotifyIntake>,
    /// ctrlinit's own supervisor, when it was given `NOTIFY_SOCKET`.
    upward: Option<Upward>,
    exit: Option<(i32, Instant)>,
    reaped: Vec<(i32, Exit)>,
    /// The configuration in force.
    config: Arc<Config>,
    /// A reloaded configuration the core has not switched to yet.
    pending_config: Option<Arc<Config>>,
    /// Configurations read for a reload, from the thread that reads them.
    reloads: UnboundedReceiver<Reloaded>,
    reloads_tx: UnboundedSender<Reloaded>,
    /// Whether a configuration is being read for a reload.
    reading_config: bool,
    /// Requests from control connections.
    control: UnboundedReceiver<Control>,
    /// State changes, for `events`, `--wait` and command completion.
    events: Arc<EventLog>,
    /// Sequence number of the last event.
    seq: u64,
    /// Where the kernel writes cores (read once at start).
    core_pattern: CorePattern,
    /// Processes reaped that belonged to no program.
    orphans_reaped: u64,
    /// The OOM killer's count in ctrlinit's cgroup when last read (`None`: not readable).
    oom_kills: Option<u64>,
    cold_memory: ColdMemory,
    /// When the loop last did work (not a routine check), for the release of cold memory.
    last_work: Instant,
}

impl Runner {
    /// A runner for `config`, answering `control` requests and announcing state changes on
    /// `events`; nothing starts before [`Runner::run`].
    pub fn new(
        config: Arc<Config>,
        opts: RunOptions,
        control: UnboundedReceiver<Control>,
        events: Arc<EventLog>,
    ) -> Self {
        let (tx, probe_events) = unbounded_channel();
        let (reloads_tx, reloads) = unbounded_channel();
        Runner {
            reloads,
            reloads_tx,
            reading_config: false,
            core: Core::new(&config, Instant::now()),
            launcher: Launcher::new(opts.logs.clone()),
            opts,
            probes: Probes::new(tx.clone()),
            health: HealthChecks::new(tx.clone()),
            adopted: Adopted::new(tx.clone()),
            evidence: std::collections::HashMap::new(),
            probe_tx: tx,
            probe_events,
            notify: None,
            upward: Upward::from_env(),
            exit: None,
            reaped: Vec::new(),
            config,
            pending_config: None,
            control,
            events,
            seq: 0,
            core_pattern: CorePattern::read(),
            orphans_reaped: 0,
            oom_kills: crate::sys::cgroups::oom_kills(),
            cold_memory: ColdMemory::AfterStartup,
            last_work: Instant::now(),
        }
    }

    /// Runs until the container stops; returns ctrlinit's exit status.
    pub async fn run(mut self, mut signals: Signals) -> i32 {
        self.open_notify_socket();
        self.feed(Input::Boot);
        loop {
            if let Some((code, deadline)) = self.exit {
                return self.finish(&mut signals, code, deadline).await;
            }
            let deadline = self.core.next_deadline();
            // Once the init has been quiet for a moment with nothing scheduled: each piece of
            // work pushes this back, so it runs once after a burst (start-up, a restart, a
            // request), never amid one, and never while idle. A routine liveness check (one
            // that changed nothing) is not work: it neither postpones the release nor undoes it.
            let release_at = match deadline {
                None => self
                    .cold_memory
                    .quiet_before_release()
                    .map(|q| self.last_work + q),
                Some(_) => None,
            };
            // `routine`: the release itself; `routine_check`: a check that changed nothing.
            let (mut routine, mut routine_check) = (false, false);
            tokio::select! {
                biased;
                arrived = signals.recv() => match arrived {
                    Ok(arrived) => self.on_signals(&arrived),
                    Err(e) => error!("failed to read signals: {e}"),
                },
                Some(event) = self.probe_events.recv() => {
                    let (liveness, seq) = (event.is_liveness(), self.seq);
                    let input = if let ProbeEvent::AdoptedExited { id, pid } = event {
                        // Its zombie may be ctrlinit's after all (reparented since): reap first.
                        self.reap();
                        self.adopted.exited(id, pid, &self.core)
                    } else if liveness {
                        self.health.event(event, &self.core, &self.launcher)
                    } else {
                        self.probes.event(event, &self.core, &self.launcher)
                    };
                    if let Some(input) = input {
                        self.feed(input);
                    }
                    routine_check = liveness && self.seq == seq;
                }
                // A due deadline (a backoff ending, a SIGKILL escalation) goes before requests:
                // a storm of clients keeps the request channel busy and must not starve it.
                _ = sleep_until(deadline), if deadline.is_some() => self.feed(Input::Tick),
                () = notify_ready(&self.notify) => self.on_notify(),
                Some(done) = self.reloads.recv() => self.reload_read(done),
                Some(request) = self.control.recv() => self.on_control(request),
                _ = sleep_until(release_at), if release_at.is_some() => {
                    self.release_memory();
                    routine = true;
                }
            }
            if routine_check {
                let (next, restart_quiet) = self.cold_memory.after_check();
                self.cold_memory = next;
                if restart_quiet {
                    self.last_work = Instant::now();
                }
            } else if !routine {
                self.last_work = Instant::now();
                if matches!(
                    self.cold_memory,
                    ColdMemory::Released | ColdMemory::AfterChecks
                ) {
                    self.cold_memory = ColdMemory::AfterWork;
                }
            }
        }
    }

    fn release_memory(&mut self) {
        self.cold_memory = ColdMemory::Released;
        let began = Instant::now();
        let released = release_cold_memory();
        debug!(
            "idle: unmapped {} KiB of code ({} mappings), trimmed the heap in {:?}",
            released.resident_kib,
            released.mappings,
            began.elapsed()
        );
    }

    fn on_signals(&mut self, arrived: &[Arrived]) {
        let mut reap = false;
        for a in arrived {
            match a.signal {
                Signal::SIGCHLD => reap = true,
                Signal::SIGTERM | Signal::SIGINT | Signal::SIGQUIT => {
                    let name = a.signal.as_str();
                    if self.core.shutting_down() && a.signal != Signal::SIGQUIT {
                        self.feed(Input::ForceKill);
                    } else {
                        let reason = match a.sender {
                            0 => format!("received {name}"),
                            pid => format!("received {name} from pid {pid}"),
                        };
                        self.feed(Input::Shutdown { reason });
                    }
                }
                Signal::SIGHUP | Signal::SIGUSR1 | Signal::SIGUSR2 | Signal::SIGWINCH => {
                    self.forward_or_handle(a.signal)
                }
                other => debug!("ignoring {}", other.as_str()),
            }
        }
        if reap {
            self.reap();
        }
    }

    /// With a `--` program, HUP, USR1, USR2 and WINCH go to its process group (as tini does).
    fn forward_or_handle(&mut self, signal: Signal) {
        if let Some(name) = &self.opts.forward_to {
            if let Some(pid) = self
                .core
                .id_of(name)
                .and_then(|id| self.core.program(id))
                .and_then(|p| p.phase.pid())
            {
                debug!(
                    "forwarding {} to {name} (process group {pid})",
                    signal.as_str()
                );
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(-pid), signal);
            }
            return;
        }
        match signal {
            Signal::SIGHUP => match self.reload_refusal() {
                Some(e) => error!("SIGHUP: reload refused: {}", e.message),
                None => self.start_reload(None),
            },
            Signal::SIGUSR1 => {
                let _ = self.opts.logs.send(LogCommand::Reopen);
            }
            other => debug!("ignoring {}", other.as_str()),
        }
    }

    fn reap(&mut self) {
        let mut reaped = std::mem::take(&mut self.reaped);
        reaped.clear();
        reap_exited(&mut reaped);
        let mut orphans = 0u64;
        for &(pid, exit) in &reaped {
            if self.probes.owns(pid) {
                if let Some(input) = self.probes.reaped(pid, exit, &self.core) {
                    self.feed(input);
                }
            } else if self.health.owns(pid) {
                if let Some(input) = self.health.reaped(pid, exit, &self.core) {
                    self.feed(input);
                }
            } else if let Some(pgid) = self.core.group_of(pid) {
                // Programs lead their own process group: is anything of it left to stop?
                let group_empty = !group_exists(pgid);
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

    /// Whether a SIGKILL death was the OOM killer's: the cgroup's count moved since the last look
    /// (read only for SIGKILLs; with several at once, each is credited while the count moves).
    fn oom_killed(&mut self, exit: Exit) -> bool {
        if exit.signal() != Some(libc::SIGKILL) {
            return false;
        }
        let now = crate::sys::cgroups::oom_kills();
        let moved = matches!((self.oom_kills, now), (Some(before), Some(after)) if after > before);
        if now.is_some() {
            self.oom_kills = now;
        }
        moved
    }

    /// Hands `input` to the core and carries out what it decides, including the inputs those
    /// actions produce (spawn results, emptied process groups).
    fn feed(&mut self, input: Input) {
        let mut queue = VecDeque::from([input]);
        loop {
            while let Some(input) = queue.pop_front() {
                let actions = self.core.handle(input, Instant::now());
                for action in actions {
                    self.execute(action, &mut queue);
                }
            }
            queue.extend(self.emptied_groups());
            if queue.is_empty() {
                break;
            }
        }
        self.probes.cancel_stale(&self.core);
        self.health.cancel_stale(&self.core);
        self.adopted.cancel_stale(&self.core);
        if let Some(up) = &mut self.upward {
            up.update(&self.core);
        }
    }

    /// Binds the sd_notify socket when some program speaks sd_notify (at start and after a
    /// reload); a program told to use it while it cannot be bound is never ready, so say so.
    fn open_notify_socket(&mut self) {
        if self.notify.is_some() || !self.config.programs.iter().any(|p| p.speaks_notify()) {
            return;
        }
        let path = self.config.init.notify_socket_path();
        match NotifyIntake::open(&path) {
            Ok(n) => self.notify = Some(n),
            Err(e) => error!(
                "{e}; programs with ready = {{ notify = \"systemd\" }} or a watchdog cannot report"
            ),
        }
    }

    /// sd_notify datagrams arrived.
    fn on_notify(&mut self) {
        let Some(intake) = &mut self.notify else {
            return;
        };
        for input in intake.drain(&self.core) {
            self.feed(input);
        }
    }

    /// `GroupGone` for every program whose leader is gone and whose group is now empty.
    fn emptied_groups(&self) -> Vec<Input> {
        self.core
            .draining_groups()
            .filter(|&(_, pgid)| !group_exists(pgid))
            .map(|(id, _)| Input::GroupGone { id })
            .collect()
    }

    fn execute(&mut self, action: Action, queue: &mut VecDeque<Input>) {
        match action {
            Action::Spawn { id } => queue.push_back(self.spawn_program(id)),
            Action::Probe { id, run } => {
                if let Some(p) = self.core.program(id) {
                    let spec = Arc::clone(&p.spec);
                    let evidence = self.evidence.entry(id).or_default();
                    self.probes.start(id, run, &spec, &self.launcher, evidence);
                }
            }
            Action::Adopted { id, pid } => self.adopted.watch(id, pid),
            Action::Watch { id, run } => {
                if let Some(p) = self.core.program(id) {
                    let spec = Arc::clone(&p.spec);
                    let evidence = self.evidence.entry(id).or_default();
                    self.health.start(id, run, &spec, evidence);
                }
            }
            Action::Signal { pgid, signal } => signal_group(pgid, signal),
            Action::RunFinish { id, exit } => queue.push_back(self.spawn_finish(id, exit)),
            Action::Crashed {
                id,
                pid,
                exit,
                uptime,
                oom_killed,
            } => self.report_crash(id, pid, exit, uptime, oom_killed),
            Action::TerminationMessage(line) => write_termination_log(&line),
            Action::Exit { code, deadline } => self.exit = Some((code, deadline)),
            Action::Reloaded => {
                if let Some(config) = self.pending_config.take() {
                    self.config = Arc::clone(&config);
                    let _ = self.opts.logs.send(LogCommand::Configure(config));
                    self.open_notify_socket();
                }
            }
            Action::Notice(n) => {
                log_notice(&n);
                self.announce(n);
            }
        }
    }

    /// Sends a notice to `events` subscribers (routine debug detail stays in the log).
    fn announce(&mut self, n: Notice) {
        if n.level == Level::Debug && n.transition.is_none() {
            return;
        }
        self.seq += 1;
        let record = EventRecord {
            seq: self.seq,
            time: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            program: n.program,
            from: n.transition.map(|t| t.0),
            to: n.transition.map(|t| t.1),
            message: n.message,
            health: n.health,
        };
        self.events.publish(record);
    }

    fn spawn_program(&mut self, id: ProgramId) -> Input {
        let Some(p) = self.core.program(id) else {
            return Input::Tick;
        };
        let (spec, run) = (Arc::clone(&p.spec), p.run);
        let notify_path = self
            .notify
            .as_ref()
            .map_or_else(|| self.config.init.notify_socket_path(), |n| n.path.clone());
        let (wiring, evidence) = match wiring::prepare(&spec, id, run, &notify_path, &self.probe_tx)
        {
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
        match self.launcher.program(&spec, run, wiring) {
            Ok(pid) => Input::Spawned { id, pid },
            Err(e) => Input::SpawnFailed {
                id,
                exit: e.exit,
                error: e.message,
                exec_failed: e.exec_failed,
            },
        }
    }

    fn spawn_finish(&mut self, id: ProgramId, exit: Option<Exit>) -> Input {
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

    fn report_crash(
        &mut self,
        id: ProgramId,
        pid: i32,
        exit: Exit,
        uptime: Duration,
        oom_killed: bool,
    ) {
        let Some(p) = self.core.program(id) else {
            return;
        };
        let spec = &p.spec;
        let cwd = spec
            .workdir
            .clone()
            .or_else(|| std::env::current_dir().ok())
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
            at: std::time::SystemTime::now(),
        };
        debug!(
            "{}: pid {pid} crashed: {exit}; writing a crash report",
            spec.name
        );
        let _ = self.opts.logs.send(LogCommand::Crash(Box::new(info)));
    }

    /// Answers one control request.
    fn on_control(&mut self, request: Control) {
        match request {
            Control::Status { names, reply } => {
                let _ = reply.send(control::status(
                    &self.core,
                    self.seq,
                    &names,
                    Instant::now(),
                ));
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
    fn reload_refusal(&self) -> Option<Refusal> {
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
    fn start_reload(&mut self, reply: Option<oneshot::Sender<Result<String, Refusal>>>) {
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
    fn reload_read(&mut self, done: Reloaded) {
        self.reading_config = false;
        let answer = match done.loaded {
            _ if self.core.shutting_down() => Err(Refusal::new(
                ErrorKind::Refused,
                "the container is shutting down",
            )),
            Err(errors) => Err(Refusal::new(ErrorKind::Failed, errors.to_string())),
            Ok(config) => {
                self.cold_memory = ColdMemory::AfterStartup;
                let summary = self.core.reload_summary(&config);
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

    /// Every program is down: stop stray processes (TERM, then KILL at `deadline`), reap them,
    /// and return the exit status.
    async fn finish(&mut self, signals: &mut Signals, code: i32, deadline: Instant) -> i32 {
        let mut scratch = Vec::new();
        if reap_exited(&mut scratch) == Children::None {
            info!("all programs stopped; exiting with status {code}");
            return code;
        }
        info!("sending SIGTERM to the processes left over");
        signal_strays(self.opts.role, Signal::SIGTERM);
        signal_strays(self.opts.role, Signal::SIGCONT);
        loop {
            tokio::select! {
                _ = signals.recv() => {
                    if reap_exited(&mut scratch) == Children::None {
                        break;
                    }
                }
                _ = sleep_until(Some(deadline)) => {
                    warn!("processes left over after the stop budget; sending SIGKILL");
                    signal_strays(self.opts.role, Signal::SIGKILL);
                    // Killed processes die at once, unless in uninterruptible sleep: give them a
                    // moment, then leave the rest to the kernel (PID 1's exit kills them).
                    let grace = tokio::time::sleep(Duration::from_secs(1));
                    tokio::pin!(grace);
                    loop {
                        tokio::select! {
                            _ = signals.recv() => if reap_exited(&mut scratch) == Children::None { break },
                            _ = &mut grace => break,
                        }
                    }
                    break;
                }
            }
        }
        info!("all programs stopped; exiting with status {code}");
        code
    }
}

/// Resolves when the sd_notify socket may have datagrams; never without one.
async fn notify_ready(intake: &Option<NotifyIntake>) {
    match intake {
        Some(n) => n.ready().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `deadline`; never resolves for `None` (the branch is disabled then anyway).
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

fn log_notice(n: &Notice) {
    match n.level {
        Level::Debug => debug!("{}", n.message),
        Level::Info => info!("{}", n.message),
        Level::Warn => warn!("{}", n.message),
        Level::Error => error!("{}", n.message),
    }
}

/// Kubernetes reads `/dev/termination-log` for a terminated container's reason.
fn write_termination_log(line: &str) {
    // Kubernetes' default terminationMessagePath; a pod that sets another one says so here.
    let path = std::env::var_os("CTRLINIT_TERMINATION_LOG")
        .filter(|p| !p.is_empty())
        .map_or_else(|| "/dev/termination-log".into(), std::path::PathBuf::from);
    if !path.exists() {
        return;
    }
    // Truncated: a shorter reason must not keep the tail of an earlier, longer one (a file on a
    // host mount outlives a container).
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
    {
        let _ = writeln!(f, "{line}");
    }
}

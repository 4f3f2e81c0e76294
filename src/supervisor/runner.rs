//! The owner loop: the one task that holds the [`Core`] and carries out its decisions.
//!
//! Signals (through the signalfd), deadlines (one sleep until the core's earliest deadline) and
//! events from helper tasks (readiness checks) all arrive here; each becomes an [`Input`], and the
//! returned [`Action`]s are executed in order. Spawning and reaping both happen in this loop, so a
//! pid is always registered before its exit can be seen. When nothing is pending and no deadline
//! is set, the loop sleeps in epoll with no timeout: an idle container costs no wake-ups.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::broadcast;

use nix::sys::signal::Signal;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

use super::core::{Action, Core, Input, Level, Notice};
use super::program::Phase;
use super::readiness;
use crate::api::protocol::EventRecord;
use crate::api::server::Control;
use crate::config::{Config, LoadOptions, Overrides, ProgramSpec, ReadyProbe, signal_name};
use crate::cores::{CorePattern, CrashInfo, claim_core};
use crate::logs::Command as LogCommand;
use crate::process::{self, Exit, Launch, Output};
use crate::sys::init::{Role, group_exists, signal_group, signal_strays};
use crate::sys::memory::release_cold_memory;
use crate::sys::reap::{Children, reap_exited};
use crate::sys::signals::{Arrived, Signals};

/// What helper tasks tell the owner loop.
#[derive(Debug)]
pub enum Event {
    /// A TCP or file readiness check passed.
    ProbePassed {
        /// Program index.
        prog: usize,
        /// The run it checked.
        run: u64,
    },
    /// Time to run an `exec` readiness check again.
    ProbeRetry {
        /// Program index.
        prog: usize,
        /// The run it checks.
        run: u64,
    },
}

/// When the memory the last burst of work used is handed back (see [`crate::sys::memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ColdMemory {
    /// Nothing ran since the last release.
    Released,
    /// Start-up or a reload read the configuration: that code will not run again soon, so hand
    /// it back after a short quiet.
    AfterStartup,
    /// A restart, a request: likely to come again soon, and handing its pages back costs the
    /// next one minor faults (about 0.5 ms on a restart), so only after a long quiet.
    AfterWork,
}

impl ColdMemory {
    fn quiet_before_release(self) -> Option<std::time::Duration> {
        match self {
            ColdMemory::Released => None,
            ColdMemory::AfterStartup => Some(std::time::Duration::from_millis(500)),
            ColdMemory::AfterWork => Some(std::time::Duration::from_secs(5)),
        }
    }
}

/// How the init was asked to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// PID 1 or subreaper.
    pub role: Role,
    /// The program made from the `--` command, which gets HUP, USR1, USR2 and WINCH forwarded.
    pub forward_to: Option<String>,
    /// The log thread.
    pub logs: UnboundedSender<LogCommand>,
    /// How to load the configuration again (reload).
    pub load: LoadOptions,
    /// Command-line and environment settings that win over the files.
    pub overrides: Overrides,
}

/// A readiness check in flight for one run.
struct Probe {
    run: u64,
    task: Option<JoinHandle<()>>,
    exec_pid: Option<i32>,
}

/// The owner of all program state.
pub struct Runner {
    pub(super) core: Core,
    pub(super) opts: RunOptions,
    tx: UnboundedSender<Event>,
    rx: UnboundedReceiver<Event>,
    probes: HashMap<usize, Probe>,
    exit: Option<(i32, Instant)>,
    reaped: Vec<(i32, Exit)>,
    /// The configuration in force.
    pub(super) config: Arc<Config>,
    /// A reloaded configuration the core has not switched to yet.
    pub(super) pending_config: Option<Arc<Config>>,
    /// Requests from control connections.
    control: UnboundedReceiver<Control>,
    /// State changes, for `events`, `--wait` and command completion.
    pub(super) events: broadcast::Sender<EventRecord>,
    /// Sequence number of the last event.
    pub(super) seq: u64,
    /// Where the kernel writes cores (read once at start).
    core_pattern: CorePattern,
    /// Processes reaped that belonged to no program.
    orphans_reaped: u64,
    /// Whether, and after how much quiet, to hand back what idling does not use.
    pub(super) cold_memory: ColdMemory,
}

impl Runner {
    /// A runner for `config`, answering `control` requests and announcing state changes on
    /// `events`; nothing starts before [`Runner::run`].
    pub fn new(
        config: Arc<Config>,
        opts: RunOptions,
        control: UnboundedReceiver<Control>,
        events: broadcast::Sender<EventRecord>,
    ) -> Self {
        let (tx, rx) = unbounded_channel();
        let core = Core::new(&config, Instant::now());
        Runner {
            core,
            opts,
            tx,
            rx,
            probes: HashMap::new(),
            exit: None,
            reaped: Vec::new(),
            config,
            pending_config: None,
            control,
            events,
            seq: 0,
            core_pattern: CorePattern::read(),
            orphans_reaped: 0,
            cold_memory: ColdMemory::AfterStartup,
        }
    }

    /// Runs until the container stops; returns ctrlinit's exit status.
    pub async fn run(mut self, mut signals: Signals) -> i32 {
        self.feed(Input::Boot);
        loop {
            if let Some((code, deadline)) = self.exit {
                return self.finish(&mut signals, code, deadline).await;
            }
            let deadline = self.core.next_deadline();
            // Once the init has been quiet for a moment with nothing scheduled: each event
            // pushes this back, so it runs once after a burst (start-up, a restart, a request),
            // never amid one, and never while idle.
            let release_cold_memory_at = match deadline {
                None => self
                    .cold_memory
                    .quiet_before_release()
                    .map(|q| Instant::now() + q),
                Some(_) => None,
            };
            if self.cold_memory == ColdMemory::Released {
                // Whatever wakes the loop next is work.
                self.cold_memory = ColdMemory::AfterWork;
            }
            tokio::select! {
                biased;
                arrived = signals.recv() => match arrived {
                    Ok(arrived) => self.on_signals(&arrived),
                    Err(e) => error!("failed to read signals: {e}"),
                },
                Some(event) = self.rx.recv() => self.on_event(event),
                // A due deadline (a backoff ending, a SIGKILL escalation) goes before requests:
                // a storm of clients keeps the request channel busy and must not starve it.
                _ = sleep_until(deadline), if deadline.is_some() => self.feed(Input::Tick),
                Some(request) = self.control.recv() => self.on_control(request),
                _ = sleep_until(release_cold_memory_at), if release_cold_memory_at.is_some() => {
                    self.cold_memory = ColdMemory::Released;
                    let began = Instant::now();
                    let released = release_cold_memory();
                    debug!(
                        "idle: unmapped {} KiB of code ({} mappings), trimmed the heap in {:?}",
                        released.resident_kib, released.mappings, began.elapsed()
                    );
                }
            }
        }
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
            if let Some(i) = self.core.index_of(name)
                && let Some(pid) = self.core.programs()[i].phase.pid()
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
            Signal::SIGHUP => match self.reload() {
                Ok(summary) => info!("SIGHUP: reload: {summary}"),
                Err(e) => error!("SIGHUP: reload refused, keeping the running configuration: {e}"),
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
            if let Some(prog) = self.exec_probe_owner(pid) {
                self.exec_probe_ended(prog, exit);
            } else if self.core.owns_pid(pid) {
                // Programs lead their own process group: is anything of it left to stop?
                let group_empty = !group_exists(pid);
                self.feed(Input::Reaped {
                    pid,
                    exit,
                    group_empty,
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
            self.feed_group_changes();
        }
        self.reaped = reaped;
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::ProbePassed { prog, run } => {
                if self.probes.get(&prog).is_some_and(|p| p.run == run) {
                    self.probes.remove(&prog);
                    self.feed(Input::Ready { prog, run });
                }
            }
            Event::ProbeRetry { prog, run } => {
                if self.probes.get(&prog).is_some_and(|p| p.run == run) {
                    self.spawn_exec_probe(prog, run);
                }
            }
        }
    }

    /// Hands `input` to the core and carries out what it decides, including the inputs those
    /// actions produce (spawn results, emptied process groups).
    pub(super) fn feed(&mut self, input: Input) {
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
        self.cancel_stale_probes();
    }

    /// `GroupGone` for every program whose leader is gone and whose group is now empty.
    fn emptied_groups(&self) -> Vec<Input> {
        self.core
            .draining_groups()
            .filter(|&(_, pgid)| !group_exists(pgid))
            .map(|(prog, _)| Input::GroupGone { prog })
            .collect()
    }

    fn feed_group_changes(&mut self) {
        for input in self.emptied_groups() {
            self.feed(input);
        }
    }

    fn execute(&mut self, action: Action, queue: &mut VecDeque<Input>) {
        match action {
            Action::Spawn { prog } => queue.push_back(self.spawn_program(prog)),
            Action::Probe { prog, run } => self.start_probe(prog, run),
            Action::Signal { pgid, signal } => signal_group(pgid, signal),
            Action::RunFinish { prog, exit } => queue.push_back(self.spawn_finish(prog, exit)),
            Action::Crashed {
                prog,
                pid,
                exit,
                uptime,
            } => self.report_crash(prog, pid, exit, uptime),
            Action::TerminationMessage(line) => write_termination_log(&line),
            Action::Exit { code, deadline } => self.exit = Some((code, deadline)),
            Action::Reloaded => self.reloaded(),
            Action::Notice(n) => {
                log_notice(&n);
                self.announce(n);
            }
        }
    }

    /// A reload was applied: indices changed, so every readiness check in flight is void (the
    /// core re-issues the ones still needed), and the log thread gets the new settings.
    fn reloaded(&mut self) {
        for (_, probe) in self.probes.drain() {
            if let Some(task) = probe.task {
                task.abort();
            }
            if let Some(pid) = probe.exec_pid {
                signal_group(pid, Signal::SIGKILL);
            }
        }
        if let Some(config) = self.pending_config.take() {
            self.config = Arc::clone(&config);
            let _ = self.opts.logs.send(LogCommand::Configure(config));
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
        };
        let _ = self.events.send(record);
    }

    fn spec(&self, prog: usize) -> Arc<ProgramSpec> {
        Arc::clone(&self.core.programs()[prog].spec)
    }

    fn spawn_program(&mut self, prog: usize) -> Input {
        let spec = self.spec(prog);
        let run = self.core.programs()[prog].run;
        let result =
            self.launch_logged(&spec, &spec.command, &[], Some(spec.core_dumps), Some(run));
        match result {
            Ok(pid) => Input::Spawned { prog, pid },
            Err(e) => Input::SpawnFailed {
                prog,
                exit: e.exit,
                error: e.message,
                exec_failed: e.exec_failed,
            },
        }
    }

    /// Starts `argv` for `spec` with its stdout and stderr piped to the log thread.
    fn launch_logged(
        &self,
        spec: &ProgramSpec,
        argv: &[String],
        extra_env: &[(&str, String)],
        core_dumps: Option<bool>,
        run: Option<u64>,
    ) -> Result<i32, process::SpawnError> {
        let pipes = process::output_pipes().map_err(|e| process::SpawnError {
            exit: Exit::Code(126),
            message: format!("failed to create output pipes: {e}"),
            exec_failed: false,
        })?;
        let (stdout_r, stdout_w, stderr_r, stderr_w) = pipes;
        let pid = self.launch(
            spec,
            argv,
            extra_env,
            core_dumps,
            (Output::Fd(stdout_w), Output::Fd(stderr_w)),
        )?;
        let _ = self.opts.logs.send(LogCommand::Attach {
            program: spec.name.clone(),
            run,
            stdout: stdout_r,
            stderr: stderr_r,
        });
        Ok(pid)
    }

    fn report_crash(&mut self, prog: usize, pid: i32, exit: Exit, uptime: std::time::Duration) {
        let p = &self.core.programs()[prog];
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
            at: std::time::SystemTime::now(),
        };
        debug!(
            "{}: pid {pid} crashed: {exit}; writing a crash report",
            spec.name
        );
        let _ = self.opts.logs.send(LogCommand::Crash(Box::new(info)));
    }

    fn spawn_finish(&mut self, prog: usize, exit: Option<Exit>) -> Input {
        let spec = self.spec(prog);
        let Some(argv) = &spec.finish else {
            return Input::FinishFailed { prog };
        };
        let mut extra = vec![("CTRLINIT_PROGRAM", spec.name.clone())];
        match exit {
            Some(Exit::Code(c)) => extra.push(("CTRLINIT_EXIT_CODE", c.to_string())),
            Some(Exit::Signal { sig, .. }) => {
                extra.push(("CTRLINIT_EXIT_SIGNAL", signal_name(sig)))
            }
            None => {}
        }
        if let Some(e) = exit {
            extra.push(("CTRLINIT_EXIT_STATUS", e.shell_code().to_string()));
        }
        match self.launch_logged(&spec, argv, &extra, None, None) {
            Ok(pid) => Input::FinishSpawned { prog, pid },
            Err(e) => {
                warn!("{}: finish hook failed to start: {}", spec.name, e.message);
                Input::FinishFailed { prog }
            }
        }
    }

    fn start_probe(&mut self, prog: usize, run: u64) {
        let spec = self.spec(prog);
        let Some(check) = &spec.ready else { return };
        let tx = self.tx.clone();
        let task = match &check.probe {
            ReadyProbe::Tcp(addr) => Some(tokio::spawn(readiness::tcp(
                *addr,
                check.interval,
                prog,
                run,
                tx,
            ))),
            ReadyProbe::File(path) => Some(tokio::spawn(readiness::file(
                path.clone(),
                check.interval,
                prog,
                run,
                tx,
            ))),
            ReadyProbe::Exec(_) => None,
        };
        self.probes.insert(
            prog,
            Probe {
                run,
                task,
                exec_pid: None,
            },
        );
        if matches!(check.probe, ReadyProbe::Exec(_)) {
            self.spawn_exec_probe(prog, run);
        }
    }

    fn spawn_exec_probe(&mut self, prog: usize, run: u64) {
        let spec = self.spec(prog);
        let Some(check) = &spec.ready else { return };
        let ReadyProbe::Exec(argv) = &check.probe else {
            return;
        };
        let pid = match self.launch(&spec, argv, &[], None, (Output::Null, Output::Null)) {
            Ok(pid) => Some(pid),
            Err(e) => {
                debug!(
                    "{}: readiness check failed to start: {}",
                    spec.name, e.message
                );
                None
            }
        };
        let task = match pid {
            Some(_) => None,
            None => Some(tokio::spawn(readiness::retry_later(
                check.interval,
                prog,
                run,
                self.tx.clone(),
            ))),
        };
        self.probes.insert(
            prog,
            Probe {
                run,
                task,
                exec_pid: pid,
            },
        );
    }

    fn exec_probe_owner(&self, pid: i32) -> Option<usize> {
        self.probes
            .iter()
            .find(|(_, p)| p.exec_pid == Some(pid))
            .map(|(&prog, _)| prog)
    }

    fn exec_probe_ended(&mut self, prog: usize, exit: Exit) {
        let spec = self.spec(prog);
        let tx = self.tx.clone();
        let Some(probe) = self.probes.get_mut(&prog) else {
            return;
        };
        probe.exec_pid = None;
        let run = probe.run;
        if exit == Exit::Code(0) {
            self.probes.remove(&prog);
            self.feed(Input::Ready { prog, run });
        } else if let Some(check) = &spec.ready {
            probe.task = Some(tokio::spawn(readiness::retry_later(
                check.interval,
                prog,
                run,
                tx,
            )));
        }
    }

    /// Ends the checks of runs that are no longer starting.
    fn cancel_stale_probes(&mut self) {
        let programs = self.core.programs();
        let stale: Vec<usize> = self
            .probes
            .iter()
            .filter(|(prog, probe)| {
                let p = &programs[**prog];
                !(matches!(p.phase, Phase::Starting { .. }) && p.run == probe.run)
            })
            .map(|(&prog, _)| prog)
            .collect();
        for prog in stale {
            if let Some(probe) = self.probes.remove(&prog) {
                if let Some(task) = probe.task {
                    task.abort();
                }
                if let Some(pid) = probe.exec_pid {
                    signal_group(pid, Signal::SIGKILL);
                }
            }
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
                    let grace = tokio::time::sleep(std::time::Duration::from_secs(1));
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

    /// Starts `argv` with `spec`'s environment, identity and limits; an exec that fails is an
    /// error here, never a process that seemed to start.
    fn launch(
        &self,
        spec: &ProgramSpec,
        argv: &[String],
        extra_env: &[(&str, String)],
        core_dumps: Option<bool>,
        (stdout, stderr): (Output, Output),
    ) -> Result<i32, process::SpawnError> {
        let env = process::program_env(spec, extra_env).map_err(|message| process::SpawnError {
            exit: Exit::Code(126),
            message,
            exec_failed: false,
        })?;
        let spawned = process::spawn(Launch {
            argv,
            env,
            workdir: spec.workdir.as_deref(),
            run_as: &spec.run_as,
            umask: spec.umask,
            rlimits: &spec.rlimits,
            core_dumps,
            stdout,
            stderr,
        })?;
        Ok(spawned.pid)
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
    if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
        let _ = writeln!(f, "{line}");
    }
}

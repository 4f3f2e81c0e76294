//! The owner loop: the one task that holds the [`Core`] and carries out its decisions.
//!
//! Signals (through the signalfd), deadlines (one sleep until the core's earliest deadline),
//! readiness reports and control requests all arrive here; each becomes an [`Input`], and the
//! returned [`Action`]s are executed in order. Spawning and reaping both happen in this loop, so a
//! pid is always registered before its exit can be seen. When nothing is pending and no deadline
//! is set, the loop sleeps in epoll with no timeout: an idle container costs no wake-ups.

mod adoption;
mod exit;
mod external_reports;
mod guards;
mod network_events;
mod reaping;
mod requests;
mod signals;
mod spawning;
mod strays;
mod syslog;

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tracing::{debug, error, info, warn};

use super::checks::liveness_tasks::HealthChecks;
use super::checks::readiness::{ProbeEvent, Probes};
use super::control::{self, Control, Detail, Refusal};
use super::core::{Action, Core, Input, Level, Notice};
use super::events::EventLog;
use super::idle::ColdMemory;
use super::notify::intake::NotifyIntake;
use super::notify::upward::Upward;
use super::processes::adopted::Adopted;
use super::processes::launch::Launcher;
use super::processes::tracking::{self, Tracking};
use super::processes::wiring::{self, Evidence};
use super::telemetry;
use crate::config::{Config, LoadOptions, Overrides};
use crate::crash::{CorePattern, CrashInfo, claim_core};
use crate::logs::Command as LogCommand;
use crate::model::protocol::{ErrorKind, EventRecord};
use crate::model::{Exit, ProgramId};
use crate::sys::init::{Role, group_exists, signal_group, signal_strays};
use crate::sys::memory::Releaser;
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
    /// The syslog intake's counters (`None`: `[init] syslog` is off).
    pub syslog: Option<Arc<crate::logs::syslog::SyslogCounters>>,
}

/// A configuration loaded off the owner loop for a reload (from `ctrlinit reload` when `reply`
/// is set, else from SIGHUP).
/// Where a reload's outcome goes.
type ReloadReply = oneshot::Sender<Result<String, Refusal>>;

struct Reloaded {
    loaded: Result<Config, crate::config::ConfigErrors>,
    /// Who asked (`None`: SIGHUP), all answered by this one read.
    replies: Vec<Option<ReloadReply>>,
}

/// Checks' reports served in a row before a turn serves the rest (requests, deadlines) first:
/// however fast reports come, a `status` waits for at most this many.
const PROBE_TURNS: u32 = 32;

/// The owner of all program state.
pub struct Runner {
    core: Core,
    opts: RunOptions,
    launcher: Launcher,
    probes: Probes,
    health: HealthChecks,
    /// Adopted main processes that are not ctrlinit's children.
    adopted: Adopted,
    /// Which processes belong to which run (cgroups or markers).
    tracking: Tracking,
    /// Processes reparented to ctrlinit that belong to no program.
    strays: std::collections::HashMap<i32, Stray>,
    /// When each guarded run (`[program.NAME.limits]`) is measured next: (its run, when).
    guards_due: std::collections::HashMap<ProgramId, (u64, Instant)>,
    /// When to look for strays next (`orphans = "kill"` only).
    next_stray_scan: Option<Instant>,
    /// What each program's current run is judged by, until its checks take it.
    evidence: std::collections::HashMap<ProgramId, Evidence>,
    /// Where check tasks report.
    probe_tx: UnboundedSender<ProbeEvent>,
    probe_events: UnboundedReceiver<ProbeEvent>,
    /// Turns in a row that served a check's report (see [`PROBE_TURNS`]).
    probe_streak: u32,
    /// The sd_notify socket, while some program speaks sd_notify.
    notify: Option<NotifyIntake>,
    /// The network watch (`[init.network]`), when configured and opened.
    network: Option<crate::supervisor::watch::links::Links>,
    /// External dependencies' check tasks.
    external_checks: super::checks::external_tasks::ExternalChecks,
    /// Their `exec` checks in flight, by pid.
    external_execs: std::collections::HashMap<i32, ExternalExec>,
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
    /// Reloads asked for while another was under way, started once it is applied.
    queued_reloads: Vec<Option<ReloadReply>>,
    /// Requests from control connections.
    control: UnboundedReceiver<Control>,
    /// State changes, for `events`, `--wait` and command completion.
    events: Arc<EventLog>,
    /// Sequence number of the last event.
    seq: u64,
    /// The programs' processes as last looked at for `status`: (seq then, when, by name).
    processes_seen: Option<ProcessesSeen>,
    /// The groups runs lead, by number, while one input's actions run (see
    /// `group_of_another`); `None` between inputs.
    groups_led: Option<HashMap<i32, Vec<ProgramId>>>,
    /// Where the kernel writes cores (read once at start).
    core_pattern: CorePattern,
    /// Processes reaped that belonged to no program.
    orphans_reaped: u64,
    /// The OOM killer's count in ctrlinit's memory cgroup (`None`: not readable).
    oom_counter: Option<crate::sys::cgroups::OomCounter>,
    /// That count when last read.
    oom_kills: Option<u64>,
    cold_memory: ColdMemory,
    /// The thread that hands cold memory back.
    releaser: Option<Releaser>,
    /// When the loop last did work (not a routine check), for the release of cold memory.
    last_work: Instant,
    /// When freed heap was last handed back (a release, or a trim amid sustained work).
    last_trim: Instant,
    /// When cold memory was last handed back, or asked to be at the next park (see
    /// `idle::CHECK_RELEASE_GAP`).
    last_release: Instant,
    /// What the run ledger hears.
    ledger: super::ledger::LedgerTap,
    /// The runs the syslog intake was last told of, as (program, main process, session) of
    /// each (`None`: syslog is off; see `syslog.rs`).
    syslog_owners: Option<Vec<(ProgramId, i32, i32)>>,
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
        let role = opts.role;
        let opts_logs = opts.logs.clone();
        let (tx, probe_events) = unbounded_channel();
        let (reloads_tx, reloads) = unbounded_channel();
        let oom_counter = crate::sys::cgroups::OomCounter::open();
        let tracking = Tracking::start(role);
        let syslog_owners = opts.syslog.as_ref().map(|_| Vec::new());
        Runner {
            reloads,
            reloads_tx,
            reading_config: false,
            queued_reloads: Vec::new(),
            core: Core::new(&config, Instant::now()),
            launcher: Launcher::new(opts.logs.clone(), tracking.tagger()),
            opts,
            probes: Probes::new(tx.clone()),
            health: HealthChecks::new(tx.clone()),
            adopted: Adopted::new(tx.clone()),
            tracking,
            strays: std::collections::HashMap::new(),
            next_stray_scan: None,
            guards_due: std::collections::HashMap::new(),
            evidence: std::collections::HashMap::new(),
            probe_tx: tx,
            probe_events,
            probe_streak: 0,
            notify: None,
            network: None,
            external_checks: Default::default(),
            external_execs: std::collections::HashMap::new(),
            upward: Upward::from_env(),
            exit: None,
            reaped: Vec::new(),
            config,
            pending_config: None,
            control,
            events,
            seq: 0,
            processes_seen: None,
            groups_led: None,
            core_pattern: CorePattern::read(),
            orphans_reaped: 0,
            oom_kills: oom_counter.as_ref().and_then(|c| c.count()),
            oom_counter,
            cold_memory: ColdMemory::AfterStartup,
            releaser: Releaser::start(|released| {
                debug!(
                    "idle: unmapped {} KiB of code ({} mappings), trimmed the heap",
                    released.resident_kib, released.mappings
                );
            }),
            last_work: Instant::now(),
            last_trim: Instant::now(),
            last_release: Instant::now(),
            ledger: super::ledger::LedgerTap::new(
                crate::logs::ledger::previous_boot().is_some(),
                opts_logs,
            ),
            syslog_owners,
        }
    }

    /// Runs until the container stops; returns ctrlinit's exit status.
    pub async fn run(mut self, mut signals: Signals) -> i32 {
        self.open_notify_socket();
        self.open_network_watch();
        self.boot();
        self.start_external_checks();
        loop {
            if let Some((code, deadline)) = self.exit {
                return self.finish_and_record(&mut signals, code, deadline).await;
            }
            self.tracking.new_turn();
            let deadline = self.core.next_deadline();
            // Once the init has been quiet for a moment with nothing scheduled: each piece of
            // work pushes this back, so it runs once after a burst (start-up, a restart, a
            // request), never amid one, and never while idle. A routine liveness check (one
            // that changed nothing) is not work: it neither postpones the release nor undoes it
            // (see `note_work`).
            let release_at = match deadline {
                None => self
                    .cold_memory
                    .release_at(self.last_work, self.last_release),
                Some(_) => None,
            };
            let (stray_at, guard_at) = (self.stray_deadline(), self.guard_deadline());
            // `routine`: the release itself; `routine_check`: a check that changed nothing.
            let (mut routine, mut routine_check) = (false, false);
            let (probes_first, mut probe_turn) = (self.probe_streak < PROBE_TURNS, false);
            tokio::select! {
                biased;
                arrived = signals.recv() => match arrived {
                    Ok(arrived) => self.on_signals(&arrived),
                    Err(e) => error!("failed to read signals: {e}"),
                },
                Some(event) = self.probe_events.recv(), if probes_first => {
                    probe_turn = true;
                    routine_check = self.on_probe_event(event);
                }
                // A due deadline (a backoff ending, a SIGKILL escalation) goes before requests:
                // a storm of clients keeps the request channel busy and must not starve it.
                _ = sleep_until(deadline), if deadline.is_some() => self.feed(Input::Tick),
                Some(done) = self.reloads.recv() => self.reload_read(done),
                Some(request) = self.control.recv() => self.on_control(request),
                // Link events come from the kernel, rarely; a turn reads a bounded number.
                () = network_ready(&self.network) => self.on_network(),
                // After requests: the socket is anyone's, and a flood must not hold them up
                // (each turn reads it for a bounded time; see `notify::intake`).
                () = notify_ready(&self.notify) => self.on_notify(),
                _ = sleep_until(stray_at), if stray_at.is_some() => {
                    routine = !self.on_stray_timer();
                }
                _ = sleep_until(guard_at), if guard_at.is_some() => routine = self.on_guard_timer(),
                _ = sleep_until(release_at), if release_at.is_some() => {
                    self.release_memory();
                    routine = true;
                }
                // Reports held back this turn and nothing else to do: they go first again.
                () = std::future::ready(()), if !probes_first => routine = true,
            }
            self.probe_streak = if probe_turn { self.probe_streak + 1 } else { 0 };
            self.note_work(routine, routine_check);
            self.start_queued_reload();
        }
    }

    /// The boot: its ledger record, then the core's start.
    fn boot(&mut self) {
        self.ledger.boot(&self.config, self.opts.role == Role::Pid1);
        self.feed(Input::Boot);
    }

    /// A check's, a pid file's or an adopted process's report. Returns whether it was routine:
    /// a liveness or external dependency's check that changed nothing (see `note_work`).
    fn on_probe_event(&mut self, event: ProbeEvent) -> bool {
        // An external dependency's check is routine as a liveness check is: one
        // that changed nothing must not keep the binary's code resident.
        let routine_kind = event.is_liveness() || event.is_external();
        let seq = self.seq;
        let input = if event.is_external() {
            self.on_external_event(event);
            None
        } else if let ProbeEvent::AdoptedExited { id, pid } = event {
            // Its zombie may be ctrlinit's after all (reparented since): reap first.
            self.reap();
            self.adopted.exited(id, pid, &self.core)
        } else if let ProbeEvent::PidFile { id, run, pid } = event {
            self.probes.event(event, &self.core, &self.launcher);
            // The daemon may have died already: its zombie is reaped first, so a
            // dead pid is not adopted.
            self.reap();
            self.pid_file_read(id, run, pid)
        } else if event.is_liveness() {
            self.health.event(event, &self.core, &self.launcher)
        } else {
            self.probes.event(event, &self.core, &self.launcher)
        };
        if let Some(input) = input {
            self.feed(input);
        }
        routine_kind && self.seq == seq
    }

    /// After one turn of the loop: work pushes the release of cold memory back (and undoes a
    /// release); the release itself and a routine check that changed nothing do not. A routine
    /// check after a release has its pages handed back as soon as the loop parks: no timer of
    /// its own, so an idle container with checks wakes only for the checks. Checks
    /// closer together than `idle::CHECK_RELEASE_GAP` share one release at the gap's end.
    fn note_work(&mut self, routine: bool, routine_check: bool) {
        if routine_check {
            if self.cold_memory == ColdMemory::Released {
                let now = Instant::now();
                let since = now.duration_since(self.last_release);
                if since >= super::idle::CHECK_RELEASE_GAP || since <= super::idle::CHECK_BURST {
                    if let Some(r) = &self.releaser {
                        r.request_at_park();
                    }
                    if since >= super::idle::CHECK_RELEASE_GAP {
                        self.last_release = now;
                    }
                } else {
                    self.cold_memory = ColdMemory::AfterChecks;
                }
            }
            // Otherwise a release already waits, and covers the check.
        } else if !routine {
            self.last_work = Instant::now();
            self.trim_amid_work();
            if let Some(r) = &self.releaser {
                r.withdraw_at_park();
            }
            if matches!(
                self.cold_memory,
                ColdMemory::Released | ColdMemory::AfterChecks
            ) {
                self.cold_memory = ColdMemory::AfterWork;
            }
        }
    }

    /// Hands the release to its thread, which acts once this loop has parked (see
    /// `sys::memory::Releaser`).
    fn release_memory(&mut self) {
        self.cold_memory = ColdMemory::Released;
        // What the last `status` found is kept a second (PROCESSES_FOR) and stale by now: a
        // few hundred bytes a program, not to be held while idle.
        self.processes_seen = None;
        self.last_trim = Instant::now();
        self.last_release = Instant::now();
        if let Some(r) = &self.releaser {
            r.request();
        }
    }

    /// Work that never pauses long enough for a release (a storm of crashes, a crash loop)
    /// still has the heap trimmed now and then, so what its bursts freed does not stay
    /// resident (see `idle::TRIM_AMID_WORK`).
    fn trim_amid_work(&mut self) {
        if self.last_trim.elapsed() >= super::idle::TRIM_AMID_WORK {
            self.last_trim = Instant::now();
            if let Some(r) = &self.releaser {
                r.trim();
            }
        }
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
                self.groups_led = None;
            }
            // Once the spawns' answers are in: the core knows every run the table names.
            self.share_owners();
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

    fn execute(&mut self, action: Action, queue: &mut VecDeque<Input>) {
        match action {
            Action::Spawn { id } => {
                let spawned = self.spawn_program(id);
                if let Input::Spawned { id, pid } = spawned {
                    self.share_spawned(id, pid);
                }
                queue.push_back(spawned);
            }
            Action::Probe { id, run } => {
                if let Some(p) = self.core.program(id) {
                    let spec = Arc::clone(&p.spec);
                    let evidence = self.evidence.entry(id).or_default();
                    self.probes.start(id, run, &spec, &self.launcher, evidence);
                }
            }
            Action::Adopted { id, pid } => self.adopted.watch(id, pid),
            Action::AwaitPidFile { id, run } => self.await_pid_file(id, run),
            Action::Watch { id, run } => {
                if let Some(p) = self.core.program(id) {
                    let spec = Arc::clone(&p.spec);
                    let evidence = self.evidence.entry(id).or_default();
                    self.health.start(id, run, &spec, evidence);
                }
            }
            Action::Signal {
                pgid,
                signal,
                cont,
                run_of,
            } => self.signal(pgid, signal, cont, run_of),
            Action::RunFinish { id, exit } => queue.push_back(self.spawn_finish(id, exit)),
            Action::RunPreStop { id, main } => queue.push_back(self.spawn_pre_stop(id, main)),
            Action::Crashed {
                id,
                pid,
                exit,
                uptime,
                oom_killed,
                limit,
            } => self.report_crash(id, pid, exit, uptime, oom_killed, limit),
            Action::TerminationMessage(line) => write_termination_log(&line),
            Action::TellNow(text) => {
                use std::io::Write;
                let _ = writeln!(std::io::stderr().lock(), "{text}");
            }
            Action::Exit { code, deadline } => self.exit = Some((code, deadline)),
            Action::Reloaded => {
                if let Some(config) = self.pending_config.take() {
                    for gone in self.config.programs.iter() {
                        if config.program(&gone.name).is_none() {
                            self.tracking.forget(&gone.name);
                        }
                    }
                    self.config = Arc::clone(&config);
                    let _ = self.opts.logs.send(LogCommand::Configure(config));
                    self.open_notify_socket();
                    self.start_external_checks();
                }
            }
            Action::Notice(n) => {
                log_notice(&n);
                self.ledger.noticed(&n, &self.core, Instant::now());
                self.announce(n);
            }
        }
    }

    /// Sends `signal` to process group `pgid` (then SIGCONT when `cont`) and to the processes
    /// of program `run_of`'s run that left it.
    fn signal(&mut self, pgid: i32, signal: Signal, cont: bool, run_of: Option<ProgramId>) {
        if self.group_of_another(pgid, run_of) {
            // A run's group number outlived its leader and now names another program's
            // run (pids are reused): that run is not this one's to signal.
            warn!("not sending {signal} to process group {pgid}: it is another program's run now");
        } else if cont {
            signal_group(pgid, signal);
        } else {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(-pgid), signal);
        }
        // And the run's processes that left its group.
        if let Some(r) = run_of
            .and_then(|id| self.core.program(id))
            .and_then(tracking::run_of)
        {
            self.tracking
                .signal_escaped(r, &|pid| self.core.owns_pid(pid), signal as i32, cont);
        }
    }

    /// Whether process group `pgid`, signalled for program `run_of`'s run, is led by another
    /// program's current run.
    fn group_of_another(&mut self, pgid: i32, run_of: Option<ProgramId>) -> bool {
        let Some(id) = run_of else {
            return false;
        };
        // Every group a run leads, read once for all the actions of one input: a container
        // stop signals thousands of groups in one batch, and a pass over every program for
        // each made it quadratic. Phases do not change while one input's actions run.
        let core = &self.core;
        let led = self.groups_led.get_or_insert_with(|| {
            let mut led: HashMap<i32, Vec<ProgramId>> = HashMap::new();
            for q in core.programs() {
                if let Some(g) = q.phase.pgid() {
                    led.entry(g).or_default().push(q.id);
                }
            }
            led
        });
        led.get(&pgid)
            .is_some_and(|ids| ids.iter().any(|&q| q != id))
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
}

/// The last look at every program's processes, kept a moment for the next `status`.
struct ProcessesSeen {
    /// The core's event sequence number when looked: a state change makes it stale.
    seq: u64,
    at: Instant,
    /// Whether usage was read too.
    usage: bool,
    programs: std::collections::HashMap<String, Processes>,
}

/// One program's processes and cgroup usage, as last looked at for `status` (see `requests`).
struct Processes {
    pids: Option<Vec<i32>>,
    usage: Option<crate::sys::cgroup2::Usage>,
}

/// An external's `exec` check in flight.
struct ExternalExec {
    name: String,
    started: Instant,
    deadline: tokio::task::JoinHandle<()>,
    timed_out: bool,
    _done: oneshot::Sender<()>,
}

/// A stray being watched (see `strays`).
#[derive(Debug, Clone, Copy)]
struct Stray {
    /// When it was first seen.
    seen: Instant,
    /// When SIGTERM went to it, if it did.
    termed: Option<Instant>,
}

/// Resolves when the sd_notify socket may have datagrams; never without one.
async fn notify_ready(intake: &Option<NotifyIntake>) {
    match intake {
        Some(n) => n.ready().await,
        None => std::future::pending().await,
    }
}

/// Resolves when the network watch has work (link events, the grace's end); never without one.
async fn network_ready(links: &Option<crate::supervisor::watch::links::Links>) {
    match links {
        Some(l) => l.wait().await,
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

//! The typed settings ctrlinit runs from: the `[init]` table and every `[program.NAME]`, as the
//! loader leaves them (validated, interpolated, defaults settled).

pub use super::external_spec::{ExternalCheck, ExternalSpec, HostPort, OnTimeout};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;

/// Everything ctrlinit needs to run: the `[init]` table and every `[program.NAME]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Init-wide settings (`[init]`).
    pub init: InitSettings,
    /// Programs sorted by name, each shared with the supervisor's core (which holds them for
    /// the life of the configuration): one copy of every spec, not two.
    pub programs: Vec<std::sync::Arc<ProgramSpec>>,
    /// Dependencies outside the container (`[external.NAME]`), sorted by name.
    pub externals: Vec<ExternalSpec>,
    /// Problems worth telling about that do not stop a start (printed by `check` and at start).
    pub warnings: Vec<String>,
}

impl Config {
    /// The program called `name`, if any.
    pub fn program(&self, name: &str) -> Option<&ProgramSpec> {
        self.programs
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.as_ref())
    }
}

/// How program lines reach ctrlinit's standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleMode {
    /// `name | line`, names padded to a common width; stderr lines use `!`.
    Prefix,
    /// One JSON object per line: timestamp, program, stream and line.
    Json,
    /// The program's bytes, unchanged.
    Plain,
    /// Nothing reaches the console.
    Off,
}

/// The container-wide settings of the `[init]` table, with their defaults where it is absent.
#[derive(Debug, Clone, PartialEq)]
pub struct InitSettings {
    /// Whole-container stop budget after SIGTERM/SIGINT.
    pub stop_timeout: Duration,
    /// Exit status when a program exhausts its restart budget.
    pub exit_code: u8,
    /// Directory for program log files and ctrlinit's own log.
    pub log_dir: PathBuf,
    /// Directory for core files and crash reports.
    pub crash_dir: PathBuf,
    /// How program lines reach the console.
    pub console: ConsoleMode,
    /// Where the control socket is bound (`--socket` and `CTRLINIT_SOCKET` override it).
    pub socket: PathBuf,
    /// Group allowed to use the control socket (mode 0660), by name or id.
    pub socket_group: Option<String>,
    /// Default cores kept per program.
    pub max_cores: u32,
    /// Default crash reports kept per program.
    pub max_reports: u32,
    /// Cap on the total size of everything in `crash_dir`, in bytes (the oldest go first).
    pub crash_max_size: u64,
    /// Mode of log files ctrlinit creates (their directories get search where read is allowed).
    pub log_mode: u32,
    /// Mode of crash reports and cores (crash reports hold argv and the last output lines).
    pub crash_mode: u32,
    /// Whether programs start with ctrlinit's whole environment (`true`) or only `PATH`, `HOME`,
    /// `USER` and `CTRLINIT_*` from it; a program's own `inherit_env` wins.
    pub inherit_env: bool,
    /// ctrlinit's own log level filter (`error`, `warn`, `info`, `debug`, `trace`); `None` when
    /// not set: `info`, or `warn` when a `--` command is the main program (a tini-style run says
    /// nothing of its own unless something goes wrong).
    pub log_level: Option<String>,
    /// Where the read-only probe endpoint listens (`/livez`, `/readyz`, `/metrics`,
    /// `/v1/status`); off when `None`.
    pub http: Option<SocketAddr>,
    /// Strays (processes reparented to ctrlinit that belong to no program): reaped only, or
    /// killed after `orphan_grace`.
    pub orphans: OrphanPolicy,
    /// How long a stray may live with `orphans = "kill"`.
    pub orphan_grace: Duration,
    /// On a requested stop, how long to report not ready (`health`, `/readyz`) before stopping
    /// anything (within `stop_timeout`).
    pub drain: Duration,
    /// The standard streams of the `--` command (`inherit` unless set to `pipe`).
    pub main_stdio: StdioMode,
    /// The sd_notify socket programs with `ready = { notify = "systemd" }` or a `watchdog` are
    /// given; `None`: `ctrlinit-notify.sock` next to the control socket.
    pub notify_socket: Option<PathBuf>,
    /// `[init.network]`: the container's network as a watched dependency; `None` (no table):
    /// not watched.
    pub network: Option<NetworkWatch>,
    /// Whether ctrlinit writes its run ledger (`ledger.jsonl` in `log_dir`; `[init] ledger`).
    pub ledger: bool,
    /// The size at which the ledger is rotated (`[init] ledger_max_size`; 5 older files kept).
    pub ledger_max_size: u64,
    /// `syslog`: the datagram socket daemons' syslog lines are read from (`/dev/log`); `None`
    /// (absent or `""`): off.
    pub syslog: Option<PathBuf>,
    /// `syslog_stream`: a stream socket for clients that only speak stream (`logger -T`,
    /// syslog-ng's clients); `None`: none. It needs a path of its own: one path holds one socket.
    pub syslog_stream: Option<PathBuf>,
    /// Which of `log_dir`, `crash_dir` and `socket` someone chose (a file, the environment or
    /// the command line): one that cannot be used is an error. A default that cannot be used
    /// (a non-root user, a read-only root) only turns off what needs it, with a warning.
    pub chosen: ChosenPaths,
}

/// Whether each place was chosen rather than left at its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChosenPaths {
    /// `log_dir` or `CTRLINIT_LOG_DIR`.
    pub log_dir: bool,
    /// `crash_dir` or `CTRLINIT_CRASH_DIR`.
    pub crash_dir: bool,
    /// `socket`, `--socket` or `CTRLINIT_SOCKET`.
    pub socket: bool,
}

/// `[init.network]`: what to do when the container's network interfaces go away (a holder
/// container restarted in a new namespace, a VPN tunnel gone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkWatch {
    /// Stop the container, or only report.
    pub on_lost: OnNetworkLost,
    /// How long every watched interface may be gone before it counts as lost.
    pub grace: Duration,
    /// The container's exit status when it stops for a lost network.
    pub exit_code: u8,
    /// The interfaces watched, by name; `None`: every non-loopback interface present when
    /// ctrlinit started.
    pub interfaces: Option<Vec<String>>,
}

impl Default for NetworkWatch {
    fn default() -> Self {
        NetworkWatch {
            on_lost: OnNetworkLost::Warn,
            grace: Duration::from_secs(3),
            exit_code: 76,
            interfaces: None,
        }
    }
}

/// `[init.network] on_lost`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnNetworkLost {
    /// Stop the container the normal way and exit with `exit_code`, so the engine restarts it
    /// in the holder's new namespace.
    Exit,
    /// Log, announce, report not ready; stop nothing.
    Warn,
}

impl OnNetworkLost {
    /// As written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            OnNetworkLost::Exit => "exit",
            OnNetworkLost::Warn => "warn",
        }
    }
}

impl InitSettings {
    /// Whether some program has ctrlinit's own standard streams: then ctrlinit's own lines go to
    /// stderr (stdout belongs to the program).
    pub fn own_lines_to_stderr<P: AsRef<ProgramSpec>>(programs: &[P]) -> bool {
        programs
            .iter()
            .any(|p| p.as_ref().stdio == StdioMode::Inherit)
    }

    /// The sd_notify socket's path.
    pub fn notify_socket_path(&self) -> PathBuf {
        self.notify_socket.clone().unwrap_or_else(|| {
            let dir = self.socket.parent().filter(|d| !d.as_os_str().is_empty());
            dir.unwrap_or(std::path::Path::new("."))
                .join("ctrlinit-notify.sock")
        })
    }
}

impl Default for InitSettings {
    fn default() -> Self {
        InitSettings {
            stop_timeout: Duration::from_secs(9),
            exit_code: 75,
            log_dir: PathBuf::from("/var/log/ctrlinit"),
            crash_dir: PathBuf::from("/var/crash/ctrlinit"),
            console: ConsoleMode::Prefix,
            socket: PathBuf::from("/run/ctrlinit.sock"),
            socket_group: None,
            max_cores: 3,
            max_reports: 20,
            crash_max_size: 1 << 30,
            log_mode: 0o640,
            crash_mode: 0o640,
            log_level: None,
            inherit_env: true,
            http: None,
            main_stdio: StdioMode::Inherit,
            drain: Duration::ZERO,
            orphans: OrphanPolicy::Reap,
            orphan_grace: Duration::from_secs(5),
            notify_socket: None,
            network: None,
            ledger: true,
            ledger_max_size: 10 << 20,
            syslog: None,
            syslog_stream: None,
            chosen: ChosenPaths::default(),
        }
    }
}

/// What happens to a process that was reparented to ctrlinit and belongs to no program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanPolicy {
    /// Reaped when it exits, left alone until then.
    Reap,
    /// Also stopped (SIGTERM, then SIGKILL) once it has been a stray for `orphan_grace`.
    Kill,
}

/// Whether a program is a long-running service or runs to completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Long-running; `running` once ready.
    Service,
    /// Runs to completion (provisioning, cleanup); `completed` once it succeeded.
    Oneshot,
}

impl Kind {
    /// As `type` is written in the config (a forking daemon is a `service` here), and as
    /// `status` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Service => "service",
            Kind::Oneshot => "oneshot",
        }
    }
}

/// When a program is restarted after its main process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    /// After every exit, success or not.
    Always,
    /// Only when the exit is not one of `success_codes`.
    OnFailure,
    /// Never: one run only.
    Never,
}

/// What a dependent waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// The dependency has been spawned.
    Started,
    /// The dependency passed its readiness check (a oneshot: completed).
    Ready,
    /// The dependency (a oneshot) ran to success.
    Completed,
}

impl Condition {
    /// As written in a `depends_on` table, and as `graph` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::Started => "started",
            Condition::Ready => "ready",
            Condition::Completed => "completed",
        }
    }
}

/// One edge of the dependency graph, as the dependent declared it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The program depended on.
    pub name: String,
    /// What must hold before the dependent starts.
    pub condition: Condition,
    /// Restart the dependent whenever this dependency's run ends.
    pub restart: bool,
}

/// What happens when a program exhausts its restart budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnExhausted {
    /// Stop everything and exit with `init.exit_code`.
    Exit,
    /// Leave the program down; the rest keeps running.
    Stop,
}

/// How a service shows it is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadyProbe {
    /// A TCP connect succeeds.
    Tcp(SocketAddr),
    /// A command exits 0.
    Exec(Vec<String>),
    /// A file exists, written (or touched) by this run: one left by an earlier run never counts.
    File(PathBuf),
    /// An HTTP GET answers 2xx or 3xx.
    Http(HttpTarget),
    /// The program sends `READY=1` to `NOTIFY_SOCKET` (systemd's sd_notify protocol).
    Notify,
    /// The program writes a newline to this descriptor (s6's notification fd).
    Fd(i32),
    /// A line of its output matches this pattern.
    Log(LinePattern),
    /// The run has stayed up this long (supervisord's `startsecs`): an exit before then is a
    /// failed run, whatever its status.
    Uptime(Duration),
}

impl ReadyProbe {
    /// As `status` and `check` show it: `tcp 127.0.0.1:80`, `exec cmd arg`, `file /run/x`,
    /// `uptime 5s`.
    pub fn describe(&self) -> String {
        match self {
            ReadyProbe::Tcp(a) => format!("tcp {a}"),
            ReadyProbe::Exec(argv) => format!("exec {}", argv.join(" ")),
            ReadyProbe::File(f) => format!("file {}", f.display()),
            ReadyProbe::Http(t) => format!("http {}", t.url),
            ReadyProbe::Notify => "notify systemd".into(),
            ReadyProbe::Fd(fd) => format!("fd {fd}"),
            ReadyProbe::Log(p) => format!("log {:?}", p.source),
            ReadyProbe::Uptime(d) => format!("uptime {}", humantime::format_duration(*d)),
        }
    }

    /// Whether the program tells ctrlinit itself (no polling: `interval` has no use).
    pub fn is_pushed(&self) -> bool {
        matches!(
            self,
            ReadyProbe::Notify | ReadyProbe::Fd(_) | ReadyProbe::Log(_)
        )
    }
}

/// The `ready` setting: a probe and how often it is tried until it passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyCheck {
    /// The check that tells the program is ready.
    pub probe: ReadyProbe,
    /// How long a polled check (`tcp`, `http`, `exec`, `file`) waits between attempts; pushed
    /// ones (`notify`, `fd`, `log`) do not poll.
    pub interval: Duration,
}

/// Where an `http` check connects, and what it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTarget {
    /// The URL as written.
    pub url: String,
    /// Address and port (an IP literal or `localhost`: no DNS lookup from PID 1).
    pub addr: SocketAddr,
    /// The `Host` header: the URL's host and port.
    pub host: String,
    /// Path and query, `/` when the URL has none.
    pub path: String,
}

/// A regular expression over output lines, compiled once at load.
#[derive(Debug, Clone)]
pub struct LinePattern {
    /// The pattern as written.
    pub source: String,
    /// `source`, compiled: it matches a line's bytes, so a line need not be UTF-8.
    pub regex: regex::bytes::Regex,
}

impl PartialEq for LinePattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for LinePattern {}

/// What a liveness check (`[program.NAME.health] check`) looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HealthProbe {
    /// An HTTP GET answers 2xx or 3xx within the timeout.
    Http(HttpTarget),
    /// A TCP connect succeeds within the timeout.
    Tcp(SocketAddr),
    /// A command exits 0 within the timeout.
    Exec(Vec<String>),
    /// A file this run touched no longer ago than `max_age`.
    Heartbeat {
        /// The file the program touches to show it is alive (its modification time is read).
        path: PathBuf,
        /// Oldest modification time that still passes.
        max_age: Duration,
    },
    /// The program wrote an output line no longer ago than this.
    Silence(Duration),
}

impl HealthProbe {
    /// As `status` shows it: `http http://…`, `tcp …`, `exec …`, `heartbeat /run/x (30s)`.
    pub fn describe(&self) -> String {
        match self {
            HealthProbe::Http(t) => format!("http {}", t.url),
            HealthProbe::Tcp(a) => format!("tcp {a}"),
            HealthProbe::Exec(argv) => format!("exec {}", argv.join(" ")),
            HealthProbe::Heartbeat { path, max_age } => {
                format!(
                    "heartbeat {} (max_age {}s)",
                    path.display(),
                    max_age.as_secs_f64()
                )
            }
            HealthProbe::Silence(d) => format!("silence {}s", d.as_secs_f64()),
        }
    }
}

/// What a failed liveness check leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnHealthFailure {
    /// Restart the program (counted against its budget, propagated to `restart = true`
    /// dependents).
    Restart,
    /// Only report it: `health`, `status`, metrics and events.
    Mark,
}

/// A program's liveness settings (`[program.NAME.health]`): what is checked once it is ready,
/// how often, and what repeated failures lead to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthSettings {
    /// The liveness check, if any (a table may hold only a `watchdog`).
    pub check: Option<HealthProbe>,
    /// How often a check starts while the program runs: checks start this far apart whatever
    /// they take.
    pub interval: Duration,
    /// A check that takes longer failed.
    pub timeout: Duration,
    /// Consecutive failures before acting.
    pub failures: u32,
    /// Consecutive passes to count as healthy again.
    pub successes: u32,
    /// Failures this soon after the program became ready do not count.
    pub start_period: Duration,
    /// What `failures` consecutive failures lead to: a restart, or only a mark.
    pub on_failure: OnHealthFailure,
    /// sd_notify watchdog: `WATCHDOG=1` must arrive at least this often once ready.
    pub watchdog: Option<Duration>,
}

impl Default for HealthSettings {
    fn default() -> Self {
        HealthSettings {
            check: None,
            interval: Duration::from_secs(10),
            timeout: Duration::from_secs(3),
            failures: 3,
            successes: 1,
            start_period: Duration::ZERO,
            on_failure: OnHealthFailure::Restart,
            watchdog: None,
        }
    }
}

/// Exponential backoff between restarts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Delay before the first restart.
    pub initial: Duration,
    /// Longest delay; a run that lasted this long resets the delay to `initial`.
    pub max: Duration,
    /// What each restart multiplies the delay by (up to `max`).
    pub factor: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            factor: 2.0,
        }
    }
}

/// A resource limit a program is started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RlimitSetting {
    /// Which limit (`RLIMIT_NOFILE` …).
    pub resource: nix::sys::resource::Resource,
    /// Soft and hard value; `None` is unlimited.
    pub value: Option<u64>,
}

/// What a program's standard streams are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdioMode {
    /// stdin `/dev/null`; stdout and stderr are pipes to the log thread (prefix, files, ring).
    Pipe,
    /// ctrlinit's own stdin, stdout and stderr, byte for byte; with a terminal on stdin, the
    /// program is the terminal's foreground process group (as tini runs its child).
    Inherit,
}

/// Where stderr lines go in the log files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StderrMode {
    /// Into `<name>.log` with stdout.
    Merge,
    /// Into `<name>.err.log`.
    Separate,
    /// Into stdout's pipe: the program's fd 2 is its fd 1, so its lines keep the order they were
    /// written in across both streams and cost one pipe instead of two; they are stdout's lines
    /// everywhere (`|` on the console, `<name>.log`).
    Stdout,
}

/// Where a program's output goes (`[program.NAME.log]`): the console, its log files, and how
/// they rotate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSettings {
    /// Forward lines to the console.
    pub console: bool,
    /// Write `<log_dir>/<name>.log`.
    pub file: bool,
    /// Whether stderr lines share stdout's file or have their own.
    pub stderr: StderrMode,
    /// Rotate before a file passes this size, in bytes (at a line boundary).
    pub max_size: u64,
    /// How many rotated files (`<name>.log.1` …) are kept; older ones are deleted.
    pub keep: u32,
    /// Prefix file lines with a UTC timestamp.
    pub timestamps: bool,
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            console: true,
            file: true,
            stderr: StderrMode::Merge,
            max_size: 10 << 20,
            keep: 5,
            timestamps: false,
        }
    }
}

/// A user to run a program as, resolved at load time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// User id (`None`: keep ctrlinit's).
    pub uid: Option<u32>,
    /// Primary group id (`None`: keep ctrlinit's, or the user's primary group).
    pub gid: Option<u32>,
    /// Supplementary groups (`None`: keep ctrlinit's).
    pub groups: Option<Vec<u32>>,
    /// Login name and home directory, exported as USER, LOGNAME and HOME.
    pub user_name: Option<String>,
    /// Home directory of the user.
    pub home: Option<PathBuf>,
}

/// Which instanced program an instance is one of: `[program.web]` with `instances = 3` runs
/// `web-0`, `web-1` and `web-2`, each a program of its own (state, logs, budget, crash reports)
/// that `start web` and `depends_on = ["web"]` take together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The table's name (`web`): what `start`, `stop`, `status` and `depends_on` call them all.
    pub group: String,
    /// Its `${INSTANCE}`, from 0; its name is `<group>-<index>`.
    pub index: u32,
}

/// One `[program.NAME]` table, validated (or one instance of it, with `instances = N`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramSpec {
    /// `[a-z0-9_.-]+`; an instance's is `<group>-<index>`.
    pub name: String,
    /// The instanced program it is one of (`None` for a program without `instances`). The
    /// count is not kept here: a reload that changes it leaves the instances it keeps alone.
    pub instance: Option<Instance>,
    /// The argv to exec, interpolated (a single string is split as a shell would); never empty.
    /// A first word without `/` is looked up in `PATH`.
    pub command: Vec<String>,
    /// Whether it is expected to keep running (`service`, also a forking daemon) or to run to
    /// completion (`oneshot`).
    pub kind: Kind,
    /// Whether it starts when ctrlinit does; `false` leaves it `stopped` (and healthy) until it
    /// is started by hand.
    pub autostart: bool,
    /// Its end (when not restarted) ends the container with its status.
    pub main: bool,
    /// What it waits for.
    pub depends_on: Vec<Dependency>,
    /// Ordering only (`after = ["redis"]`): it starts once these have started (or are down, or
    /// are not coming up), and stops before them; no requirement, no restart propagation.
    pub after: Vec<String>,
    /// A name it answers to together with the other programs that give the same one
    /// (`member_of = "backend"`: `restart backend`, `backend:*`), as supervisord's
    /// `[group:backend]` members do; not a program name, and nothing but control commands.
    pub member_of: Option<String>,
    /// Readiness check, if any.
    pub ready: Option<ReadyCheck>,
    /// How long a start may take to become ready.
    pub ready_timeout: Duration,
    /// Liveness checks and the sd_notify watchdog, once ready.
    pub health: Option<HealthSettings>,
    /// When it is restarted after its main process ends.
    pub restart: RestartPolicy,
    /// Exit codes that count as success.
    pub success_codes: Vec<i32>,
    /// How long to wait before each restart, and how that grows.
    pub backoff: Backoff,
    /// Restarts allowed within `restart_window`.
    pub max_restarts: u32,
    /// The sliding window of the budget.
    pub restart_window: Duration,
    /// What happens once `max_restarts` is spent: the container exits, or the program stays down.
    pub on_exhausted: OnExhausted,
    /// Hook run after every exit.
    pub finish: Option<Vec<String>>,
    /// Hook run before the stop signal (deregister, drain), bounded by `pre_stop_timeout`.
    pub pre_stop: Option<Vec<String>>,
    /// Longest a `pre_stop` hook may run (within the program's stop and the container's budget).
    pub pre_stop_timeout: Duration,
    /// First signal of a stop.
    pub stop_signal: Signal,
    /// Time between `stop_signal` and SIGKILL.
    pub stop_timeout: Duration,
    /// Identity to run as.
    pub run_as: RunAs,
    /// Where it runs (the directory it changes to before exec).
    pub workdir: Option<PathBuf>,
    /// Whether it starts with ctrlinit's whole environment, or only `PATH`, `HOME`, `USER` and
    /// `CTRLINIT_*` from it (its `env_file` and `env` in both cases).
    pub inherit_env: bool,
    /// Added environment (after `env_file`).
    pub env: Vec<(String, String)>,
    /// KEY=VALUE file read at each start.
    pub env_file: Option<PathBuf>,
    /// The file mode creation mask it starts with; `None`: ctrlinit's own.
    pub umask: Option<u32>,
    /// Resource limits it starts with (soft and hard).
    pub rlimits: Vec<RlimitSetting>,
    /// Where its output goes: the console, its log files, their rotation.
    pub log: LogSettings,
    /// Whether its standard streams are pipes to the log thread or ctrlinit's own.
    pub stdio: StdioMode,
    /// A forking daemon's pid file (`type = "forking"`): its launcher must exit 0, then the pid
    /// it names (of this run) is the program's main process.
    pub pidfile: Option<PathBuf>,
    /// The `--` command, run as tini runs its child: TERM, INT and QUIT reach it as they came,
    /// every other asynchronous signal is forwarded to it, and it starts with the signal mask
    /// and ignored signals ctrlinit itself was started with.
    pub passthrough: bool,
    /// Allow and collect core dumps.
    pub core_dumps: bool,
    /// How many of its core files are kept in `crash_dir` (the oldest go first).
    pub max_cores: u32,
    /// How many of its crash reports are kept in `crash_dir` (the oldest go first).
    pub max_reports: u32,
    /// Where it was defined, for messages: `file:line`.
    pub defined_at: String,
    /// `[program.NAME.limits]`: the memory and descriptor guards, the cgroup's hard limits.
    pub limits: Option<super::limits::Limits>,
}

/// So that lists of specs, owned or shared (`Arc`), are read by the same functions.
impl AsRef<ProgramSpec> for ProgramSpec {
    fn as_ref(&self) -> &ProgramSpec {
        self
    }
}

impl ProgramSpec {
    /// Where the user wrote this program's `key`, for a fix line: `program.api.command`, or,
    /// for the `--` command (which no file names), `the command given after --`.
    pub fn written_as(&self, key: &str) -> String {
        if self.passthrough && key == "command" {
            return "the command given after --".into();
        }
        let table = self.instance.as_ref().map_or(&self.name, |i| &i.group);
        format!("program.{}.{key}", super::names::short(table))
    }

    /// The uptime a run must reach to be ready (`ready = { uptime }`), if that is its check.
    pub fn ready_uptime(&self) -> Option<Duration> {
        match self.ready.as_ref().map(|r| &r.probe) {
            Some(ReadyProbe::Uptime(d)) if self.kind == Kind::Service => Some(*d),
            _ => None,
        }
    }

    /// Whether it is given `NOTIFY_SOCKET`: it reports readiness or feeds a watchdog through it.
    pub fn speaks_notify(&self) -> bool {
        matches!(
            self.ready.as_ref().map(|r| &r.probe),
            Some(ReadyProbe::Notify)
        ) || self.health.as_ref().is_some_and(|h| h.watchdog.is_some())
    }

    /// A spec with every default, for `name` running `command` (used for the `--` program and tests).
    pub fn new(name: &str, command: Vec<String>, kind: Kind) -> Self {
        ProgramSpec {
            name: name.to_string(),
            instance: None,
            command,
            kind,
            autostart: true,
            main: false,
            depends_on: Vec::new(),
            after: Vec::new(),
            member_of: None,
            ready: None,
            ready_timeout: Duration::from_secs(60),
            health: None,
            restart: match kind {
                Kind::Service => RestartPolicy::Always,
                Kind::Oneshot => RestartPolicy::OnFailure,
            },
            success_codes: vec![0],
            backoff: Backoff::default(),
            max_restarts: 5,
            restart_window: Duration::from_secs(60),
            on_exhausted: OnExhausted::Exit,
            finish: None,
            pre_stop: None,
            pre_stop_timeout: Duration::from_secs(5),
            stop_signal: Signal::SIGTERM,
            stop_timeout: Duration::from_secs(5),
            run_as: RunAs {
                uid: None,
                gid: None,
                groups: None,
                user_name: None,
                home: None,
            },
            workdir: None,
            inherit_env: true,
            env: Vec::new(),
            env_file: None,
            umask: None,
            rlimits: Vec::new(),
            log: LogSettings::default(),
            stdio: StdioMode::Pipe,
            passthrough: false,
            pidfile: None,
            core_dumps: false,
            max_cores: 3,
            max_reports: 20,
            defined_at: String::new(),
            limits: None,
        }
    }
}

//! The control protocol's words: what a client asks ([`Request`]) and what the init answers
//! ([`Response`]), with a typed error ([`ErrorKind`]) so a client chooses its exit status by
//! kind, never by matching text. Framing (versions, line encoding, bounds) is
//! `api::protocol`'s.

use serde::{Deserialize, Serialize};

use super::state::State;

/// A program and the state it must reach, for `status --wait`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// The program it is about: a program's name, or an instanced program's (then it must hold
    /// for each instance).
    pub name: String,
    /// Any of these states satisfies it.
    pub states: Vec<State>,
}

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Programs' states (all when `names` is empty).
    Status {
        /// Programs to show, by name (an instanced program's name shows its instances); empty
        /// shows every one.
        #[serde(default)]
        names: Vec<String>,
        /// Read each program's CPU time and memory too (its cgroup's files: a cost per
        /// program, so only when asked).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        usage: bool,
    },
    /// Block until every condition holds or `timeout_ms` passes.
    Wait {
        /// Conditions, all of which must hold at once.
        conditions: Vec<Condition>,
        /// How long the server waits for them, in milliseconds.
        timeout_ms: u64,
    },
    /// Start programs (with what they need).
    Start {
        /// Programs to start (with `all`, ignored).
        #[serde(default)]
        names: Vec<String>,
        /// Start every program.
        #[serde(default)]
        all: bool,
        /// How long to wait for the change to be applied.
        timeout_ms: u64,
    },
    /// Stop programs (after what requires them).
    Stop {
        /// Programs to stop (with `all`, ignored).
        #[serde(default)]
        names: Vec<String>,
        /// Stop every program.
        #[serde(default)]
        all: bool,
        /// How long to wait for the change to be applied.
        timeout_ms: u64,
    },
    /// Restart programs and what requires them.
    Restart {
        /// Programs to restart (with `all`, ignored).
        #[serde(default)]
        names: Vec<String>,
        /// Restart every program.
        #[serde(default)]
        all: bool,
        /// How long to wait for the change to be applied.
        timeout_ms: u64,
    },
    /// Send a signal to programs' process groups.
    Signal {
        /// Signal name such as `SIGHUP`.
        signal: String,
        /// Programs whose process groups get it.
        names: Vec<String>,
    },
    /// Last lines from the in-memory rings, then (with `follow`) live output.
    Logs {
        /// Programs (all when empty).
        #[serde(default)]
        names: Vec<String>,
        /// How many of each program's last lines to send from its ring (fewer when it holds
        /// fewer).
        lines: usize,
        /// Keep streaming new lines.
        #[serde(default)]
        follow: bool,
        /// Each program's lines together, by name, instead of merged in the order they were
        /// written.
        #[serde(default)]
        by_program: bool,
    },
    /// A live stream of state changes.
    Events,
    /// Whether every program is in its wanted state (or, with `live`, whether the container
    /// is alive: what `/livez` answers).
    Health {
        /// Also count programs stopped by hand.
        #[serde(default)]
        strict: bool,
        /// Liveness only: fails only while a program is past its liveness threshold or the
        /// container stops, not while a program restarts within its budget.
        #[serde(default)]
        live: bool,
    },
    /// Re-read the configuration directory and apply the difference.
    Reload,
    /// Stop the container gracefully.
    Shutdown,
    /// The dependency graph with states.
    Graph,
}

/// How a run ended, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal name, when killed.
    pub signal: Option<String>,
    /// Whether it dumped core.
    pub core_dumped: bool,
    /// Whether the OOM killer took it.
    #[serde(default)]
    pub oom_killed: bool,
    /// `exit status 3`, `killed by SIGSEGV (core dumped)`.
    pub text: String,
}

/// One program as `status` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramStatus {
    /// Program name, as in its `[program.NAME]` table.
    pub name: String,
    /// `service` or `oneshot`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its state, in the lowercase vocabulary.
    pub state: State,
    /// Main process, while it runs.
    pub pid: Option<i32>,
    /// Process group, while it runs.
    pub pgid: Option<i32>,
    /// Spawn counter (grows with every run).
    pub run: u64,
    /// Milliseconds in the current state.
    pub since_ms: u64,
    /// Milliseconds since the current run was spawned, while it runs.
    pub uptime_ms: Option<u64>,
    /// Restarts made by policy since start.
    pub restarts: u64,
    /// Restarts within the current window.
    pub restarts_in_window: u32,
    /// Restarts allowed within the window (`max_restarts`).
    pub max_restarts: u32,
    /// Restarts forced by a dependency or by hand (not counted against the budget).
    pub forced_restarts: u64,
    /// How the last run ended.
    pub last_exit: Option<ExitInfo>,
    /// Readiness: `tcp 127.0.0.1:80`, `exec …`, `file …`, or none.
    pub readiness: Option<String>,
    /// Whether it has passed readiness in its current run.
    pub ready: bool,
    /// Milliseconds until the restart, in backoff.
    pub backoff_remaining_ms: Option<u64>,
    /// What it waits for, while waiting.
    pub waiting_for: Option<String>,
    /// Why, while waiting: `config-api: tcp config:8082: connection refused` for an external
    /// dependency (its last check), `db to be ready (db is starting)` for a program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_why: Option<String>,
    /// Why it is down on purpose, when it is.
    pub down_reason: Option<String>,
    /// Whether it was stopped by hand.
    pub stopped_by_hand: bool,
    /// Whether it is the container's main program.
    pub main: bool,
    /// Its liveness, when it has a `[program.NAME.health]` table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthInfo>,
    /// What it said over sd_notify, when it speaks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<NotifyInfo>,
    /// Restarts by cause: `exit`, `readiness`, `health`, `limit` (by policy, counted against the budget),
    /// `dependency`, `manual` (forced, not counted).
    #[serde(default)]
    pub restarts_by_cause: RestartsByCause,
    /// How many processes its run has now (its process group and those that left it), while
    /// any may be alive.
    #[serde(default)]
    pub processes: Option<u32>,
    /// Those processes' pids, in ascending order; empty when none may be alive.
    #[serde(default)]
    pub pids: Vec<i32>,
    /// `cgroup` or `marker`: how its processes are told from others (see the book).
    #[serde(default)]
    pub tracking: Option<String>,
    /// Memory its cgroup uses, in bytes (cgroup tracking with the memory controller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// CPU time its cgroup has used, in microseconds (cgroup tracking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_usec: Option<u64>,
    /// Its `[program.NAME.limits]` and the figures last read for them, when it has the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsInfo>,
}

/// A program's `[program.NAME.limits]`, as `status` shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsInfo {
    /// `memory`: the resident memory it is restarted past, in bytes.
    pub memory_bytes: Option<u64>,
    /// `fds`: the open descriptors it is restarted past.
    pub fds: Option<u64>,
    /// `interval`, in milliseconds.
    pub interval_ms: u64,
    /// `memory_max`: the hard limit asked of its cgroup, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_max_bytes: Option<u64>,
    /// `pids_max`: the hard limit asked of its cgroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids_max: Option<u64>,
    /// The current run's figures when last read; `None` before the first read of a run.
    pub last: Option<LimitFigures>,
    /// The limit the current run went past (`memory 1.21 GiB over 1 GiB`), while it is
    /// stopped for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
}

/// What a run's processes used when its limits were last looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitFigures {
    /// Resident memory, in bytes (read only when `memory` is set).
    pub memory_bytes: Option<u64>,
    /// Open descriptors (read only when `fds` is set).
    pub fds: Option<u64>,
    /// Processes of the run.
    pub processes: Option<u64>,
    /// Where the memory figure came from: `cgroup` (`memory.current`) or `proc` (the sum of
    /// its processes' resident memory).
    pub source: String,
    /// How long ago, in milliseconds.
    pub ago_ms: u64,
}

/// A program's liveness, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthInfo {
    /// `starting`, `healthy`, `unhealthy 2/3` (failures so far of those allowed), `unhealthy`
    /// (past the threshold), or `-` while not running.
    pub status: String,
    /// Whether it is past its failure threshold (`health` fails while it is).
    pub unhealthy: bool,
    /// The check: `http http://127.0.0.1:8080/healthz`, `watchdog 30s`.
    pub check: String,
    /// `restart` or `mark`.
    pub on_failure: String,
    /// The last check's result; `None` until a check has finished since the program last
    /// became ready.
    pub last: Option<CheckInfo>,
    /// Checks made since ctrlinit started.
    pub checks_total: u64,
    /// Checks failed since ctrlinit started.
    pub failures_total: u64,
}

/// One liveness check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckInfo {
    /// Whether it passed (a check that timed out or could not start failed).
    pub passed: bool,
    /// What it said (truncated): `HTTP 200 OK`, an exec check's output.
    pub output: String,
    /// How long it took, in milliseconds.
    pub took_ms: u64,
    /// How long ago it ended, in milliseconds.
    pub ago_ms: u64,
    /// When it ended (RFC 3339).
    pub time: String,
}

/// What a program said over sd_notify.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotifyInfo {
    /// The text of its last `STATUS=` (free-form, shown in `status`); `None` until it sends one.
    pub status: Option<String>,
    /// It sent `RELOADING=1` and no `READY=1` since.
    pub reloading: bool,
    /// It sent `STOPPING=1`.
    pub stopping: bool,
    /// The error number of its last `ERRNO=` (a failure it reports about itself); `None` until
    /// it sends one.
    pub errno: Option<i32>,
}

/// A program's restarts counted by what caused them (`restarts_by_cause` in `status`, the
/// `cause` label of `ctrlinit_program_restarts_total`): the first three are by policy and count
/// against `max_restarts`, the last two are forced and do not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartsByCause {
    /// The run ended by itself.
    pub exit: u64,
    /// Not ready within `ready_timeout`.
    pub readiness: u64,
    /// Its liveness check or watchdog failed.
    pub health: u64,
    /// A `restart = true` dependency ended.
    pub dependency: u64,
    /// A restart by hand (`ctrlinit restart`).
    pub manual: u64,
    /// It went past one of its `[program.NAME.limits]` (by policy, counted like a crash).
    #[serde(default)]
    pub limit: u64,
}

/// A state change, as `events` streams it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The event's number: one more than the previous event's. `status` answers with the last
    /// one sent, so a client can tell which events its snapshot already includes.
    pub seq: u64,
    /// When the event happened, in RFC 3339 (UTC, milliseconds).
    pub time: String,
    /// Program, if the event is about one.
    pub program: Option<String>,
    /// The state the program left; `None` when the event is not a state change (a health
    /// change, a notice about ctrlinit itself).
    pub from: Option<State>,
    /// The state the program entered; `None` when `from` is.
    pub to: Option<State>,
    /// What happened and why.
    pub message: String,
    /// The program's liveness after a health change (`healthy`, `unhealthy 1/3` …), for events
    /// that are one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
}

/// A node of `graph` (and of `check`'s start order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphNode {
    /// The program's name (each instance of an instanced program is a node: `web-0`).
    pub name: String,
    /// `service` or `oneshot`; `external` for an `[external.NAME]`.
    #[serde(rename = "type")]
    pub kind: String,
    /// State, when the init is running.
    pub state: Option<State>,
    /// Its dependencies: (name, condition, restart).
    pub depends_on: Vec<(String, String, bool)>,
    /// What it is ordered after (`after`): ordering only, no requirement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// Its readiness check as `status` shows it (`tcp 127.0.0.1:80`), if any.
    #[serde(default)]
    pub readiness: Option<String>,
    /// Whether it starts at boot.
    #[serde(default = "yes")]
    pub autostart: bool,
    /// Whether it is the container's main program.
    #[serde(default)]
    pub main: bool,
    /// An external dependency's state (`waiting`, `ready`, `down`); such a node's `type` is
    /// `external` and its `readiness` is its check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_state: Option<String>,
}

fn yes() -> bool {
    true
}

/// Where the network watch stands, as `status` and `/metrics` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkState {
    /// Some watched interface is there.
    Present,
    /// Every watched interface is gone, within the grace.
    Losing,
    /// Gone past the grace.
    Lost,
    /// Nothing to watch.
    Idle,
    /// A word this client does not know (an init newer than it).
    #[serde(other)]
    Unknown,
}

impl NetworkState {
    /// As it is written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkState::Present => "present",
            NetworkState::Losing => "losing",
            NetworkState::Lost => "lost",
            NetworkState::Idle => "idle",
            NetworkState::Unknown => "unknown",
        }
    }

    /// Whether the network is as it should be (not every watched interface gone).
    pub fn usable(self) -> bool {
        matches!(self, NetworkState::Present | NetworkState::Idle)
    }
}

/// What the network watch does once every watched interface is gone past the grace
/// (`[init.network] on_lost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkOnLost {
    /// Stop the container with the watch's exit code.
    Exit,
    /// Say so and go on.
    Warn,
    /// A word this client does not know (an init newer than it).
    #[serde(other)]
    Unknown,
}

impl NetworkOnLost {
    /// As it is written in the config and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkOnLost::Exit => "exit",
            NetworkOnLost::Warn => "warn",
            NetworkOnLost::Unknown => "unknown",
        }
    }
}

/// The network watch as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkStatus {
    /// Where it stands.
    pub state: NetworkState,
    /// What happens when it is lost.
    pub on_lost: NetworkOnLost,
    /// The grace, in milliseconds.
    pub grace_ms: u64,
    /// The exit status when it gives up.
    pub exit_code: u8,
    /// Milliseconds since every watched interface went, while they are gone.
    pub lost_for_ms: Option<u64>,
    /// Each watched interface.
    pub interfaces: Vec<InterfaceStatus>,
}

/// One watched interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceStatus {
    /// Its name.
    pub name: String,
    /// Whether it exists now.
    pub present: bool,
    /// When it was last deleted (RFC 3339), if it was.
    pub gone_at: Option<String>,
}

/// How the boot before this one ended, read from the run ledger at start (`status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousBoot {
    /// `clean` (it wrote its end), `unclean` (it did not: SIGKILL, OOM kill of PID 1, a host
    /// crash), `unknown` (the ledger's end is not a record: garbage, zeros, a torn line) or
    /// `first` (no earlier boot in the ledger).
    pub ended: String,
    /// Its exit status, when it ended cleanly.
    pub exit_status: Option<i32>,
    /// Why it stopped, when it ended cleanly.
    pub reason: Option<String>,
    /// When it ended (clean) or last wrote (unclean), RFC 3339.
    pub at: Option<String>,
    /// This boot's id (the probe endpoint's `boot=`).
    pub boot_id: String,
    /// The ledger file this boot writes, as the init sees it (what `history` reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<String>,
}

/// One external dependency (`[external.NAME]`) as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalStatus {
    /// Its name, as `depends_on` writes it.
    pub name: String,
    /// How it is checked: `tcp config:8082`, `ctrlinit config:9100 program api`.
    pub check: String,
    /// `waiting` (never ready yet), `ready` or `down`.
    pub state: String,
    /// The last check's result (`tcp config:8082: connection refused`), once one ended.
    pub last: Option<String>,
    /// Milliseconds since `state` last changed.
    pub since_ms: u64,
    /// Checks made.
    pub checks: u64,
    /// Times it went down or its peer's program restarted (each restarts its dependents).
    pub restarts_caused: u64,
    /// The programs that depend on it.
    pub dependents: Vec<String>,
}

/// What the server answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    /// A snapshot of the programs asked for, as `status` shows them.
    Status {
        /// The `seq` of the last event sent before this snapshot (0 when none was).
        seq: u64,
        /// The programs asked for: every one, in configuration order, when no name was given;
        /// else in the order named (an instanced program's name: its instances, by index).
        programs: Vec<ProgramStatus>,
        /// The network watch (`[init.network]`), when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        network: Option<NetworkStatus>,
        /// How the boot before this one ended (from the run ledger), when the ledger is on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_boot: Option<PreviousBoot>,
        /// The external dependencies (`[external.NAME]`), by name; absent when there are none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        externals: Vec<ExternalStatus>,
    },
    /// A command was applied.
    Done {
        /// What the command did, as a sentence for a person (the CLI prints it).
        message: String,
    },
    /// Whether the container is as it should be (what `ctrlinit health` exits by).
    Health {
        /// Every program in its wanted state, none past its liveness threshold, no stop
        /// draining.
        healthy: bool,
        /// One line for each thing that is not so (`api is backoff (last: exit status 1)`);
        /// empty when healthy.
        problems: Vec<String>,
    },
    /// Log text (prefixed lines).
    Logs {
        /// Output lines prefixed as the console's `prefix` mode shows them (`name | line`,
        /// `name ! line` for stderr), each ending in a newline; with `follow`, each later
        /// answer carries what was written since.
        text: String,
    },
    /// One event of an `events` stream.
    Event {
        /// What happened: a state change, a health change or a notice.
        event: EventRecord,
    },
    /// Every program with its dependencies and state (`ctrlinit graph`).
    Graph {
        /// Every program, in configuration order.
        programs: Vec<GraphNode>,
    },
    /// The request failed.
    Error {
        /// What went wrong, in one line for a person. Clients tell failures apart by `kind`,
        /// never by this text (which may change).
        error: String,
        /// What kind of failure (absent from older servers' answers: [`ErrorKind::Failed`]).
        #[serde(default)]
        kind: ErrorKind,
    },
}

impl Response {
    /// An error answer of `kind`, with `error` as the line a person reads.
    pub fn error(kind: ErrorKind, error: impl Into<String>) -> Self {
        Response::Error {
            error: error.into(),
            kind,
        }
    }
}

/// Why a request failed, for the client's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A named program is not in the configuration.
    UnknownProgram,
    /// The request itself is malformed: not JSON, an unknown command, a bad signal name, too
    /// long, not terminated, another protocol version.
    BadRequest,
    /// The peer may not use the socket, or the request is refused in this state (the container
    /// is shutting down, a reload is under way).
    Refused,
    /// A wait's deadline passed before its goals held.
    Timeout,
    /// The request was carried out but did not succeed (a program did not reach its state, a
    /// reload was invalid, the init is exiting).
    #[default]
    Failed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_answer_carries_its_kind_and_its_text() {
        let answer = Response::error(
            ErrorKind::UnknownProgram,
            "unknown program nope; known programs: api",
        );
        let json = serde_json::to_value(&answer).unwrap();
        assert_eq!(json["type"], "error");
        assert_eq!(json["kind"], "unknown_program");
        assert_eq!(json["error"], "unknown program nope; known programs: api");
        let back: Response = serde_json::from_value(json).unwrap();
        assert_eq!(back, answer);
    }

    #[test]
    fn every_error_kind_has_its_wire_name() {
        // Clients choose their exit status by these names: they are part of the protocol.
        for (kind, name) in [
            (ErrorKind::UnknownProgram, "unknown_program"),
            (ErrorKind::BadRequest, "bad_request"),
            (ErrorKind::Refused, "refused"),
            (ErrorKind::Timeout, "timeout"),
            (ErrorKind::Failed, "failed"),
        ] {
            let line = serde_json::to_string(&Response::error(kind, "x")).unwrap();
            assert!(line.contains(&format!(r#""kind":"{name}""#)), "{line}");
            let back: Response = serde_json::from_str(&line).unwrap();
            assert_eq!(back, Response::error(kind, "x"));
        }
    }

    #[test]
    fn an_error_answer_without_kind_from_an_older_server_is_a_failure() {
        // Version 1 servers before the kind was added sent only the text.
        let old: Response =
            serde_json::from_str(r#"{"type":"error","error":"ctrlinit is exiting"}"#).unwrap();
        assert_eq!(
            old,
            Response::Error {
                error: "ctrlinit is exiting".into(),
                kind: ErrorKind::Failed,
            }
        );
        assert_eq!(ErrorKind::default(), ErrorKind::Failed);
    }

    #[test]
    fn the_network_words_are_types_with_their_wire_names() {
        let line = r#"{"state":"losing","on_lost":"exit","grace_ms":3000,"exit_code":76,"lost_for_ms":1200,"interfaces":[]}"#;
        let n: NetworkStatus = serde_json::from_str(line).unwrap();
        assert_eq!(n.state, NetworkState::Losing);
        assert_eq!(n.on_lost, NetworkOnLost::Exit);
        assert!(!n.state.usable());
        let back = serde_json::to_value(&n).unwrap();
        assert_eq!(back["state"], "losing");
        assert_eq!(back["on_lost"], "exit");
        for (state, usable) in [
            (NetworkState::Present, true),
            (NetworkState::Idle, true),
            (NetworkState::Lost, false),
        ] {
            let v = serde_json::to_value(state).unwrap();
            assert_eq!(v, state.as_str());
            assert_eq!(state.usable(), usable);
        }
        // A word of a newer init reads as unknown, not as a failed answer.
        let newer: NetworkStatus = serde_json::from_str(
            &line
                .replace("losing", "flapping")
                .replace("exit\"", "pause\""),
        )
        .unwrap();
        assert_eq!(newer.state, NetworkState::Unknown);
        assert_eq!(newer.on_lost, NetworkOnLost::Unknown);
        assert!(!newer.state.usable());
    }
}

//! The control protocol, shared by the server (the init) and the client (the same binary's
//! subcommands).
//!
//! Newline-delimited JSON over a unix socket. A client sends one request line; the server answers
//! with one response line, or, for `logs --follow` and `events`, a stream of lines until either side
//! closes. Every line carries `"v": 1`; a server refuses other versions with an error. Requests
//! are bounded: [`MAX_REQUEST`] bytes, sent within [`REQUEST_TIMEOUT`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::supervisor::State;

/// Protocol version.
pub const VERSION: u32 = 1;

/// Longest request line accepted.
pub const MAX_REQUEST: usize = 64 * 1024;

/// Time a client has to send its whole request line.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A request, with its version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<T> {
    /// Protocol version ([`VERSION`]).
    pub v: u32,
    /// The request or response.
    #[serde(flatten)]
    pub body: T,
}

impl<T> Envelope<T> {
    /// Wraps `body` with the current version.
    pub fn new(body: T) -> Self {
        Envelope { v: VERSION, body }
    }
}

/// A program and the state it must reach, for `status --wait`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// Program name.
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
        /// Programs to show.
        #[serde(default)]
        names: Vec<String>,
    },
    /// Block until every condition holds or `timeout_ms` passes.
    Wait {
        /// Conditions, all of which must hold at once.
        conditions: Vec<Condition>,
        /// Deadline.
        timeout_ms: u64,
    },
    /// Start programs (with what they need).
    Start {
        /// Programs.
        #[serde(default)]
        names: Vec<String>,
        /// Every program.
        #[serde(default)]
        all: bool,
        /// How long to wait for the change to be applied.
        timeout_ms: u64,
    },
    /// Stop programs (after what requires them).
    Stop {
        /// Programs.
        #[serde(default)]
        names: Vec<String>,
        /// Every program.
        #[serde(default)]
        all: bool,
        /// How long to wait for the change to be applied.
        timeout_ms: u64,
    },
    /// Restart programs and what requires them.
    Restart {
        /// Programs.
        #[serde(default)]
        names: Vec<String>,
        /// Every program.
        #[serde(default)]
        all: bool,
        /// How long to wait for the change to be applied.
        timeout_ms: u64,
    },
    /// Send a signal to programs' process groups.
    Signal {
        /// Signal name such as `SIGHUP`.
        signal: String,
        /// Programs.
        names: Vec<String>,
    },
    /// Last lines from the in-memory rings, then (with `follow`) live output.
    Logs {
        /// Programs (all when empty).
        #[serde(default)]
        names: Vec<String>,
        /// Lines per program.
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
    /// Whether every program is in its wanted state.
    Health {
        /// Also count programs stopped by hand.
        #[serde(default)]
        strict: bool,
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
    /// `exit status 3`, `killed by SIGSEGV (core dumped)`.
    pub text: String,
}

/// One program as `status` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramStatus {
    /// Name.
    pub name: String,
    /// `service` or `oneshot`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Public state.
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
    /// The budget.
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
    /// Why it is down on purpose, when it is.
    pub down_reason: Option<String>,
    /// Whether it was stopped by hand.
    pub stopped_by_hand: bool,
    /// Whether it is the container's main program.
    pub main: bool,
}

/// A state change, as `events` streams it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Monotonic sequence number.
    pub seq: u64,
    /// RFC 3339 time.
    pub time: String,
    /// Program, if the event is about one.
    pub program: Option<String>,
    /// Previous state.
    pub from: Option<State>,
    /// New state.
    pub to: Option<State>,
    /// What happened and why.
    pub message: String,
}

/// A node of `graph`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphNode {
    /// Program name.
    pub name: String,
    /// `service` or `oneshot`.
    #[serde(rename = "type")]
    pub kind: String,
    /// State, when the init is running.
    pub state: Option<State>,
    /// Its dependencies: (name, condition, restart).
    pub depends_on: Vec<(String, String, bool)>,
}

/// What the server answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    /// Programs' states.
    Status {
        /// Sequence number of the last state change.
        seq: u64,
        /// The programs.
        programs: Vec<ProgramStatus>,
    },
    /// A command was applied.
    Done {
        /// What happened.
        message: String,
    },
    /// Health verdict.
    Health {
        /// Every program in its wanted state.
        healthy: bool,
        /// What is not.
        problems: Vec<String>,
    },
    /// Log text (prefixed lines).
    Logs {
        /// The lines.
        text: String,
    },
    /// A state change.
    Event {
        /// The change.
        event: EventRecord,
    },
    /// The dependency graph.
    Graph {
        /// Nodes.
        programs: Vec<GraphNode>,
    },
    /// The request failed.
    Error {
        /// One clear line.
        error: String,
    },
}

/// Parses one request line; the error is the line to send back.
pub fn decode_request(line: &[u8]) -> Result<Request, String> {
    let env: Envelope<Request> =
        serde_json::from_slice(line).map_err(|e| format!("bad request: {e}"))?;
    if env.v != VERSION {
        return Err(format!(
            "unsupported protocol version {} (this ctrlinit speaks {VERSION})",
            env.v
        ));
    }
    Ok(env.body)
}

/// Encodes a message as one line (with the trailing newline).
pub fn encode<T: Serialize>(body: T) -> Vec<u8> {
    let mut line = serde_json::to_vec(&Envelope::new(body)).unwrap_or_else(|e| {
        format!(r#"{{"v":1,"type":"error","error":"failed to encode a response: {e}"}}"#)
            .into_bytes()
    });
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let reqs = vec![
            Request::Status {
                names: vec!["api".into()],
            },
            Request::Wait {
                conditions: vec![Condition {
                    name: "api".into(),
                    states: vec![State::Running],
                }],
                timeout_ms: 100,
            },
            Request::Signal {
                signal: "SIGHUP".into(),
                names: vec!["a".into()],
            },
            Request::Events,
            Request::Health { strict: true },
        ];
        for r in reqs {
            let line = encode(&r);
            assert!(line.ends_with(b"\n"));
            assert_eq!(decode_request(&line[..line.len() - 1]).unwrap(), r);
        }
        assert_eq!(
            decode_request(br#"{"v":1,"cmd":"status"}"#).unwrap(),
            Request::Status { names: vec![] }
        );
    }

    #[test]
    fn garbage_and_other_versions_are_errors() {
        assert!(
            decode_request(b"hello")
                .unwrap_err()
                .starts_with("bad request")
        );
        assert!(decode_request(br#"{"v":1,"cmd":"fly"}"#).is_err());
        assert!(decode_request(br#"{"v":1,"cmd":"status","extra":1}"#).is_err());
        assert!(
            decode_request(br#"{"v":2,"cmd":"status"}"#)
                .unwrap_err()
                .contains("version 2")
        );
        assert!(decode_request(br#"{"cmd":"status"}"#).is_err());
    }
}

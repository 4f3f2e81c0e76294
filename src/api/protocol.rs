//! The control protocol's framing, shared by the server (the init) and the client (the same
//! binary's subcommands); the words themselves are [`crate::model::protocol`]'s.
//!
//! Newline-delimited JSON over a unix socket. A client sends one request line; the server answers
//! with one response line, or, for `logs --follow` and `events`, a stream of lines until either side
//! closes. Every line carries `"v": 1`; a server refuses other versions with an error. Requests
//! are bounded: [`MAX_REQUEST`] bytes, sent within [`REQUEST_TIMEOUT`].

#![warn(missing_docs)]

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::protocol::{Request, Response};

/// The protocol version this build speaks: every line carries it as `v`, and a request with
/// another is refused (a client of a newer version gets an error it can show, not a guess).
pub const VERSION: u32 = 1;

/// Longest request line accepted, in bytes (newline included); a longer one is refused so a
/// client cannot make the init hold an unbounded line.
pub const MAX_REQUEST: usize = 64 * 1024;

/// Time a client has to send its whole request line.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A request or response with its version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<T> {
    /// Protocol version ([`VERSION`]).
    pub v: u32,
    /// The request or response, its fields flattened beside `v`.
    #[serde(flatten)]
    pub body: T,
}

impl<T> Envelope<T> {
    /// Wraps `body` with the current version.
    pub fn new(body: T) -> Self {
        Envelope { v: VERSION, body }
    }
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

/// A `status` answer line, read straight into its fields (`type` is ignored: the caller checked
/// it). The generic way in, an internally tagged enum inside a flattened envelope, buffers the
/// whole line as a tree of values twice before reading it: at 3,000 programs that was most of
/// `status --json`'s time in the client.
#[derive(Deserialize)]
struct StatusLine {
    v: u32,
    seq: u64,
    programs: Vec<crate::model::protocol::ProgramStatus>,
    #[serde(default)]
    network: Option<crate::model::protocol::NetworkStatus>,
    #[serde(default)]
    previous_boot: Option<crate::model::protocol::PreviousBoot>,
    #[serde(default)]
    externals: Vec<crate::model::protocol::ExternalStatus>,
}

/// Decodes one answer line. A `status` answer as this build's server writes it (`v`, then
/// `type`, first) is read directly; anything else, or a line the direct way cannot read, goes
/// the generic way.
pub fn decode_response(line: &str) -> Result<Response, String> {
    if line.starts_with(&format!(r#"{{"v":{VERSION},"type":"status","#))
        && let Ok(s) = serde_json::from_str::<StatusLine>(line)
        && s.v == VERSION
    {
        return Ok(Response::Status {
            seq: s.seq,
            programs: s.programs,
            network: s.network,
            previous_boot: s.previous_boot,
            externals: s.externals,
        });
    }
    let env: Envelope<Response> = serde_json::from_str(line).map_err(|e| e.to_string())?;
    Ok(env.body)
}

/// Encodes a message as one line (with the trailing newline).
pub fn encode<T: Serialize>(body: T) -> Vec<u8> {
    let mut line = serde_json::to_vec(&Envelope::new(body)).unwrap_or_else(|e| {
        format!(
            r#"{{"v":1,"type":"error","error":"failed to encode a response: {e}","kind":"failed"}}"#
        )
        .into_bytes()
    });
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protocol::Condition;
    use crate::model::state::State;

    #[test]
    fn a_status_answer_reads_the_same_by_the_direct_way_as_by_the_generic_one() {
        let program = r#"{"name":"api","type":"service","state":"running","pid":7,"pgid":7,
            "run":2,"since_ms":5,"uptime_ms":5,"restarts":1,"restarts_in_window":1,
            "max_restarts":5,"forced_restarts":0,"last_exit":{"code":3,"signal":null,
            "core_dumped":false,"text":"exit status 3"},"readiness":null,"ready":true,
            "backoff_remaining_ms":null,"waiting_for":null,"down_reason":null,
            "stopped_by_hand":false,"main":true,"pids":[7,9],"processes":2}"#;
        let text = format!(
            r#"{{"v":1,"type":"status","seq":9,"programs":[{program}],
            "externals":[{{"name":"db","check":"tcp db:5432","state":"ready","last":null,
            "since_ms":4,"checks":3,"restarts_caused":0,"dependents":["api"]}}]}}"#
        )
        .replace('\n', "");
        let generic: Envelope<Response> = serde_json::from_str(&text).unwrap();
        // As the server writes it: `v`, then `type`, first.
        let line = String::from_utf8(encode(&generic.body)).unwrap();
        assert!(line.starts_with(r#"{"v":1,"type":"status","#), "{line}");
        assert_eq!(decode_response(line.trim_end()).unwrap(), generic.body);
        // Other answers, and other versions, go the generic way.
        let error = r#"{"v":1,"type":"error","error":"no program x","kind":"unknown_program"}"#;
        assert!(matches!(decode_response(error), Ok(Response::Error { .. })));
        assert!(decode_response(&line.replacen(r#""v":1"#, r#""v":2"#, 1)).is_ok());
    }

    #[test]
    fn requests_round_trip() {
        let reqs = vec![
            Request::Status {
                names: vec!["api".into()],
                usage: false,
            },
            Request::Status {
                names: vec![],
                usage: true,
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
            Request::Health {
                strict: true,
                live: false,
            },
        ];
        for r in reqs {
            let line = encode(&r);
            assert!(line.ends_with(b"\n"));
            assert_eq!(decode_request(&line[..line.len() - 1]).unwrap(), r);
        }
        assert_eq!(
            decode_request(br#"{"v":1,"cmd":"status"}"#).unwrap(),
            Request::Status {
                names: vec![],
                usage: false
            }
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

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

use crate::model::protocol::Request;

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

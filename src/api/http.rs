//! The probe endpoint (`[init] http = "127.0.0.1:9100"`): read-only HTTP for probes and
//! scrapers, so a Kubernetes `httpGet` probe costs no process in the container.
//!
//! - `GET /livez`: 200 unless a program is past its liveness threshold or the container stops;
//! - `GET /readyz`: 200 when every program meant to be up is up;
//! - `GET /metrics`: OpenMetrics text;
//! - `GET /v1/status`: the JSON of `ctrlinit status --json`;
//! - `GET /v1/peer?program=NAME`: one line for another ctrlinit's `[external.X] ctrlinit =`
//!   check: `boot=ID program=NAME run=N state=STATE ready=BOOL`. The boot id is new at each
//!   start of this ctrlinit, and `run` counts the program's runs, so a peer sees a restart
//!   even when it happened between two of its checks. With `&watch=MS`, a stream of such
//!   lines, one per change (see `peer_http`): the one connection that outlives a request.
//!
//! `HEAD` works on each. Nothing changes state. One request per connection; the request head
//! is read with a size cap, a deadline for its first byte and one for the whole head, and the
//! connections served at once are bounded in all and per source address, with a lane kept for
//! `/livez` and `/readyz` (see `http_lanes`): slow or many connections cannot hold the
//! endpoint, the supervisor, or the probes a kubelet restarts the container on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, warn};

use super::handles::{Handles, closed};
use super::http_lanes::{Lane, Lanes, Ticket};
use super::metrics::{CONTENT_TYPE, Own, render};
use super::warn_limit::{Limited, unsaid_note};
use crate::supervisor::control::{Control, Detail};

/// The answer when no lane has room, or to a path the probe lane does not serve.
const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n";

/// Largest request head read.
const HEAD_CAP: usize = 8192;

/// How long a client of the full lane has for the first byte of its request, for the whole
/// head, and to take the answer: long enough for any real probe or scraper (they send the
/// head in one packet at once), short enough that a connection that trickles frees its slot
/// soon.
const FIRST_BYTE: Duration = Duration::from_secs(1);
const WHOLE_HEAD: Duration = Duration::from_secs(2);
const ANSWER_TIME: Duration = Duration::from_secs(2);

/// How long a connection of the probe lane has for its whole head.
const PROBE_HEAD: Duration = Duration::from_millis(500);

/// Accepts connections until the init starts to exit.
pub(crate) async fn serve(listener: TcpListener, handles: Handles) {
    let mut closing = handles.closing.clone();
    let lanes = Arc::new(Lanes::default());
    let mut accept_failed = Limited::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = closed(&mut closing) => return,
        };
        let (stream, source) = match accepted {
            Ok(a) => a,
            Err(e) => {
                if let Some(unsaid) = accept_failed.allow(Instant::now()) {
                    warn!("probe endpoint: accept failed: {e}{}", unsaid_note(unsaid));
                }
                // EMFILE and friends: back off briefly instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(ticket) = lanes.admit(source.ip()) else {
            // Said without waiting (it fits an empty socket buffer), then closed.
            let _ = stream.try_write(BUSY);
            continue;
        };
        let handles = handles.clone();
        tokio::spawn(async move {
            let mut ticket = ticket;
            let mut stream = stream;
            let bound = WHOLE_HEAD + ANSWER_TIME;
            match tokio::time::timeout(bound, one(&mut stream, &mut ticket, &handles)).await {
                // A peer's watch: it outlives the request's bound, in a lane of its own.
                Ok(Ok(Some((name, every)))) => {
                    super::peer_http::watch(stream, &mut ticket, &name, every, &handles).await
                }
                Ok(_) => {}
                Err(e) => debug!("http: a client took too long: {e}"),
            }
            drop(ticket);
        });
    }
}

/// An answer: status, content type, body.
struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
}

impl Answer {
    fn text(status: u16, body: String) -> Answer {
        Answer {
            status,
            content_type: "text/plain; charset=utf-8",
            body,
        }
    }
}

/// Serves one connection: one request, one answer (in the probe lane, only `/livez`,
/// `/readyz` and a peer's `/v1/peer`, moved to its own lane, are answered). A peer's watch, asked in the full lane, is returned to be served
/// past this request's bound: (program, keepalive period).
async fn one(
    stream: &mut TcpStream,
    ticket: &mut Ticket,
    handles: &Handles,
) -> std::io::Result<Option<(String, Duration)>> {
    let lane = ticket.lane();
    let deadlines = match lane {
        Lane::Probes => (PROBE_HEAD, PROBE_HEAD),
        Lane::Full | Lane::Watch | Lane::Peer => (FIRST_BYTE, WHOLE_HEAD),
    };
    let Some(head) = read_head(stream, deadlines).await? else {
        return Ok(None);
    };
    let answer = match parse(&head) {
        Err(answer) => answer,
        Ok((method, path))
            if matches!(lane, Lane::Full | Lane::Probes) && method == "GET" && is_peer(&path) =>
        {
            if let Some(query) = path.strip_prefix("/v1/peer?")
                && let (name, Some(every)) = super::peer_http::query(query)
            {
                return Ok(Some((name.to_string(), every)));
            }
            // A peer's one question, in a lane of its own when it came in the probe lane.
            if !ticket.move_to_peer() {
                let _ = tokio::time::timeout(ANSWER_TIME, stream.write_all(BUSY)).await;
                return Ok(None);
            }
            route(&path, handles).await
        }
        Ok((method, path)) if lane == Lane::Full && method == "GET" => route(&path, handles).await,
        Ok((_, path)) if lane == Lane::Probes && path != "/livez" && path != "/readyz" => {
            let _ = tokio::time::timeout(ANSWER_TIME, stream.write_all(BUSY)).await;
            return Ok(None);
        }
        Ok((method, path)) => {
            let mut answer = route(&path, handles).await;
            if method == "HEAD" {
                // The length of what GET would send, and no body.
                let length = answer.body.len();
                answer.body.clear();
                return write(stream, &answer, length).await.map(|()| None);
            }
            answer
        }
    };
    let length = answer.body.len();
    write(stream, &answer, length).await.map(|()| None)
}

/// Whether `path` is a peer's question (`/v1/peer`, with or without its query).
fn is_peer(path: &str) -> bool {
    path == "/v1/peer" || path.starts_with("/v1/peer?")
}

/// The request head, up to its blank line; `None` when the client closed first, or sent no
/// byte within `first_byte`, or not the whole head within `whole`.
async fn read_head(
    stream: &mut TcpStream,
    (first_byte, whole): (Duration, Duration),
) -> std::io::Result<Option<Vec<u8>>> {
    let started = tokio::time::Instant::now();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let deadline = started + if buf.is_empty() { first_byte } else { whole };
        let n = match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(read) => read?,
            Err(_) => return Ok(None),
        };
        if n == 0 {
            return Ok(None);
        }
        let room = HEAD_CAP - buf.len();
        buf.extend_from_slice(&chunk[..n.min(room)]);
        // The blank line may straddle two reads: look from just before this read's bytes.
        let from = buf.len().saturating_sub(n.min(room) + 3);
        if buf[from..].windows(4).any(|w| w == b"\r\n\r\n") || buf.len() == HEAD_CAP {
            return Ok(Some(buf));
        }
    }
}

/// The method and path (without its query), or the error answer.
fn parse(head: &[u8]) -> Result<(String, String), Answer> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(Answer::text(431, "request head too large\n".into()));
        }
        Err(e) => return Err(Answer::text(400, format!("bad request: {e}\n"))),
    }
    let method = req.method.unwrap_or("").to_string();
    if method != "GET" && method != "HEAD" {
        return Err(Answer::text(
            405,
            "only GET and HEAD: this endpoint is read-only\n".into(),
        ));
    }
    let path = req.path.unwrap_or("/");
    Ok((method, path.to_string()))
}

async fn route(target: &str, handles: &Handles) -> Answer {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/v1/peer" => peer(query, handles).await,
        "/livez" | "/readyz" => match handles.ask(|reply| Control::Probe { reply }).await {
            Ok(p) => {
                let (ok, why) = if path == "/livez" {
                    (p.live, p.not_live)
                } else {
                    (p.ready, p.not_ready)
                };
                if ok {
                    Answer::text(200, "ok\n".into())
                } else {
                    Answer::text(503, format!("{}\n", why.join("\n")))
                }
            }
            Err(_) => Answer::text(503, "ctrlinit is exiting\n".into()),
        },
        "/metrics" => match handles.ask(|reply| Control::Metrics { reply }).await {
            Ok(m) => {
                let own = Own {
                    resident_bytes: crate::sys::self_usage::resident_bytes(),
                    open_fds: crate::sys::self_usage::open_fds(),
                };
                Answer {
                    status: 200,
                    content_type: CONTENT_TYPE,
                    body: render(&m, &own),
                }
            }
            Err(_) => Answer::text(503, "ctrlinit is exiting\n".into()),
        },
        "/v1/status" => match handles
            .ask(|reply| Control::Status {
                names: Vec::new(),
                detail: Detail::Processes,
                reply,
            })
            .await
        {
            Ok(Ok((seq, programs))) => {
                let list: Vec<serde_json::Value> = programs
                    .iter()
                    .map(|p| {
                        let mut v = serde_json::to_value(p).unwrap_or_default();
                        v["seq"] = seq.into();
                        v
                    })
                    .collect();
                Answer {
                    status: 200,
                    content_type: "application/json",
                    body: serde_json::to_string(&list).unwrap_or_default() + "\n",
                }
            }
            _ => Answer::text(503, "ctrlinit is exiting\n".into()),
        },
        _ => Answer::text(
            404,
            "not found: try /livez, /readyz, /metrics, /v1/status or /v1/peer?program=NAME\n"
                .into(),
        ),
    }
}

/// `/v1/peer?program=NAME`: the program's run and state, with the boot id (see `peer_http`).
async fn peer(query: &str, handles: &Handles) -> Answer {
    let (name, _) = super::peer_http::query(query);
    match super::peer_http::line(name, handles).await {
        Ok(line) => Answer::text(200, line),
        Err((status, why)) => Answer::text(status, why),
    }
}

async fn write(stream: &mut TcpStream, a: &Answer, length: usize) -> std::io::Result<()> {
    let reason = match a.status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let mut out = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {length}\r\nCache-Control: no-store\r\nConnection: close\r\n",
        a.status, a.content_type
    );
    if a.status == 405 {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    out.push_str(&a.body);
    match tokio::time::timeout(ANSWER_TIME, stream.write_all(out.as_bytes())).await {
        Ok(r) => r,
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_only_and_bounded() {
        assert_eq!(
            parse(b"GET /livez?verbose HTTP/1.1\r\nHost: x\r\n\r\n").ok(),
            Some(("GET".into(), "/livez?verbose".into()))
        );
        assert_eq!(
            parse(b"HEAD /metrics HTTP/1.0\r\n\r\n").ok(),
            Some(("HEAD".into(), "/metrics".into()))
        );
        assert_eq!(
            parse(b"POST /livez HTTP/1.1\r\n\r\n")
                .err()
                .map(|a| a.status),
            Some(405)
        );
        assert_eq!(
            parse(b"\x00\x01garbage\r\n\r\n").err().map(|a| a.status),
            Some(400)
        );
        assert_eq!(
            parse(b"GET /livez HTTP/1.1\r\nHost: x")
                .err()
                .map(|a| a.status),
            Some(431)
        );
    }
}

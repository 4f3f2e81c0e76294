//! The client of a `ctrlinit = …, program = …` external: the peer's probe endpoint asked once
//! ([`poll`]), or followed as a stream ([`follow`]).
//!
//! Followed as a stream: the peer's probe endpoint is
//! asked `/v1/peer?program=NAME&watch=MS` and, if it can stream (its answer's head says
//! `X-Ctrlinit-Watch`), writes a line at once, one at each change of its program's run, state
//! or readiness, and the current line again every `MS` (our `interval`). A line that changes
//! something is a check result at once, so a peer program's restart reaches the owner loop as
//! it happens instead of at the next interval, and the keepalive lines keep `successes` and
//! `failures` counting as polling does; identical lines closer than that, and a rate no honest
//! peer sends, are `peer_stream`'s to refuse.
//!
//! Falls back to polling (the caller's loop) when the peer answers once: an older ctrlinit that
//! ignores `watch`, or one whose watch lane is full (`503`); the stream is tried again after
//! [`RETRY_STREAM`]. A stream that says nothing for `interval + timeout`, a line that is not a
//! peer's, or one longer than [`PEER_CAP`] is a failed check and the connection is dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::warn;

use super::events::{Mailbox, Report};
use super::http_get::{fmt_secs, os_words};
use super::peer_stream::{Gate, MAX_LINES_PER_SEC};
use super::resolve::{LazyResolver, resolve};
use crate::config::{ExternalSpec, HostPort};
use crate::model::printable::escape_controls;

/// How long a peer that cannot stream is polled before the stream is tried again (it may have
/// been upgraded, or its watch lane may have room again).
pub(crate) const RETRY_STREAM: Duration = Duration::from_secs(60);

/// What the caller does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Follow again at once: the stream ended after serving (the peer's watch lifetime).
    Again,
    /// A failed check was sent: try again after `interval`.
    Wait,
    /// The peer cannot stream now: poll (after `interval` when `sent`, a result was sent).
    Poll { sent: bool },
    /// The owner loop is gone.
    Gone,
}

/// Follows `program` on the peer at `at` until the stream ends or fails.
pub(crate) async fn follow(
    spec: &ExternalSpec,
    at: &HostPort,
    program: &str,
    resolver: &LazyResolver,
    mailbox: &Arc<Mailbox>,
) -> Next {
    let opened = tokio::time::timeout(spec.timeout, open(spec, at, program, resolver)).await;
    let (mut stream, head, rest) = match opened {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return failed(mailbox, e),
        Err(_) => {
            let e = format!("timed out after {}", fmt_secs(spec.timeout));
            return failed(mailbox, e);
        }
    };
    if watch_period(&head).is_none() {
        return once(spec, program, stream, head, rest, mailbox).await;
    }
    // Whatever keepalive period the peer announced: a peer that may announce an hour must not
    // make a dead stream look alive, so the silence allowed is this check's own.
    let silence = spec.interval + spec.timeout;
    let mut buf = rest;
    let mut lines = 0u64;
    let mut gate = Gate::new(spec.interval, std::time::Instant::now());
    loop {
        let mut latest = None;
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            if !gate.count(std::time::Instant::now()) {
                let why = format!(
                    "the peer sent more than {MAX_LINES_PER_SEC} lines a second: not an honest ctrlinit peer's stream"
                );
                warn!("external {}: {why}; the stream is dropped", spec.name);
                return failed(mailbox, why);
            }
            match std::str::from_utf8(&line)
                .map_err(|_| "not a ctrlinit peer's answer".to_string())
                .and_then(|l| parse_line(l, program))
            {
                Ok(r) => latest = Some(r),
                Err(e) => return failed(mailbox, e),
            }
            lines += 1;
        }
        // Of what one read brought, the latest line stands; and only a change or a keepalive.
        if let Some(r) = latest.and_then(|r| gate.worth(r, std::time::Instant::now()).cloned())
            && !mailbox.post(r)
        {
            return Next::Gone;
        }
        if buf.len() >= PEER_CAP {
            return failed(
                mailbox,
                "not a ctrlinit peer's answer (a line too long)".into(),
            );
        }
        let mut chunk = [0u8; 512];
        match tokio::time::timeout(silence, stream.read(&mut chunk)).await {
            Ok(Ok(0)) if lines > 0 => return Next::Again,
            Ok(Ok(0)) => return failed(mailbox, "the peer closed its stream".into()),
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => return failed(mailbox, format!("stream lost: {}", os_words(&e))),
            Err(_) => {
                let e = format!("the peer said nothing for {}", fmt_secs(silence));
                return failed(mailbox, e);
            }
        }
    }
}

/// Connects, asks for the watch, and reads the answer's head: (stream, head, what followed it).
async fn open(
    spec: &ExternalSpec,
    at: &HostPort,
    program: &str,
    resolver: &LazyResolver,
) -> Result<(TcpStream, String, Vec<u8>), String> {
    let addr: SocketAddr = resolve(at, resolver).await?;
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect to {addr}: {}", os_words(&e)))?;
    let request = format!(
        "GET /v1/peer?program={program}&watch={} HTTP/1.1\r\nHost: {at}\r\nUser-Agent: ctrlinit-peer\r\nConnection: close\r\n\r\n",
        spec.interval.as_millis()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send the request: {}", os_words(&e)))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            let head = String::from_utf8_lossy(&buf).into_owned();
            return Ok((stream, head, rest));
        }
        if buf.len() >= PEER_CAP {
            return Err("not a ctrlinit peer's answer (cut short or too long)".into());
        }
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| format!("cannot read the answer: {}", os_words(&e)))?;
        if n == 0 {
            return Err("not a ctrlinit peer's answer (cut short or too long)".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The keepalive period a streaming peer announced in its head.
fn watch_period(head: &str) -> Option<Duration> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let ms = k
            .trim()
            .eq_ignore_ascii_case("x-ctrlinit-watch")
            .then_some(v)?;
        ms.trim().parse::<u64>().ok().map(Duration::from_millis)
    })
}

/// A peer that answered once: its result stands for this check (unless it only said it has no
/// room for a watch), and it is polled from now on.
async fn once(
    spec: &ExternalSpec,
    program: &str,
    mut stream: TcpStream,
    head: String,
    mut rest: Vec<u8>,
    mailbox: &Arc<Mailbox>,
) -> Next {
    if head.split(' ').nth(1) == Some("503") {
        return Next::Poll { sent: false };
    }
    // The rest of a short answer, bounded in size and time.
    let mut chunk = [0u8; 512];
    while rest.len() < PEER_CAP && !rest.contains(&b'\n') {
        match tokio::time::timeout(spec.timeout, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => rest.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    let mut answer = head.into_bytes();
    answer.extend_from_slice(&rest);
    if !mailbox.post(parse_peer(&answer, program)) {
        return Next::Gone;
    }
    Next::Poll { sent: true }
}

fn failed(mailbox: &Arc<Mailbox>, why: String) -> Next {
    if mailbox.post(Report::failed(why)) {
        Next::Wait
    } else {
        Next::Gone
    }
}

/// Most of a peer's answer read (status line, headers and its one-line body).
pub(crate) const PEER_CAP: usize = 4096;

/// Asks a peer ctrlinit's probe endpoint about `program`: (ready, what it said, boot/run).
pub(crate) async fn poll(addr: SocketAddr, at: &HostPort, program: &str) -> Report {
    match ask(addr, at, program).await {
        Ok(answer) => parse_peer(&answer, program),
        Err(e) => Report::failed(e),
    }
}

/// The peer's answer to one `/v1/peer?program=…`, as read (at most [`PEER_CAP`]).
async fn ask(addr: SocketAddr, at: &HostPort, program: &str) -> Result<Vec<u8>, String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect to {addr}: {}", os_words(&e)))?;
    let request = format!(
        "GET /v1/peer?program={program} HTTP/1.1\r\nHost: {at}\r\nUser-Agent: ctrlinit-peer\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send the request: {}", os_words(&e)))?;
    let mut buf = vec![0u8; PEER_CAP];
    let mut filled = 0;
    while filled < buf.len() {
        let n = stream
            .read(&mut buf[filled..])
            .await
            .map_err(|e| format!("cannot read the answer: {}", os_words(&e)))?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    buf.truncate(filled);
    Ok(buf)
}

/// `HTTP/1.1 200 OK … \r\n\r\nboot=ID program=api run=3 state=running ready=true`. A `503`
/// (the peer's endpoint is busy, or it is exiting) is no verdict: the external's state stands.
pub(crate) fn parse_peer(answer: &[u8], program: &str) -> Report {
    let Ok(text) = std::str::from_utf8(answer) else {
        return Report::failed("not a ctrlinit peer's answer".into());
    };
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return Report::failed("not a ctrlinit peer's answer (cut short or too long)".into());
    };
    let status = head.lines().next().unwrap_or("");
    match status.split(' ').nth(1) {
        Some("404") => return Report::failed(format!("the peer has no program {program}")),
        Some("503") => {
            let said = body.lines().next().unwrap_or("").trim();
            return Report {
                passed: None,
                output: format!("the peer is busy (503 {said}): no verdict, the last state stands"),
                peer_run: None,
            };
        }
        _ => {}
    }
    match parse_line(body, program) {
        Ok(r) => r,
        Err(e) => Report::failed(e),
    }
}

/// One line of a peer's answer or stream: `boot=ID program=api run=3 state=running ready=true`,
/// or why it is not one. Its boot id is escaped here (it is logged as text); what it says is
/// escaped where the core keeps it for display.
pub(crate) fn parse_line(body: &str, program: &str) -> Result<Report, String> {
    let field = |k: &str| {
        body.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
    };
    match (field("boot"), field("run"), field("state"), field("ready")) {
        (Some(boot), Some(run), Some(state), Some(ready)) if run.parse::<u64>().is_ok() => {
            Ok(Report {
                passed: Some(ready == "true"),
                output: format!("{program} is {state} (run {run})"),
                peer_run: Some(format!("{}/{run}", escape_controls(boot))),
            })
        }
        _ => Err("not a ctrlinit peer's answer".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_answers() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nboot=b1 program=api run=3 state=running ready=true\n";
        let r = parse_peer(ok, "api");
        assert_eq!(r.passed, Some(true));
        assert_eq!(r.output, "api is running (run 3)");
        assert_eq!(r.peer_run.as_deref(), Some("b1/3"));
        let waiting =
            b"HTTP/1.1 200 OK\r\n\r\nboot=b1 program=api run=4 state=backoff ready=false\n";
        assert_eq!(parse_peer(waiting, "api").passed, Some(false));
        let gone = parse_peer(b"HTTP/1.1 404 Not Found\r\n\r\nno\n", "api");
        assert!(gone.output.contains("no program api"), "{gone:?}");
        for bad in [
            &b"garbage"[..],
            b"HTTP/1.1 200 OK\r\n\r\nhello",
            &[0xff, 0xfe],
        ] {
            assert_eq!(parse_peer(bad, "api").passed, Some(false));
        }
        let evil = parse_peer(
            b"HTTP/1.1 200 OK\r\n\r\nboot=\x1b[2J program=api run=1 state=up ready=true\n",
            "api",
        );
        assert_eq!(evil.peer_run.as_deref(), Some("\\e[2J/1"));
    }

    #[test]
    fn a_busy_peer_is_no_verdict_and_says_so() {
        let busy = parse_peer(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nbusy\n",
            "api",
        );
        assert_eq!(busy.passed, None);
        assert!(busy.output.contains("busy"), "{busy:?}");
        assert!(!busy.output.contains("not a ctrlinit peer"), "{busy:?}");
    }

    #[test]
    fn a_streaming_peer_says_so_in_its_head() {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Ctrlinit-Watch: 2000\r\n\r\n";
        assert_eq!(watch_period(head), Some(Duration::from_secs(2)));
        let old = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n";
        assert_eq!(watch_period(old), None);
        assert_eq!(
            watch_period("x-ctrlinit-watch: 5\r\n"),
            None,
            "not on the status line"
        );
    }
}

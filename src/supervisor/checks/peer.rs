//! The client of a `ctrlinit = …, program = …` external: the peer's probe endpoint asked once
//! ([`poll`]), or followed as a stream ([`follow`]).
//!
//! Followed as a stream: the peer's probe endpoint is
//! asked `/v1/peer?program=NAME&watch=MS` and, if it can stream (its answer's head says
//! `X-Ctrlinit-Watch`), writes a line at once, one at each change of its program's run, state
//! or readiness, and the current line again every `MS` (our `interval`). Each line is a check
//! result, so a peer program's restart reaches the owner loop as it happens instead of at the
//! next interval, and the keepalive lines keep `successes` and `failures` counting as polling
//! does.
//!
//! Falls back to polling (the caller's loop) when the peer answers once: an older ctrlinit that
//! ignores `watch`, or one whose watch lane is full (`503`); the stream is tried again after
//! [`RETRY_STREAM`]. A stream that says nothing for `interval + timeout`, a line that is not a
//! peer's, or one longer than [`PEER_CAP`] is a failed check and the connection is dropped.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedSender;

use super::events::ProbeEvent;
use super::http_get::{fmt_secs, os_words};
use super::resolve::{LazyResolver, resolve};
use crate::config::{ExternalSpec, HostPort};

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
    tx: &UnboundedSender<ProbeEvent>,
) -> Next {
    let opened = tokio::time::timeout(spec.timeout, open(spec, at, program, resolver)).await;
    let (mut stream, head, rest) = match opened {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return failed(spec, tx, e),
        Err(_) => {
            let e = format!("timed out after {}", fmt_secs(spec.timeout));
            return failed(spec, tx, e);
        }
    };
    let Some(every) = watch_period(&head) else {
        return once(spec, program, stream, head, rest, tx).await;
    };
    // A line at least every `every`; `timeout` more for the network.
    let silence = every + spec.timeout;
    let mut buf = rest;
    let mut lines = 0u64;
    loop {
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let r = std::str::from_utf8(&line)
                .map_err(|_| "not a ctrlinit peer's answer".to_string())
                .and_then(|l| parse_line(l, program));
            let bad = r.is_err();
            if !send(spec, tx, r) {
                return Next::Gone;
            }
            if bad {
                return Next::Wait;
            }
            lines += 1;
        }
        if buf.len() >= PEER_CAP {
            return failed(
                spec,
                tx,
                "not a ctrlinit peer's answer (a line too long)".into(),
            );
        }
        let mut chunk = [0u8; 512];
        match tokio::time::timeout(silence, stream.read(&mut chunk)).await {
            Ok(Ok(0)) if lines > 0 => return Next::Again,
            Ok(Ok(0)) => return failed(spec, tx, "the peer closed its stream".into()),
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => return failed(spec, tx, format!("stream lost: {}", os_words(&e))),
            Err(_) => {
                let e = format!("the peer said nothing for {}", fmt_secs(silence));
                return failed(spec, tx, e);
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
            return Err(parse_peer(&buf, program).err().unwrap_or_default());
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
    tx: &UnboundedSender<ProbeEvent>,
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
    if !send(spec, tx, parse_peer(&answer, program)) {
        return Next::Gone;
    }
    Next::Poll { sent: true }
}

fn failed(spec: &ExternalSpec, tx: &UnboundedSender<ProbeEvent>, why: String) -> Next {
    if send(spec, tx, Err(why)) {
        Next::Wait
    } else {
        Next::Gone
    }
}

/// One check result to the owner loop; false when it is gone.
fn send(spec: &ExternalSpec, tx: &UnboundedSender<ProbeEvent>, r: PeerResult) -> bool {
    let (passed, output, peer_run) = match r {
        Ok((ready, line, run)) => (ready, line, Some(run)),
        Err(e) => (false, e, None),
    };
    let event = ProbeEvent::External {
        name: spec.name.clone(),
        passed,
        output,
        peer_run,
    };
    tx.send(event).is_ok()
}

/// Most of a peer's answer read (status line, headers and its one-line body).
pub(crate) const PEER_CAP: usize = 4096;

/// Asks a peer ctrlinit's probe endpoint about `program`: (ready, what it said, boot/run).
pub(crate) async fn poll(
    addr: SocketAddr,
    at: &HostPort,
    program: &str,
) -> Result<(bool, String, String), String> {
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
    parse_peer(&buf[..filled], program)
}

/// A peer's answer: (ready, what it said, `boot/run`), or why it is not one.
pub(crate) type PeerResult = Result<(bool, String, String), String>;

/// `HTTP/1.1 200 OK … \r\n\r\nboot=ID program=api run=3 state=running ready=true`.
pub(crate) fn parse_peer(answer: &[u8], program: &str) -> PeerResult {
    let text =
        std::str::from_utf8(answer).map_err(|_| "not a ctrlinit peer's answer".to_string())?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| "not a ctrlinit peer's answer (cut short or too long)".to_string())?;
    let status = head.lines().next().unwrap_or("");
    if status.split(' ').nth(1) == Some("404") {
        return Err(format!("the peer has no program {program}"));
    }
    parse_line(body, program)
}

/// One line of a peer's answer or stream: `boot=ID program=api run=3 state=running ready=true`.
pub(crate) fn parse_line(body: &str, program: &str) -> PeerResult {
    let field = |k: &str| {
        body.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
    };
    match (field("boot"), field("run"), field("state"), field("ready")) {
        (Some(boot), Some(run), Some(state), Some(ready)) if run.parse::<u64>().is_ok() => Ok((
            ready == "true",
            format!("{program} is {state} (run {run})"),
            format!("{boot}/{run}"),
        )),
        _ => Err("not a ctrlinit peer's answer".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_answers() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nboot=b1 program=api run=3 state=running ready=true\n";
        let (ready, line, run) = parse_peer(ok, "api").unwrap();
        assert!(ready);
        assert_eq!(line, "api is running (run 3)");
        assert_eq!(run, "b1/3");
        let waiting =
            b"HTTP/1.1 200 OK\r\n\r\nboot=b1 program=api run=4 state=backoff ready=false\n";
        assert!(!parse_peer(waiting, "api").unwrap().0);
        assert!(
            parse_peer(b"HTTP/1.1 404 Not Found\r\n\r\nno\n", "api")
                .unwrap_err()
                .contains("no program api")
        );
        assert!(parse_peer(b"garbage", "api").is_err());
        assert!(parse_peer(b"HTTP/1.1 200 OK\r\n\r\nhello", "api").is_err());
        assert!(parse_peer(&[0xff, 0xfe], "api").is_err());
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

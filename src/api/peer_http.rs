//! `/v1/peer?program=NAME` on the probe endpoint: what another ctrlinit's `[external.X]
//! ctrlinit =` check asks. One line, `boot=ID program=NAME run=N state=STATE ready=BOOL`: the
//! boot id is new at each start of this ctrlinit and `run` counts the program's runs, so a
//! peer sees a restart even when it happened between two of its looks.
//!
//! With `&watch=MS` the answer is a stream (a peer that can follow it says so in its request;
//! an older ctrlinit ignores the parameter and answers once): the head carries
//! `X-Ctrlinit-Watch: MS` and no length, then one line at once, one at each change of the
//! program's run, state or readiness (told by the event log, so without delay), and the
//! current line again every `MS` (clamped to [`MIN_EVERY`]..[`MAX_EVERY`]) as a keepalive that
//! is also a fresh result. Bounded: it runs in the watch lane (see `http_lanes`), each write
//! must be taken within [`WRITE_TIME`] (a peer that does not read is dropped), and a watch
//! ends after [`LIFETIME`] (the peer connects again), or when the init exits.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::handles::{Handles, closed};
use super::http_lanes::Ticket;
use crate::supervisor::control::{Control, Detail};
use crate::supervisor::events::Received;

/// Shortest and longest keepalive period a peer may ask for.
pub(crate) const MIN_EVERY: Duration = Duration::from_millis(100);
pub(crate) const MAX_EVERY: Duration = Duration::from_secs(60);

/// How long one line may wait to be taken by the peer.
const WRITE_TIME: Duration = Duration::from_secs(2);

/// How long one watch lasts; the peer then asks again (a new snapshot, no lost change).
pub(crate) const LIFETIME: Duration = Duration::from_secs(600);

/// The program asked for, and the keepalive period when a watch is asked for.
pub(crate) fn query(query: &str) -> (&str, Option<Duration>) {
    let value = |key: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    };
    let every = value("watch")
        .and_then(|ms| ms.parse::<u64>().ok())
        .map(|ms| Duration::from_millis(ms).clamp(MIN_EVERY, MAX_EVERY));
    (value("program").unwrap_or(""), every)
}

/// The program's line now, or (status, why) when there is none.
pub(crate) async fn line(name: &str, handles: &Handles) -> Result<String, (u16, String)> {
    if !crate::config::names::valid_name(name) {
        return Err((400, "ask /v1/peer?program=NAME\n".into()));
    }
    let asked = handles
        .ask(|reply| Control::Status {
            names: vec![name.to_string()],
            detail: Detail::States,
            reply,
        })
        .await;
    match asked {
        Ok(Ok((_, programs))) => match programs.iter().find(|p| p.name == name) {
            Some(p) => Ok(format!(
                "boot={} program={} run={} state={} ready={}\n",
                boot_id(),
                p.name,
                p.run,
                p.state,
                p.ready
            )),
            None => Err((404, format!("no program {name}\n"))),
        },
        Ok(Err(_)) => Err((404, format!("no program {name}\n"))),
        Err(_) => Err((503, "ctrlinit is exiting\n".into())),
    }
}

/// This ctrlinit's boot id (the run ledger records the same).
fn boot_id() -> &'static str {
    crate::sys::boot::boot_id()
}

/// Writes `bytes` within [`WRITE_TIME`]; false when the peer is gone or does not read.
async fn put(stream: &mut TcpStream, bytes: &[u8]) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIME, stream.write_all(bytes)).await,
        Ok(Ok(()))
    )
}

/// Serves a watch on `name` (the ticket moved to the watch lane first; refused with `503`
/// when that lane is full, which the peer takes as "poll instead").
pub(crate) async fn watch(
    mut stream: TcpStream,
    ticket: &mut Ticket,
    name: &str,
    every: Duration,
    handles: &Handles,
) {
    // Subscribed before the first line is read, so no change after it is missed.
    let mut events = handles.events.subscribe();
    let first = match line(name, handles).await {
        Ok(l) => l,
        Err((status, why)) => return refuse(&mut stream, status, &why).await,
    };
    if !ticket.move_to_watch() {
        return refuse(&mut stream, 503, "too many watches: poll instead\n").await;
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\nConnection: close\r\nX-Ctrlinit-Watch: {}\r\n\r\n{first}",
        every.as_millis()
    );
    if !put(&mut stream, head.as_bytes()).await {
        return;
    }
    let mut closing = handles.closing.clone();
    let ends = Instant::now() + LIFETIME;
    let mut next = Instant::now() + every;
    let mut said = first;
    loop {
        let changed = tokio::select! {
            r = events.recv() => match r {
                Received::Event(e) if e.program.as_deref() == Some(name) => true,
                Received::Event(_) => continue,
                Received::Missed(_) => true,
                Received::Closed => return,
            },
            _ = tokio::time::sleep_until(next) => false,
            _ = tokio::time::sleep_until(ends) => return,
            _ = closed(&mut closing) => return,
        };
        let Ok(now) = line(name, handles).await else {
            return;
        };
        if changed && now == said {
            continue;
        }
        if !put(&mut stream, now.as_bytes()).await {
            return;
        }
        said = now;
        next = Instant::now() + every;
    }
}

/// A plain answer (with a length: the peer reads it as a refusal and polls).
async fn refuse(stream: &mut TcpStream, status: u16, why: &str) {
    let reason = match status {
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Service Unavailable",
    };
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{why}",
        why.len()
    );
    let _ = put(stream, answer.as_bytes()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_name_the_program_and_a_bounded_keepalive() {
        assert_eq!(query("program=api"), ("api", None));
        assert_eq!(
            query("program=api&watch=2000"),
            ("api", Some(Duration::from_secs(2)))
        );
        assert_eq!(query("watch=1&program=db"), ("db", Some(MIN_EVERY)));
        assert_eq!(
            query("program=api&watch=99999999"),
            ("api", Some(MAX_EVERY))
        );
        assert_eq!(query("program=api&watch=soon"), ("api", None));
        assert_eq!(query(""), ("", None));
    }
}

//! The stream socket (`[init] syslog_stream`): one task per connection on the log thread. A
//! message ends at a newline or a NUL (glibc ends each with a NUL on a stream; RFC 6587's
//! octet counting is not read: such a message's count stays in its text).
//!
//! Bounds: at most [`CONNECTIONS`] at once (more are closed at once, counted); a message is cut
//! at [`MESSAGE_MAX`] (the rest, up to its end, skipped and counted); a message left unfinished
//! for [`UNFINISHED`] is written as it is and its connection closed (counted), so a client that
//! never ends a line holds neither memory nor a slot.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::{UnixListener, UnixStream};
use tracing::warn;

use super::counters::SyslogCounters;
use super::intake::Intake;
use super::record::MESSAGE_MAX;

/// Stream connections open at once, at most.
pub(super) const CONNECTIONS: usize = 64;

/// How long a message may stay unfinished before its connection is closed.
pub(super) const UNFINISHED: Duration = Duration::from_secs(5);

/// Accepts connections until the listener fails.
pub(super) async fn listen(intake: Rc<Intake>, listener: std::os::unix::net::UnixListener) {
    let listener = match UnixListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            warn!("cannot watch the syslog stream socket: {e}; it is not read");
            return;
        }
    };
    let open = Rc::new(Cell::new(0usize));
    loop {
        let conn = match listener.accept().await {
            Ok((conn, _)) => conn,
            Err(e) => {
                // EMFILE and the like: a moment later, not a busy loop.
                warn!("syslog stream socket: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if open.get() >= CONNECTIONS {
            SyslogCounters::add(&intake.counters.stream_refused, 1);
            continue;
        }
        open.set(open.get() + 1);
        let (intake, open) = (Rc::clone(&intake), Rc::clone(&open));
        tokio::task::spawn_local(async move {
            connection(&intake, conn).await;
            open.set(open.get() - 1);
        });
    }
}

/// A message being gathered.
struct Gathering {
    bytes: Vec<u8>,
    /// It passed [`MESSAGE_MAX`]: the rest is skipped up to its end.
    cut: bool,
    /// When its first byte came.
    since: Option<Instant>,
}

/// Reads one connection's messages until it closes, fails or leaves one unfinished too long.
async fn connection(intake: &Intake, mut conn: UnixStream) {
    let pid = conn.peer_cred().ok().and_then(|c| c.pid());
    let mut chunk = vec![0u8; MESSAGE_MAX];
    let mut m = Gathering {
        bytes: Vec::new(),
        cut: false,
        since: None,
    };
    loop {
        let read = match m.since {
            Some(t) => {
                tokio::time::timeout_at((t + UNFINISHED).into(), conn.read(&mut chunk)).await
            }
            None => Ok(conn.read(&mut chunk).await),
        };
        let n = match read {
            Ok(Ok(n)) if n > 0 => n,
            Ok(_) => break,
            Err(_late) => {
                SyslogCounters::add(&intake.counters.stream_timed_out, 1);
                break;
            }
        };
        let now = Instant::now();
        for piece in chunk[..n].split_inclusive(|&b| b == b'\n' || b == 0) {
            let ended = matches!(piece.last(), Some(b'\n' | 0));
            let room = MESSAGE_MAX - m.bytes.len();
            m.cut |= piece.len() > room;
            m.bytes.extend_from_slice(&piece[..piece.len().min(room)]);
            m.since.get_or_insert(now);
            if ended {
                finish(intake, pid, &mut m, now);
            }
        }
        intake.flush(Instant::now());
        // Every connection gets its turn: a flooding one does not hold the thread.
        tokio::task::yield_now().await;
    }
    finish(intake, pid, &mut m, Instant::now());
    intake.flush(Instant::now());
}

/// Hands the gathered message over (an empty one is none) and starts the next.
fn finish(intake: &Intake, pid: Option<i32>, m: &mut Gathering, now: Instant) {
    let empty = m.bytes.iter().all(|&b| b == b'\n' || b == 0 || b == b'\r');
    if !empty {
        intake.message(pid, &m.bytes, m.cut, now);
    }
    m.bytes.clear();
    m.cut = false;
    m.since = None;
}

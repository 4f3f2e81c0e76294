//! The stream socket (`[init] syslog_stream`): one task per connection on the log thread. A
//! message ends at a newline or a NUL (glibc ends each with a NUL on a stream; RFC 6587's
//! octet counting is not read: such a message's count stays in its text).
//!
//! Attribution: once, when a connection is accepted, to the run of the process that connected
//! (`SO_PEERCRED`, checked as a datagram's sender is); its messages are that run's while the run
//! is in the table, and the connection is closed when the run leaves it: a descriptor handed to
//! another process, or kept by one that outlived the run, speaks for no later run.
//!
//! Bounds: at most [`CONNECTIONS`] at once (more are closed at once, counted, and said at most
//! once a [`REFUSED_NOTICE_EVERY`]); a connection silent for [`IDLE`] is closed (counted), so
//! idle ones cannot hold every slot for good; a message is cut at [`MESSAGE_MAX`] (the rest, up
//! to its end, skipped and counted); a message left unfinished for [`UNFINISHED`] is written as
//! it is and its connection closed (counted), so a client that never ends a line holds neither
//! memory nor a slot.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::{UnixListener, UnixStream};
use tracing::{debug, warn};

use super::counters::SyslogCounters;
use super::intake::{Intake, PARK_FOR, Sender};
use super::record::MESSAGE_MAX;
use super::run::Run;

/// Stream connections open at once, at most.
pub(super) const CONNECTIONS: usize = 64;

/// How long a message may stay unfinished before its connection is closed.
pub(super) const UNFINISHED: Duration = Duration::from_secs(5);

/// How long a connection may stay silent (no byte, between messages) before it is closed:
/// long enough for a client that logs now and then to keep its connection between bursts,
/// short enough that connections opened and left idle free their slots soon (clients reconnect
/// when closed: glibc's `syslog()` does on its next message).
pub(super) const IDLE: Duration = Duration::from_secs(30);

/// How often refused connections are said in ctrlinit's log, at most.
const REFUSED_NOTICE_EVERY: Duration = Duration::from_secs(10);

/// Refused connections not yet said, and when they were last said.
#[derive(Default)]
struct Refusals {
    unsaid: u64,
    said: Option<Instant>,
}

impl Refusals {
    /// Counts one refusal; says those not said yet when the last notice is old enough.
    fn refused(&mut self, intake: &Intake, now: Instant) {
        SyslogCounters::add(&intake.counters.stream_refused, 1);
        self.unsaid += 1;
        if self
            .said
            .is_some_and(|t| now.duration_since(t) < REFUSED_NOTICE_EVERY)
        {
            return;
        }
        warn!(
            "syslog stream socket: refused {} connection(s): {CONNECTIONS} are open, the most it serves (a connection silent for {}s is closed)",
            self.unsaid,
            IDLE.as_secs()
        );
        self.unsaid = 0;
        self.said = Some(now);
    }
}

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
    let mut refusals = Refusals::default();
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
            refusals.refused(&intake, Instant::now());
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

/// The run of the process that opened a connection, `pid` (`None`: no run). A process of a
/// run spawned a moment ago may come before the table that names the run: it gets one new
/// table, or [`PARK_FOR`], before it is taken for no run's.
async fn opener(intake: &Intake, pid: Option<i32>) -> Option<Run> {
    let sender = Sender::of(pid?)?;
    let mut tables = intake.tables.subscribe();
    if let Some(run) = intake.attribute(sender) {
        return Some(run);
    }
    let _ = tokio::time::timeout(PARK_FOR, tables.changed()).await;
    intake.attribute(sender)
}

/// Why a connection's reading stopped.
enum Ended {
    /// Closed by the client, or failed.
    Closed,
    /// A message left unfinished past [`UNFINISHED`].
    Unfinished,
    /// No byte for [`IDLE`].
    Idle,
    /// The run that opened it left the table.
    RunGone,
}

/// Reads one connection's messages until it closes, fails, stays silent too long, leaves one
/// unfinished too long, or the run that opened it ends.
async fn connection(intake: &Intake, mut conn: UnixStream) {
    let pid = conn.peer_cred().ok().and_then(|c| c.pid());
    let run = opener(intake, pid).await;
    let mut tables = intake.tables.subscribe();
    let mut chunk = vec![0u8; MESSAGE_MAX];
    let mut m = Gathering {
        bytes: Vec::new(),
        cut: false,
        since: None,
    };
    let ended = loop {
        if run.as_ref().is_some_and(|r| !intake.live(r)) {
            break Ended::RunGone;
        }
        let deadline = m.since.map_or(Instant::now() + IDLE, |t| t + UNFINISHED);
        let read = tokio::select! {
            read = tokio::time::timeout_at(deadline.into(), conn.read(&mut chunk)) => read,
            // A new table: whether the run still holds the connection is checked above.
            _ = tables.changed(), if run.is_some() => continue,
        };
        let n = match read {
            Ok(Ok(n)) if n > 0 => n,
            Ok(_) => break Ended::Closed,
            Err(_late) if m.since.is_some() => break Ended::Unfinished,
            Err(_late) => break Ended::Idle,
        };
        // Bytes read after the run left the table are no run's (they may be another
        // process's, through a descriptor it was handed).
        let owner = run.as_ref().filter(|r| intake.live(r));
        gather(intake, owner, &mut m, &chunk[..n]);
        intake.flush(Instant::now());
        if run.is_some() && owner.is_none() {
            break Ended::RunGone;
        }
        // Every connection gets its turn: a flooding one does not hold the thread.
        tokio::task::yield_now().await;
    };
    let owner = run.as_ref().filter(|r| intake.live(r));
    finish(intake, owner, &mut m, Instant::now());
    intake.flush(Instant::now());
    closed(intake, ended, run.as_ref());
}

/// Splits `bytes` into messages, handing over each one that ends.
fn gather(intake: &Intake, owner: Option<&Run>, m: &mut Gathering, bytes: &[u8]) {
    let now = Instant::now();
    for piece in bytes.split_inclusive(|&b| b == b'\n' || b == 0) {
        let ended = matches!(piece.last(), Some(b'\n' | 0));
        let room = MESSAGE_MAX - m.bytes.len();
        m.cut |= piece.len() > room;
        m.bytes.extend_from_slice(&piece[..piece.len().min(room)]);
        m.since.get_or_insert(now);
        if ended {
            finish(intake, owner, m, now);
        }
    }
}

/// Counts (and for a run's end, says) why a connection was closed.
fn closed(intake: &Intake, ended: Ended, run: Option<&Run>) {
    let c = &intake.counters;
    match ended {
        Ended::Closed => {}
        Ended::Unfinished => SyslogCounters::add(&c.stream_timed_out, 1),
        Ended::Idle => SyslogCounters::add(&c.stream_idle_closed, 1),
        Ended::RunGone => {
            SyslogCounters::add(&c.stream_run_ended, 1);
            if let Some(r) = run {
                debug!(
                    "syslog stream connection of {}'s run closed: the run ended",
                    r.name
                );
            }
        }
    }
}

/// Hands the gathered message over (an empty one is none) and starts the next.
fn finish(intake: &Intake, owner: Option<&Run>, m: &mut Gathering, now: Instant) {
    let empty = m.bytes.iter().all(|&b| b == b'\n' || b == 0 || b == b'\r');
    if !empty {
        intake.stream_message(owner, &m.bytes, m.cut, now);
    }
    m.bytes.clear();
    m.cut = false;
    m.since = None;
}

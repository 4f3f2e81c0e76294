//! `[init] syslog`: daemons' syslog messages, read from `/dev/log` (or wherever it is set),
//! parsed ([`record`]), attributed to the program whose run sent them, and written to that
//! program's log file and console prefix as if it had written them; a sender that belongs to no
//! program goes to a `syslog` stream of its own (`syslog.log`).
//!
//! Where it runs: on the log thread, as one task for the datagram socket and one per stream
//! connection, beside the pumps; never on the owner loop. The owner loop owns the runs: it sends
//! the log thread a table of each running program's main process and session
//! ([`crate::sys::ancestry::Owners`], the rule the sd_notify intake uses too) whenever one
//! changes, and a sender is attributed here by the kernel's credentials of its datagram
//! (`SCM_CREDENTIALS`) or connection (`SO_PEERCRED`), one `/proc` walk up from its pid, at most
//! once per sender per table. A sender is its pid *and* that process's start time, read at
//! receipt: a pid that its process left and another took is another sender, never the cached
//! one. A stream connection is attributed once, when it is accepted, to the run that opened it,
//! and closed when that run leaves the table (a descriptor handed on outlives its opener).
//!
//! Bounds: a message is cut at [`MESSAGE_MAX`] (counted); a turn reads at most [`BATCH`]
//! datagrams or for [`TURN_BUDGET`], then the pumps get their turn; each source has its own
//! per-second budget ([`budget`]), so a flood from one program drops that program's messages
//! only (counted, and said in its log); the console is never waited for (what it cannot take
//! now is dropped from the console only, and counted: the file has it). The sockets are bound
//! before any program starts (in [`crate::logs::Logs::start`]), so nothing logged while the
//! programs start is lost.

mod budget;
mod counters;
pub(super) mod intake;
mod record;
pub mod run;
mod stream;

use std::rc::Rc;
use std::sync::Arc;

use tokio::io::unix::AsyncFd;
use tracing::warn;

use super::shared::Shared;
use crate::config::InitSettings;
use crate::sys::syslog_socket::{self, SyslogSocket};
pub use counters::SyslogCounters;
pub use intake::FOREIGN;
use intake::{Intake, datagrams, unparking};
pub use record::MESSAGE_MAX;

/// The sockets, bound before the log thread starts.
pub struct Sockets {
    datagram: Option<SyslogSocket>,
    stream: Option<std::os::unix::net::UnixListener>,
}

/// Binds what `[init] syslog` and `syslog_stream` ask for (`None`: neither).
pub fn open(init: &InitSettings) -> Result<Option<Sockets>, String> {
    if init.syslog.is_none() && init.syslog_stream.is_none() {
        return Ok(None);
    }
    let datagram = match &init.syslog {
        Some(p) => Some(SyslogSocket::bind(p, "syslog")?),
        None => None,
    };
    let stream = match &init.syslog_stream {
        Some(p) => Some(syslog_socket::bind_stream(p, "syslog_stream")?),
        None => None,
    };
    Ok(Some(Sockets { datagram, stream }))
}
/// Starts the intake's tasks on the log thread; returns its handle for the hub (which hands it
/// the owner loop's tables).
pub(super) fn start(
    shared: &Rc<Shared>,
    sockets: Sockets,
    counters: Arc<SyslogCounters>,
) -> Rc<Intake> {
    let intake = Rc::new(Intake::new(shared, counters));
    if let Some(socket) = sockets.datagram {
        // SAFETY: the socket owns its descriptor and moves into the AsyncFd, which drops it (and
        // so closes the descriptor) only after deregistering it.
        match unsafe { AsyncFd::register(socket) } {
            Ok(socket) => {
                tokio::task::spawn_local(datagrams(Rc::clone(&intake), socket));
            }
            Err(e) => warn!("cannot watch the syslog socket: {e}; syslog messages are not read"),
        }
    }
    tokio::task::spawn_local(unparking(Rc::clone(&intake)));
    if let Some(listener) = sockets.stream {
        tokio::task::spawn_local(stream::listen(Rc::clone(&intake), listener));
    }
    intake
}

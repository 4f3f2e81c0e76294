//! The control socket server inside the init: the thread it runs on, and accepting
//! connections.
//!
//! The server runs on its own thread ("ctrlinit-api", with its own current-thread runtime), so
//! no connection work runs on the supervisor's loop. Each connection is checked when it is
//! accepted: a peer that may not use the socket is answered and closed at once, holding no
//! slot; others take a slot (see `slots`: one user cannot starve the rest, and root always
//! gets in) and are served by a task (see `connection`), which talks to the owner loop only
//! through `Control` messages. At exit, [`Server::drain`] lets connections finish writing
//! before the process ends.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

use super::connection::connection;
use super::handles::{Handles, closed};
use super::peer::check_peer;
use super::protocol;
use super::slots::Slots;
use super::warn_limit::{Limited, unsaid_note};
use crate::logs::Command as LogCommand;
use crate::model::protocol::{ErrorKind, Response};
use crate::supervisor::control::Control;
use crate::supervisor::events::EventLog;

pub use super::socket_file::{Bound, bind, fallback_candidates, place_writable, private_fallback};

/// The running control server, as the init's exit sees it.
pub struct Server {
    closing: watch::Sender<bool>,
    slots: Arc<Slots>,
}

impl Server {
    /// Stops accepting connections and lets those being served finish: answers already decided
    /// (`shutdown`'s) are written, event streams get every event sent before the exit, waits
    /// and follows end. Returns once none is left, or after `bound` (a client that does not
    /// read must not hold the container's exit).
    pub fn drain(&self, bound: Duration) {
        let _ = self.closing.send(true);
        self.slots.wait_empty(bound);
    }
}

/// Serves the control socket on a thread of its own, so that parsing, waiting and encoding
/// answers never take the supervisor's thread (which only builds snapshots and applies changes).
/// The thread runs at a lower priority: under contention, restarts go first.
pub fn start_thread(
    listener: Option<std::os::unix::net::UnixListener>,
    events: Arc<EventLog>,
    control: mpsc::UnboundedSender<Control>,
    logs: mpsc::UnboundedSender<LogCommand>,
    socket_gid: Option<u32>,
    path: PathBuf,
    http: Option<std::net::TcpListener>,
) -> Result<Server, String> {
    if let Some(l) = &listener {
        l.set_nonblocking(true)
            .map_err(|e| format!("cannot set the control socket non-blocking: {e}"))?;
    }
    if let Some(h) = &http {
        h.set_nonblocking(true)
            .map_err(|e| format!("cannot set the probe endpoint non-blocking: {e}"))?;
    }
    let (closing_tx, closing) = watch::channel(false);
    let handles = Handles {
        control,
        events,
        logs,
        socket_gid,
        closing,
    };
    let slots = Arc::new(Slots::default());
    let server = Server {
        closing: closing_tx,
        slots: Arc::clone(&slots),
    };
    std::thread::Builder::new()
        .name("ctrlinit-api".into())
        .spawn(move || {
            crate::sys::init::lower_thread_priority();
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()
            {
                Ok(r) => r,
                Err(e) => return warn!("control socket: failed to build its event loop: {e}"),
            };
            runtime.block_on(async move {
                if let Some(h) = http {
                    match tokio::net::TcpListener::from_std(h) {
                        Ok(l) => {
                            tokio::spawn(super::http::serve(l, handles.clone()));
                        }
                        Err(e) => warn!("probe endpoint: {e}"),
                    }
                }
                // No socket at all: nowhere could hold one (said at start).
                match listener.map(UnixListener::from_std) {
                    Some(Ok(l)) => serve(l, handles, slots, path).await,
                    Some(Err(e)) => warn!("control socket: {e}"),
                    None => {}
                }
                // The connections still being served finish their writes; the init's exit waits
                // for them (bounded) in `Server::drain`.
                std::future::pending::<()>().await;
            });
        })
        .map_err(|e| format!("failed to start the control socket's thread: {e}"))?;
    Ok(server)
}

/// Accepts connections until the init starts to exit.
async fn serve(listener: UnixListener, handles: Handles, slots: Arc<Slots>, path: PathBuf) {
    let mut closing = handles.closing.clone();
    // A full descriptor table fails every accept: said once every few seconds, with a count.
    let mut accept_failed = Limited::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = closed(&mut closing) => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                if let Some(unsaid) = accept_failed.allow(std::time::Instant::now()) {
                    warn!(
                        "control socket {}: accept failed: {e}{}",
                        path.display(),
                        unsaid_note(unsaid)
                    );
                }
                // EMFILE and friends: back off briefly instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let slot = match check_peer(&stream, handles.socket_gid) {
            Err(refusal) => Err((ErrorKind::Refused, refusal)),
            Ok(peer) => slots
                .admit(peer.uid, peer.privileged)
                .map_err(|busy| (ErrorKind::Refused, busy)),
        };
        match slot {
            Ok(slot) => {
                let handles = handles.clone();
                tokio::spawn(async move {
                    let _slot = slot;
                    if let Err(e) = connection(stream, handles).await {
                        debug!("control connection ended: {e}");
                    }
                });
            }
            Err((kind, why)) => refuse(&stream, kind, &why),
        }
    }
}

/// Answers a connection that will not be served with one error line, without waiting (a small
/// line fits an empty socket buffer), and closes it: it never holds a slot or a task.
fn refuse(stream: &UnixStream, kind: ErrorKind, why: &str) {
    let _ = stream.try_write(&protocol::encode(Response::error(kind, why)));
}

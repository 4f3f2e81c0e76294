//! The control socket server inside the init: binding the socket, the thread it runs on, and
//! accepting connections.
//!
//! The server runs on its own thread ("ctrlinit-api", with its own current-thread runtime), so
//! no connection work runs on the supervisor's loop. Each connection is a task there (see
//! `connection`); it talks to the owner loop only through `Control` messages. At exit,
//! [`Server::drain`] lets connections finish writing before the process ends.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::sync::{broadcast, mpsc, watch};
use tracing::{debug, warn};

use super::connection::connection;
use super::handles::{Handles, closed};
use crate::logs::Command as LogCommand;
use crate::model::protocol::EventRecord;
use crate::supervisor::control::Control;

/// Connections served at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 1024;

/// Connections being served, counted so the init's exit can wait for their last writes.
#[derive(Default)]
pub(crate) struct ActiveConnections {
    count: std::sync::Mutex<usize>,
    changed: std::sync::Condvar,
}

/// Held by each connection task; gives its count back however the task ends.
struct Counted(std::sync::Arc<ActiveConnections>);

impl Counted {
    fn new(active: &std::sync::Arc<ActiveConnections>) -> Self {
        *active.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        Counted(std::sync::Arc::clone(active))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut n = self.0.count.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        self.0.changed.notify_all();
    }
}

/// The running control server, as the init's exit sees it.
pub struct Server {
    closing: watch::Sender<bool>,
    active: std::sync::Arc<ActiveConnections>,
}

impl Server {
    /// Stops accepting connections and lets those being served finish: answers already decided
    /// (`shutdown`'s) are written, event streams get every event sent before the exit, waits
    /// and follows end. Returns once none is left, or after `bound` (a client that does not
    /// read must not hold the container's exit).
    pub fn drain(&self, bound: Duration) {
        let _ = self.closing.send(true);
        let count = self.active.count.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .active
            .changed
            .wait_timeout_while(count, bound, |n| *n > 0);
    }
}

/// Binds the control socket: replaces a stale socket file, refuses to steal a live one.
pub fn bind(
    path: &Path,
    socket_gid: Option<u32>,
) -> Result<std::os::unix::net::UnixListener, String> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        // Only a socket is ours to replace; anything else at the path was put there by someone.
        if !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) {
            return Err(format!(
                "{} exists and is not a socket; ctrlinit will not remove it\n    fix: remove it, or give ctrlinit another socket path (--socket PATH, CTRLINIT_SOCKET or [init] socket)",
                path.display()
            ));
        }
        match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => {
                return Err(format!(
                    "the control socket {} is in use by a running ctrlinit\n    fix: stop it, or give this one another socket (--socket PATH or CTRLINIT_SOCKET)",
                    path.display()
                ));
            }
            Err(_) => {
                std::fs::remove_file(path).map_err(|e| {
                    format!("cannot remove the stale socket {}: {e}", path.display())
                })?;
            }
        }
    }
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let listener = std::os::unix::net::UnixListener::bind(path)
        .map_err(|e| format!("cannot create the control socket {}: {e}", path.display()))?;
    let mode = if socket_gid.is_some() { 0o660 } else { 0o600 };
    if let Some(gid) = socket_gid {
        nix::unistd::chown(path, None, Some(nix::unistd::Gid::from_raw(gid)))
            .map_err(|e| format!("cannot give the control socket to group {gid}: {e}"))?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot set the control socket's mode: {e}"))?;
    Ok(listener)
}

/// Serves the control socket on a thread of its own, so that parsing, waiting and encoding
/// answers never take the supervisor's thread (which only builds snapshots and applies changes).
/// The thread runs at a lower priority: under contention, restarts go first.
pub fn start_thread(
    listener: std::os::unix::net::UnixListener,
    events: broadcast::Sender<EventRecord>,
    control: mpsc::UnboundedSender<Control>,
    logs: mpsc::UnboundedSender<LogCommand>,
    socket_gid: Option<u32>,
    path: PathBuf,
) -> Result<Server, String> {
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot set the control socket non-blocking: {e}"))?;
    let (closing_tx, closing) = watch::channel(false);
    let handles = Handles {
        control,
        events,
        logs,
        socket_gid,
        closing,
    };
    let active = std::sync::Arc::new(ActiveConnections::default());
    let server = Server {
        closing: closing_tx,
        active: std::sync::Arc::clone(&active),
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
                match UnixListener::from_std(listener) {
                    Ok(l) => serve(l, handles, active, path).await,
                    Err(e) => warn!("control socket: {e}"),
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
async fn serve(
    listener: UnixListener,
    handles: Handles,
    active: std::sync::Arc<ActiveConnections>,
    path: PathBuf,
) {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut closing = handles.closing.clone();
    loop {
        let permit = tokio::select! {
            p = std::sync::Arc::clone(&slots).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            _ = closed(&mut closing) => return,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = closed(&mut closing) => return,
        };
        match accepted {
            Ok((stream, _)) => {
                let handles = handles.clone();
                let counted = Counted::new(&active);
                tokio::spawn(async move {
                    let _permit = permit;
                    let _counted = counted;
                    if let Err(e) = connection(stream, handles).await {
                        debug!("control connection ended: {e}");
                    }
                });
            }
            Err(e) => {
                warn!("control socket {}: accept failed: {e}", path.display());
                // EMFILE and friends: back off briefly instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

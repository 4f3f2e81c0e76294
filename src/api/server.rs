//! The control socket server inside the init.
//!
//! The server runs on its own thread ("ctrlinit-api", with its own current-thread runtime), so
//! no connection work runs on the supervisor's loop. Each connection is a task there: it checks
//! the peer's credentials, reads one bounded request line (size and time), and only then talks
//! to the owner loop through [`Control`] messages. Garbage, oversized or half-sent requests are answered with an error or
//! dropped by the connection task; the owner loop never sees them. Waiting (`status --wait`, the
//! completion of `start`/`stop`/`restart`) happens here too, driven by the event broadcast.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tracing::{debug, warn};

use super::protocol::{
    self, Condition, EventRecord, GraphNode, MAX_REQUEST, ProgramStatus, REQUEST_TIMEOUT, Request,
    Response,
};
use crate::logs::Command as LogCommand;
use crate::supervisor::State;

/// Connections served at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 1024;

/// What a connection asks the owner loop.
pub enum Control {
    /// A snapshot of programs (all when empty); unknown names are an error.
    Status {
        /// Programs.
        names: Vec<String>,
        /// Answer: sequence number and programs.
        reply: oneshot::Sender<Result<(u64, Vec<ProgramStatus>), String>>,
    },
    /// Start, stop or restart by hand.
    Change {
        /// Which.
        kind: ChangeKind,
        /// Programs.
        names: Vec<String>,
        /// All programs.
        all: bool,
        /// Answer: what to wait for.
        reply: oneshot::Sender<Result<Plan, String>>,
    },
    /// Send a signal by hand.
    Signal {
        /// Signal name.
        signal: String,
        /// Programs.
        names: Vec<String>,
        /// Answer.
        reply: oneshot::Sender<Result<String, String>>,
    },
    /// Health verdict.
    Health {
        /// Count programs stopped by hand too.
        strict: bool,
        /// Answer: healthy, problems.
        reply: oneshot::Sender<(bool, Vec<String>)>,
    },
    /// Reload the configuration.
    Reload {
        /// Answer.
        reply: oneshot::Sender<Result<String, String>>,
    },
    /// Graceful shutdown.
    Shutdown {
        /// Answer.
        reply: oneshot::Sender<String>,
    },
    /// The dependency graph.
    Graph {
        /// Answer.
        reply: oneshot::Sender<Vec<GraphNode>>,
    },
}

/// Start, stop or restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Start.
    Start,
    /// Stop.
    Stop,
    /// Restart.
    Restart,
}

/// What a change by hand waits for before the command returns.
#[derive(Debug, Clone)]
pub struct Plan {
    /// What was done.
    pub message: String,
    /// Every goal must hold.
    pub goals: Vec<Goal>,
}

/// One program reaching one of some states.
#[derive(Debug, Clone)]
pub struct Goal {
    /// Program.
    pub name: String,
    /// Success states.
    pub states: Vec<State>,
    /// States that mean it will not get there.
    pub fails: Vec<State>,
    /// The run must be newer than this (a restart).
    pub after_run: Option<u64>,
}

/// Everything a connection needs.
#[derive(Clone)]
pub struct Handles {
    /// To the owner loop.
    pub control: mpsc::UnboundedSender<Control>,
    /// State changes.
    pub events: broadcast::Sender<EventRecord>,
    /// The log thread (for `logs`).
    pub logs: mpsc::UnboundedSender<LogCommand>,
    /// Group allowed besides root and ctrlinit's own user.
    pub socket_gid: Option<u32>,
    /// Becomes true when the init is about to exit: streams and waits end, after writing what
    /// they have.
    pub closing: watch::Receiver<bool>,
}

/// Connections being served, counted so the init's exit can wait for their last writes.
#[derive(Default)]
struct ActiveConnections {
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

async fn connection(stream: UnixStream, h: Handles) -> io::Result<()> {
    let peer = check_peer(&stream, h.socket_gid);
    let (mut read, mut write) = stream.into_split();
    // The request is read (bounded) even from a refused peer: closing on unread data resets the
    // connection, and the client would see a broken pipe instead of the refusal.
    let mut closing = h.closing.clone();
    let request = tokio::select! {
        r = read_request(&mut read) => r?,
        // A half-sent request at exit is not waited for.
        _ = closed(&mut closing) => return Ok(()),
    };
    let line = match request {
        Ok(Some(line)) => line,
        Ok(None) => return Ok(()),
        Err(error) => return send(&mut write, Response::Error { error }).await,
    };
    if let Err(error) = peer {
        return send(&mut write, Response::Error { error }).await;
    }
    match protocol::decode_request(&line) {
        Ok(request) => {
            tokio::select! {
                // First: a request is handed to the supervisor on its first poll, so even a
                // client that hangs up at once has its `shutdown` or `stop` carried out.
                biased;
                done = handle(request, &h, &mut write) => done,
                () = hung_up(&mut read) => Ok(()),
            }
        }
        Err(error) => send(&mut write, Response::Error { error }).await,
    }
}

/// Resolves once the client has closed the connection, so that `events`, `logs -f` and long
/// waits give their slot back at once instead of at their next write (which may never come).
/// A client that only shut down its writing side (`nc -N`, socat) still reads the answer: for it,
/// this never resolves.
async fn hung_up(read: &mut tokio::net::unix::OwnedReadHalf) {
    let mut ignored = [0u8; 512];
    // Whatever follows the request line is not read as a request.
    while let Ok(n @ 1..) = read.read(&mut ignored).await {
        let _ = n;
    }
    if !peer_closed(read.as_ref()) {
        std::future::pending::<()>().await;
    }
}

/// After end of file: a peer that closed its socket shows as POLLHUP; a half-close does not.
fn peer_closed(stream: &UnixStream) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(stream.as_fd(), PollFlags::empty())];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(1..))
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// One request line without its newline; `Ok(None)` when the client closed without sending
/// anything; `Err` (inner) when it sent too much, too slowly, or no newline.
async fn read_request(
    read: &mut tokio::net::unix::OwnedReadHalf,
) -> io::Result<Result<Option<Vec<u8>>, String>> {
    let mut reader = BufReader::new(read).take(MAX_REQUEST as u64 + 1);
    let mut line = Vec::new();
    let n = match tokio::time::timeout(REQUEST_TIMEOUT, reader.read_until(b'\n', &mut line)).await {
        Ok(r) => r?,
        Err(_) => {
            return Ok(Err(format!(
                "no complete request within {REQUEST_TIMEOUT:?}"
            )));
        }
    };
    if n == 0 {
        return Ok(Ok(None));
    }
    if line.len() > MAX_REQUEST {
        return Ok(Err(format!("request longer than {MAX_REQUEST} bytes")));
    }
    if line.pop() != Some(b'\n') {
        return Ok(Err("request not terminated by a newline".to_string()));
    }
    Ok(Ok(Some(line)))
}

/// Root, ctrlinit's own user, or a member of the socket group; checked on the connection itself,
/// so a socket file opened wide by someone does not let others in.
fn check_peer(stream: &UnixStream, socket_gid: Option<u32>) -> Result<(), String> {
    let cred = stream
        .peer_cred()
        .map_err(|e| format!("cannot read peer credentials: {e}"))?;
    let uid = cred.uid();
    let own = nix::unistd::geteuid().as_raw();
    if uid == 0 || uid == own {
        return Ok(());
    }
    if let Some(gid) = socket_gid
        && (cred.gid() == gid || user_in_group(uid, gid))
    {
        return Ok(());
    }
    Err(format!(
        "permission denied: uid {uid} may not use this control socket"
    ))
}

fn user_in_group(uid: u32, gid: u32) -> bool {
    crate::sys::users::user_by_uid(uid)
        .is_some_and(|u| crate::sys::users::groups_of(&u.name, u.gid).contains(&gid))
}

type Writer = tokio::net::unix::OwnedWriteHalf;

async fn send(w: &mut Writer, r: Response) -> io::Result<()> {
    w.write_all(&protocol::encode(r)).await
}

async fn ask<T>(h: &Handles, make: impl FnOnce(oneshot::Sender<T>) -> Control) -> io::Result<T> {
    let (tx, rx) = oneshot::channel();
    h.control
        .send(make(tx))
        .map_err(|_| io::Error::other("the supervisor is gone"))?;
    rx.await
        .map_err(|_| io::Error::other("the supervisor is gone"))
}

async fn handle(request: Request, h: &Handles, w: &mut Writer) -> io::Result<()> {
    match request {
        Request::Status { names } => {
            let r = match ask(h, |reply| Control::Status { names, reply }).await? {
                Ok((seq, programs)) => Response::Status { seq, programs },
                Err(error) => Response::Error { error },
            };
            send(w, r).await
        }
        Request::Wait {
            conditions,
            timeout_ms,
        } => {
            let r = wait_for(h, &conditions, Duration::from_millis(timeout_ms)).await?;
            send(w, r).await
        }
        Request::Start {
            names,
            all,
            timeout_ms,
        } => change(h, w, ChangeKind::Start, names, all, timeout_ms).await,
        Request::Stop {
            names,
            all,
            timeout_ms,
        } => change(h, w, ChangeKind::Stop, names, all, timeout_ms).await,
        Request::Restart {
            names,
            all,
            timeout_ms,
        } => change(h, w, ChangeKind::Restart, names, all, timeout_ms).await,
        Request::Signal { signal, names } => {
            let r = match ask(h, |reply| Control::Signal {
                signal,
                names,
                reply,
            })
            .await?
            {
                Ok(message) => Response::Done { message },
                Err(error) => Response::Error { error },
            };
            send(w, r).await
        }
        Request::Health { strict } => {
            let (healthy, problems) = ask(h, |reply| Control::Health { strict, reply }).await?;
            send(w, Response::Health { healthy, problems }).await
        }
        Request::Reload => {
            let r = match ask(h, |reply| Control::Reload { reply }).await? {
                Ok(message) => Response::Done { message },
                Err(error) => Response::Error { error },
            };
            send(w, r).await
        }
        Request::Shutdown => {
            let message = ask(h, |reply| Control::Shutdown { reply }).await?;
            send(w, Response::Done { message }).await
        }
        Request::Graph => {
            let programs = ask(h, |reply| Control::Graph { reply }).await?;
            send(w, Response::Graph { programs }).await
        }
        Request::Events => stream_events(h, w).await,
        Request::Logs {
            names,
            lines,
            follow,
            by_program,
        } => logs(h, w, names, lines, follow, by_program).await,
    }
}

async fn status(h: &Handles) -> io::Result<Vec<ProgramStatus>> {
    let all = ask(h, |reply| Control::Status {
        names: Vec::new(),
        reply,
    })
    .await?;
    Ok(all.map(|(_, p)| p).unwrap_or_default())
}

/// Resolves once the init starts to exit (holding nothing across the wait, so the task stays
/// `Send`).
async fn closed(closing: &mut watch::Receiver<bool>) {
    let _ = closing.wait_for(|c| *c).await;
}

/// What waiting for the next event gave.
enum Next {
    /// A state change happened (or some were missed): look again.
    Changed,
    /// The deadline passed first.
    TimedOut,
    /// The init is exiting.
    Closing,
}

/// Waits for the next state change, the deadline, or the init's exit.
async fn next_change(
    events: &mut broadcast::Receiver<EventRecord>,
    closing: &mut watch::Receiver<bool>,
    deadline: tokio::time::Instant,
) -> Next {
    // Checked first: while events keep coming, the timeout alone would never win.
    if tokio::time::Instant::now() >= deadline {
        return Next::TimedOut;
    }
    tokio::select! {
        r = tokio::time::timeout_at(deadline, events.recv()) => match r {
            Err(_) => Next::TimedOut,
            Ok(Err(broadcast::error::RecvError::Closed)) => Next::Closing,
            Ok(_) => Next::Changed,
        },
        _ = closed(closing) => Next::Closing,
    }
}

/// The answer to a wait cut short by the init's exit.
fn exiting() -> Response {
    Response::Error {
        error: "ctrlinit is exiting".into(),
    }
}

/// Waits until every condition holds at once.
async fn wait_for(
    h: &Handles,
    conditions: &[Condition],
    timeout: Duration,
) -> io::Result<Response> {
    let mut events = h.events.subscribe();
    let mut closing = h.closing.clone();
    let deadline = tokio::time::Instant::now() + timeout;
    // Unknown names are an error at once.
    let names: Vec<String> = conditions.iter().map(|c| c.name.clone()).collect();
    if let Err(error) = ask(h, |reply| Control::Status { names, reply }).await? {
        return Ok(Response::Error { error });
    }
    loop {
        let programs = status(h).await?;
        let unmet: Vec<String> = conditions
            .iter()
            .filter_map(|c| {
                let p = programs.iter().find(|p| p.name == c.name)?;
                (!c.states.contains(&p.state)).then(|| format!("{} is {}", p.name, p.state))
            })
            .collect();
        if unmet.is_empty() {
            return Ok(Response::Done {
                message: "condition holds".into(),
            });
        }
        match next_change(&mut events, &mut closing, deadline).await {
            Next::Changed => {}
            Next::TimedOut => {
                return Ok(Response::Error {
                    error: format!("timed out after {timeout:?}: {}", unmet.join(", ")),
                });
            }
            Next::Closing => return Ok(exiting()),
        }
    }
}

async fn change(
    h: &Handles,
    w: &mut Writer,
    kind: ChangeKind,
    names: Vec<String>,
    all: bool,
    timeout_ms: u64,
) -> io::Result<()> {
    let mut events = h.events.subscribe();
    let mut closing = h.closing.clone();
    let plan = match ask(h, |reply| Control::Change {
        kind,
        names,
        all,
        reply,
    })
    .await?
    {
        Ok(plan) => plan,
        Err(error) => return send(w, Response::Error { error }).await,
    };
    let timeout = Duration::from_millis(timeout_ms);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let programs = status(h).await?;
        let mut pending = Vec::new();
        for goal in &plan.goals {
            let Some(p) = programs.iter().find(|p| p.name == goal.name) else {
                continue;
            };
            let new_run = goal.after_run.is_none_or(|r| p.run > r);
            if goal.states.contains(&p.state) && new_run {
                continue;
            }
            if goal.fails.contains(&p.state) && new_run {
                let exit = p
                    .last_exit
                    .as_ref()
                    .map(|e| format!(" ({})", e.text))
                    .unwrap_or_default();
                let error = format!(
                    "{} did not reach {}: it is {}{exit}",
                    p.name,
                    states_text(&goal.states),
                    p.state
                );
                return send(w, Response::Error { error }).await;
            }
            pending.push(format!(
                "{} to be {} (it is {})",
                p.name,
                states_text(&goal.states),
                p.state
            ));
        }
        if pending.is_empty() {
            return send(
                w,
                Response::Done {
                    message: plan.message,
                },
            )
            .await;
        }
        match next_change(&mut events, &mut closing, deadline).await {
            Next::Changed => {}
            Next::TimedOut => {
                let error = format!(
                    "timed out after {timeout:?} waiting for {}",
                    pending.join(", ")
                );
                return send(w, Response::Error { error }).await;
            }
            Next::Closing => return send(w, exiting()).await,
        }
    }
}

fn states_text(states: &[State]) -> String {
    let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
    names.join(" or ")
}

async fn stream_events(h: &Handles, w: &mut Writer) -> io::Result<()> {
    let mut events = h.events.subscribe();
    let mut closing = h.closing.clone();
    loop {
        let received = tokio::select! {
            // First: at exit, every event sent before it still goes out.
            biased;
            r = events.recv() => r,
            _ = closed(&mut closing) => {
                while let Ok(event) = events.try_recv() {
                    send(w, Response::Event { event }).await?;
                }
                return Ok(());
            }
        };
        match received {
            Ok(event) => send(w, Response::Event { event }).await?,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                let error = format!("{n} events were missed (this client read too slowly)");
                send(w, Response::Error { error }).await?;
            }
            Err(broadcast::error::RecvError::Closed) => return Ok(()),
        }
    }
}

async fn logs(
    h: &Handles,
    w: &mut Writer,
    names: Vec<String>,
    lines: usize,
    follow: bool,
    by_program: bool,
) -> io::Result<()> {
    if let Err(error) = ask(h, |reply| Control::Status {
        names: names.clone(),
        reply,
    })
    .await?
    {
        return send(w, Response::Error { error }).await;
    }
    let (tx, rx) = oneshot::channel();
    let _ = h.logs.send(LogCommand::Tail {
        programs: names.clone(),
        lines,
        by_program,
        reply: tx,
    });
    let text = rx.await.unwrap_or_default();
    send(
        w,
        Response::Logs {
            text: String::from_utf8_lossy(&text).into_owned(),
        },
    )
    .await?;
    if !follow {
        return Ok(());
    }
    let (tx, mut rx) = mpsc::channel(256);
    let _ = h.logs.send(LogCommand::Follow {
        programs: names,
        tx,
    });
    let mut closing = h.closing.clone();
    loop {
        let chunk = tokio::select! {
            biased;
            c = rx.recv() => c,
            _ = closed(&mut closing) => None,
        };
        let Some(chunk) = chunk else { return Ok(()) };
        send(
            w,
            Response::Logs {
                text: String::from_utf8_lossy(&chunk).into_owned(),
            },
        )
        .await?;
    }
}

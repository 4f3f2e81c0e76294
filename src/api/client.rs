//! The client end of the control socket (blocking: one request, one or more response lines).

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::protocol;
use crate::model::protocol::{Request, Response};

/// Why a request got no answer.
#[derive(Debug)]
pub enum ClientError {
    /// Nothing listens at the socket path.
    Unreachable(PathBuf, io::Error),
    /// The socket exists but this user may not use it.
    PermissionDenied(PathBuf),
    /// The server closed the connection without answering (the init exited meanwhile).
    Closed,
    /// No whole answer line came within the answer's deadline (a stopped or stuck init, or
    /// bytes that never end a line).
    Timeout,
    /// The connection broke or the answer made no sense.
    Protocol(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Unreachable(p, e) => write!(
                f,
                "cannot reach ctrlinit at {}: {e} (is it running? --socket PATH or CTRLINIT_SOCKET choose the socket)",
                p.display()
            ),
            ClientError::PermissionDenied(p) => write!(
                f,
                "permission denied: {} (run as root, as ctrlinit's user, or as a member of its socket_group)",
                p.display()
            ),
            ClientError::Closed => write!(f, "ctrlinit closed the connection without an answer"),
            ClientError::Timeout => write!(f, "ctrlinit did not answer in time"),
            ClientError::Protocol(m) => write!(f, "{m}"),
        }
    }
}

/// The longest answer line read. The largest honest one, `status --usage` of 5,000 running
/// programs with long names, is about 2.6 MB; a line past this cap (a socket that never ends
/// its line) is refused rather than held in memory.
pub const MAX_ANSWER: usize = 64 << 20;

/// A connection to a running init.
pub struct Client {
    reader: BufReader<UnixStream>,
    /// An answer that came before the request could be sent (a refusal at accept).
    early: Option<Response>,
    /// How long each answer line may take in all, from the start of its read (`None`: no bound,
    /// for streams).
    timeout: Option<Duration>,
}

impl Client {
    /// Connects to the socket at `path`.
    pub fn connect(path: &Path) -> Result<Self, ClientError> {
        match UnixStream::connect(path) {
            Ok(stream) => Ok(Client {
                reader: BufReader::new(stream),
                early: None,
                timeout: None,
            }),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                Err(ClientError::PermissionDenied(path.to_path_buf()))
            }
            Err(e) => Err(ClientError::Unreachable(path.to_path_buf(), e)),
        }
    }

    /// The pid of the process at the other end (the init, as this client's PID namespace
    /// numbers it), from the socket's credentials.
    pub fn peer_pid(&self) -> Option<i32> {
        use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
        getsockopt(self.reader.get_ref(), PeerCredentials)
            .ok()
            .map(|c| c.pid())
    }

    /// Sends `request`; `timeout` bounds the wait for each whole answer line, however the bytes
    /// trickle in (`None`: no bound, for streams).
    pub fn send(
        &mut self,
        request: &Request,
        timeout: Option<Duration>,
    ) -> Result<(), ClientError> {
        self.timeout = timeout;
        let stream = self.reader.get_mut();
        stream
            .set_read_timeout(timeout)
            .map_err(|e| ClientError::Protocol(format!("failed to set a timeout: {e}")))?;
        if let Err(e) = stream.write_all(&protocol::encode(request)) {
            // A server that refuses a peer answers at once and closes; the answer says more
            // than the broken pipe.
            if let Ok(Some(answer)) = self.read_response() {
                self.early = Some(answer);
                return Ok(());
            }
            return Err(ClientError::Protocol(format!(
                "failed to send the request: {e}"
            )));
        }
        Ok(())
    }

    /// The next answer line; `None` when the server closed the connection.
    pub fn next_response(&mut self) -> Result<Option<Response>, ClientError> {
        if let Some(early) = self.early.take() {
            return Ok(Some(early));
        }
        self.read_response()
    }

    fn read_response(&mut self) -> Result<Option<Response>, ClientError> {
        let Some(line) = self.read_line()? else {
            return Ok(None);
        };
        let answer = std::str::from_utf8(&line)
            .map_err(|e| e.to_string())
            .and_then(|l| protocol::decode_response(l).map_err(|e| e.to_string()))
            .map_err(|e| ClientError::Protocol(format!("unreadable answer from ctrlinit: {e}")))?;
        Ok(Some(answer))
    }

    /// One answer line (with its newline; a last line may lack it), at most [`MAX_ANSWER`]
    /// bytes, whole within `timeout` from now: a per-read timeout alone never fires while bytes
    /// keep coming. `None` when the server closed before sending anything.
    fn read_line(&mut self) -> Result<Option<Vec<u8>>, ClientError> {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        let mut line = Vec::new();
        loop {
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(ClientError::Timeout);
                }
                let _ = self.reader.get_ref().set_read_timeout(Some(left));
            }
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ClientError::Timeout);
                }
                Err(e) => {
                    return Err(ClientError::Protocol(format!(
                        "connection to ctrlinit broke: {e}"
                    )));
                }
            };
            if buf.is_empty() {
                return Ok((!line.is_empty()).then_some(line));
            }
            let (take, ended) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if line.len() + take > MAX_ANSWER {
                return Err(ClientError::Protocol(format!(
                    "refused an answer longer than {} MiB without a line end (not ctrlinit's answer, or a broken one)",
                    MAX_ANSWER >> 20
                )));
            }
            line.extend_from_slice(&buf[..take]);
            self.reader.consume(take);
            if ended {
                return Ok(Some(line));
            }
        }
    }

    /// Sends `request` and returns the one answer.
    pub fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, ClientError> {
        self.send(request, Some(timeout))?;
        self.next_response()?.ok_or(ClientError::Closed)
    }
}

//! The client end of the control socket (blocking: one request, one or more response lines).

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
            ClientError::Protocol(m) => write!(f, "{m}"),
        }
    }
}

/// A connection to a running init.
pub struct Client {
    reader: BufReader<UnixStream>,
    /// An answer that came before the request could be sent (a refusal at accept).
    early: Option<Response>,
}

impl Client {
    /// Connects to the socket at `path`.
    pub fn connect(path: &Path) -> Result<Self, ClientError> {
        match UnixStream::connect(path) {
            Ok(stream) => Ok(Client {
                reader: BufReader::new(stream),
                early: None,
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

    /// Sends `request`; `timeout` bounds the wait for each answer line (`None`: no bound, for
    /// streams).
    pub fn send(
        &mut self,
        request: &Request,
        timeout: Option<Duration>,
    ) -> Result<(), ClientError> {
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
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Ok(None),
            Ok(_) => {
                let answer = protocol::decode_response(&line).map_err(|e| {
                    ClientError::Protocol(format!("unreadable answer from ctrlinit: {e}"))
                })?;
                Ok(Some(answer))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Err(ClientError::Protocol(
                    "ctrlinit did not answer in time".into(),
                ))
            }
            Err(e) => Err(ClientError::Protocol(format!(
                "connection to ctrlinit broke: {e}"
            ))),
        }
    }

    /// Sends `request` and returns the one answer.
    pub fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, ClientError> {
        self.send(request, Some(timeout))?;
        self.next_response()?.ok_or(ClientError::Closed)
    }
}

//! One connection of a peer that may use the socket (checked at accept): one bounded request line
//! (size and time), then its handler.
//! Garbage, oversized or half-sent requests are answered with an error or dropped here; the
//! owner loop never sees them.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::UnixStream;

use super::handlers::{handle, send};
use super::handles::{Handles, closed};
use super::protocol::{self, MAX_REQUEST, REQUEST_TIMEOUT};
use crate::model::protocol::{ErrorKind, Response};

/// Serves one connection to its end.
pub(crate) async fn connection(stream: UnixStream, h: Handles) -> io::Result<()> {
    let (mut read, mut write) = stream.into_split();
    let mut closing = h.closing.clone();
    let request = tokio::select! {
        r = read_request(&mut read) => r?,
        // A half-sent request at exit is not waited for.
        _ = closed(&mut closing) => return Ok(()),
    };
    let line = match request {
        Ok(Some(line)) => line,
        Ok(None) => return Ok(()),
        Err(error) => return send(&mut write, Response::error(ErrorKind::BadRequest, error)).await,
    };
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
        Err(error) => send(&mut write, Response::error(ErrorKind::BadRequest, error)).await,
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

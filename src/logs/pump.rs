//! One pump per pipe: read large chunks, frame lines, deliver, wait for the console if it is
//! full (so a program whose output cannot be shown waits, as with Docker's blocking log mode).

use std::os::fd::OwnedFd;
use std::rc::Rc;

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::unix::AsyncFd;

use super::command::Stream;
use super::frame::Framer;
use super::shared::{ProgramLog, RunTaps, Shared};

/// Reads `fd` until end of file, delivering every line to `p`'s sinks.
pub(super) async fn pump(
    shared: Rc<Shared>,
    p: Rc<ProgramLog>,
    stream: Stream,
    run: Option<u64>,
    fd: OwnedFd,
    taps: Rc<RunTaps>,
) {
    if let Err(e) = read_all(&shared, &p, stream, fd, &taps).await {
        tracing::warn!("{}: failed to read its {}: {e}", p.name, stream.as_str());
    }
    shared.pipe_closed(&p, run);
}

async fn read_all(
    shared: &Shared,
    p: &ProgramLog,
    stream: Stream,
    fd: OwnedFd,
    taps: &RunTaps,
) -> std::io::Result<()> {
    fcntl(&fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
    // SAFETY: `fd` is an OwnedFd moved into the AsyncFd; it stays open and unchanged until the
    // AsyncFd is dropped at the end of this function.
    let afd = unsafe { AsyncFd::register(fd) }?;
    let mut framer = Framer::new();
    let mut console = Vec::new();
    let mut follow = Vec::new();
    loop {
        let mut guard = afd.readable().await?;
        let n = match guard.try_io(|fd| {
            nix::unistd::read(fd.get_ref(), framer.spare()).map_err(std::io::Error::from)
        }) {
            Ok(Ok(n)) => n,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => continue,
        };
        if n == 0 {
            break;
        }
        framer.filled(n);
        let at_ms = now_ms();
        while let Some(block) = framer.next_block() {
            taps.saw(block.data, at_ms);
            shared.deliver(p, stream, block, at_ms, &mut console, &mut follow);
        }
        flush(shared, p, &mut console, &mut follow).await;
    }
    if let Some(block) = framer.finish() {
        taps.saw(block.data, now_ms());
        shared.deliver(p, stream, block, now_ms(), &mut console, &mut follow);
    }
    flush(shared, p, &mut console, &mut follow).await;
    Ok(())
}

/// Milliseconds since the Unix epoch: the time a read's lines carry in the ring (one clock read
/// per read, not per line).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

async fn flush(shared: &Shared, p: &ProgramLog, console: &mut Vec<u8>, follow: &mut Vec<u8>) {
    if !follow.is_empty() {
        shared.to_followers(&p.name, follow);
        follow.clear();
    }
    if !console.is_empty() {
        let buf = std::mem::take(console);
        // Waits while the console is full: back-pressure onto this program only.
        let chunk = super::console::Chunk {
            stderr: false,
            bytes: buf,
        };
        let _ = shared.console.send(chunk).await;
    }
}

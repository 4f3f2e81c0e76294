//! Readiness checks that need no child process: a TCP connect or a file's existence, tried every
//! `interval` until they pass. They run only while a program is `starting`; the owner loop aborts
//! them when the run moves on, so an idle supervisor has no checks waking it.
//!
//! `exec` checks spawn a process, so they belong to the owner loop (one reaper); this module only
//! schedules their retries.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::runner::Event;

/// Tries a TCP connect every `interval` until one succeeds, then reports the run ready.
pub async fn tcp(
    addr: SocketAddr,
    interval: Duration,
    prog: usize,
    run: u64,
    tx: UnboundedSender<Event>,
) {
    loop {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            let _ = tx.send(Event::ProbePassed { prog, run });
            return;
        }
        tokio::time::sleep(interval).await;
    }
}

/// Checks for `path` every `interval` until it exists, then reports the run ready.
pub async fn file(
    path: PathBuf,
    interval: Duration,
    prog: usize,
    run: u64,
    tx: UnboundedSender<Event>,
) {
    loop {
        if path.exists() {
            let _ = tx.send(Event::ProbePassed { prog, run });
            return;
        }
        tokio::time::sleep(interval).await;
    }
}

/// Asks the owner loop to run an `exec` check again after `interval`.
pub async fn retry_later(interval: Duration, prog: usize, run: u64, tx: UnboundedSender<Event>) {
    tokio::time::sleep(interval).await;
    let _ = tx.send(Event::ProbeRetry { prog, run });
}

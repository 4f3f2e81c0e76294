//! External dependencies' checks (`[external.NAME]`): one task per external, one attempt per
//! `interval`, each bounded by `timeout`, told to the owner loop as a [`ProbeEvent::External`].
//!
//! Names are resolved at every attempt, off the loop (`resolve.rs`).
//!
//! A `ctrlinit` peer is followed as a stream when it can stream (`peer.rs`), polled
//! otherwise. `exec` checks are processes: the task only says when one is due, and the owner
//! loop spawns and reaps it (see `external_exec.rs`). Every read is capped ([`peer::PEER_CAP`]) and every attempt
//! has one deadline, so a peer that answers garbage or never closes is a failed check.

use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::events::ProbeEvent;
use super::http_get::{self, fmt_secs, os_words};
use super::peer::{self, Next};
use super::resolve::{LazyResolver, resolve};
use crate::config::{ExternalCheck, ExternalSpec, HttpTarget};
use crate::sys::timer::Sleeper;

/// The running check tasks, one per external (none for `exec` ones, which the loop runs).
#[derive(Default)]
pub(crate) struct ExternalChecks {
    tasks: Vec<JoinHandle<()>>,
}

impl ExternalChecks {
    /// Starts (or, after a reload, starts again) a task per external of `specs`.
    pub(crate) fn start(&mut self, specs: &[ExternalSpec], tx: &UnboundedSender<ProbeEvent>) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
        let resolver = Arc::new(OnceLock::new());
        for spec in specs {
            let spec = Arc::new(spec.clone());
            let (tx, resolver) = (tx.clone(), Arc::clone(&resolver));
            self.tasks.push(tokio::spawn(run(spec, resolver, tx)));
        }
    }
}

/// Checks `spec` forever: an attempt, its result sent, `interval`, and again. A peer
/// ctrlinit is followed as a stream while it can stream (see `peer.rs`), polled otherwise.
async fn run(spec: Arc<ExternalSpec>, resolver: LazyResolver, tx: UnboundedSender<ProbeEvent>) {
    let mut stream_again = tokio::time::Instant::now();
    // The wait between attempts wakes the loop once (see `sys::timer`).
    let sleeper = Sleeper::new().ok();
    let pause = || async {
        match &sleeper {
            Some(s) => s.sleep(spec.interval).await,
            None => tokio::time::sleep(spec.interval).await,
        }
    };
    loop {
        if let ExternalCheck::Exec(_) = spec.check {
            // The owner loop spawns it and sends the result itself.
            let (done_tx, done) = tokio::sync::oneshot::channel();
            let due = ProbeEvent::ExternalExecDue {
                name: spec.name.clone(),
                done: done_tx,
            };
            if tx.send(due).is_err() {
                return;
            }
            let _ = done.await;
            pause().await;
            continue;
        }
        if let ExternalCheck::Ctrlinit { at, program } = &spec.check
            && tokio::time::Instant::now() >= stream_again
        {
            match peer::follow(&spec, at, program, &resolver, &tx).await {
                Next::Again => continue,
                Next::Wait => {}
                Next::Poll { sent } => {
                    stream_again = tokio::time::Instant::now() + peer::RETRY_STREAM;
                    if !sent {
                        continue;
                    }
                }
                Next::Gone => return,
            }
            pause().await;
            continue;
        }
        let (passed, output, peer_run) =
            match tokio::time::timeout(spec.timeout, attempt(&spec, &resolver)).await {
                Ok(r) => r,
                Err(_) => (
                    false,
                    format!("timed out after {}", fmt_secs(spec.timeout)),
                    None,
                ),
            };
        let event = ProbeEvent::External {
            name: spec.name.clone(),
            passed,
            output,
            peer_run,
        };
        if tx.send(event).is_err() {
            return;
        }
        pause().await;
    }
}

/// One attempt: (passed, what it found, the peer's run).
async fn attempt(spec: &ExternalSpec, resolver: &LazyResolver) -> (bool, String, Option<String>) {
    let Some(at) = spec.check.host() else {
        return (false, "not an in-process check".into(), None);
    };
    let addr = match resolve(at, resolver).await {
        Ok(a) => a,
        Err(e) => return (false, e, None),
    };
    match &spec.check {
        ExternalCheck::Tcp(_) => match tokio::net::TcpStream::connect(addr).await {
            Ok(_) => (true, format!("connected to {addr}"), None),
            Err(e) => (false, os_words(&e), None),
        },
        ExternalCheck::Http { url, path, .. } => {
            let target = HttpTarget {
                url: url.clone(),
                addr,
                host: at.to_string(),
                path: path.clone(),
            };
            match http_get::get(&target, spec.timeout).await {
                Ok(answer) => (answer.passed(), answer.line, None),
                Err(e) => (false, e, None),
            }
        }
        ExternalCheck::Ctrlinit { program, .. } => match peer::poll(addr, at, program).await {
            Ok((ready, line, run)) => (ready, line, Some(run)),
            Err(e) => (false, e, None),
        },
        ExternalCheck::Exec(_) => (false, "not an in-process check".into(), None),
    }
}

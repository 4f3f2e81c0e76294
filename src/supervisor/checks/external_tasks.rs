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

use super::events::{Mailbox, ProbeEvent, Report};
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
            let mailbox = Mailbox::new(spec.name.clone(), tx.clone());
            let resolver = Arc::clone(&resolver);
            self.tasks.push(tokio::spawn(run(spec, resolver, mailbox)));
        }
    }
}

/// Checks `spec` forever: an attempt, its result sent, `interval`, and again. A peer
/// ctrlinit is followed as a stream while it can stream (see `peer.rs`), polled otherwise.
/// Its results go to `mailbox`, the latest only (see `events::Mailbox`).
async fn run(spec: Arc<ExternalSpec>, resolver: LazyResolver, mailbox: Arc<Mailbox>) {
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
            if !mailbox.tell(due) {
                return;
            }
            let _ = done.await;
            pause().await;
            continue;
        }
        if let ExternalCheck::Ctrlinit { at, program } = &spec.check
            && tokio::time::Instant::now() >= stream_again
        {
            match peer::follow(&spec, at, program, &resolver, &mailbox).await {
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
        let report = match tokio::time::timeout(spec.timeout, attempt(&spec, &resolver)).await {
            Ok(r) => r,
            Err(_) => Report::failed(format!("timed out after {}", fmt_secs(spec.timeout))),
        };
        if !mailbox.post(report) {
            return;
        }
        pause().await;
    }
}

/// One attempt's result.
async fn attempt(spec: &ExternalSpec, resolver: &LazyResolver) -> Report {
    let Some(at) = spec.check.host() else {
        return Report::failed("not an in-process check".into());
    };
    let addr = match resolve(at, resolver).await {
        Ok(a) => a,
        Err(e) => return Report::failed(e),
    };
    let (passed, output) = match &spec.check {
        ExternalCheck::Tcp(_) => match tokio::net::TcpStream::connect(addr).await {
            Ok(_) => (true, format!("connected to {addr}")),
            Err(e) => (false, os_words(&e)),
        },
        ExternalCheck::Http { url, path, .. } => {
            let target = HttpTarget {
                url: url.clone(),
                addr,
                host: at.to_string(),
                path: path.clone(),
            };
            match http_get::get(&target, spec.timeout).await {
                Ok(answer) => (answer.passed(), answer.line),
                Err(e) => (false, e),
            }
        }
        ExternalCheck::Ctrlinit { program, .. } => return peer::poll(addr, at, program).await,
        ExternalCheck::Exec(_) => (false, "not an in-process check".into()),
    };
    Report {
        passed: Some(passed),
        output,
        peer_run: None,
    }
}

//! ctrlinit's own lines on their way to the console: queued in order and handed over by one task
//! that waits for room, so a burst (a hundred programs starting at once, each with two state
//! lines) is never cut short by a console thread that is merely behind. Only while the console is
//! blocked (a stalled `docker logs` pipe) and the queue has reached its bound are lines dropped;
//! they are counted, and the next line that gets in says how many.
//!
//! The log thread itself never waits here: it must go on pumping programs' pipes and answering
//! `logs` whatever the console does.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use tokio::sync::mpsc::Sender;
use tokio::sync::{Notify, watch};

use super::console::Chunk;

/// Bytes of own lines held while the console does not take them (about 2,000 lines).
const CAP_BYTES: usize = 256 << 10;

/// The queue (one per log thread).
pub(super) struct OwnQueue {
    pending: RefCell<VecDeque<Chunk>>,
    bytes: Cell<usize>,
    dropped: Cell<u64>,
    wake: Notify,
    /// True while nothing is queued or being handed over.
    idle: watch::Sender<bool>,
}

impl OwnQueue {
    /// An empty queue.
    pub(super) fn new() -> OwnQueue {
        OwnQueue {
            pending: RefCell::new(VecDeque::new()),
            bytes: Cell::new(0),
            dropped: Cell::new(0),
            wake: Notify::new(),
            idle: watch::channel(true).0,
        }
    }

    /// Lines dropped since the last one that got in (to be said before the next).
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.get()
    }

    /// Queues `chunk`, which says the [`OwnQueue::dropped`] count first when that was not zero;
    /// or drops it (counted) when the queue is full.
    pub(super) fn push(&self, chunk: Chunk) {
        let len = chunk.bytes.len();
        if self.bytes.get() + len > CAP_BYTES {
            self.dropped.set(self.dropped.get() + 1);
            return;
        }
        self.dropped.set(0);
        self.bytes.set(self.bytes.get() + len);
        self.pending.borrow_mut().push_back(chunk);
        self.idle.send_replace(false);
        self.wake.notify_one();
    }

    /// Hands queued lines to the console in order, waiting for room; runs until the console is
    /// gone.
    pub(super) async fn forward(self: Rc<Self>, console: Sender<Chunk>) {
        loop {
            let next = self.pending.borrow_mut().pop_front();
            match next {
                Some(chunk) => {
                    self.bytes.set(self.bytes.get() - chunk.bytes.len());
                    if console.send(chunk).await.is_err() {
                        return;
                    }
                }
                None => {
                    self.idle.send_replace(true);
                    self.wake.notified().await;
                }
            }
        }
    }

    /// Resolves once everything queued has been handed to the console (at exit, under the
    /// caller's time bound).
    pub(super) async fn flushed(&self) {
        let mut idle = self.idle.subscribe();
        let _ = idle.wait_for(|idle| *idle).await;
    }
}

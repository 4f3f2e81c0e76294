//! The state changes the supervisor announces, for `ctrlinit events`, `status --wait` and the
//! completion of start, stop and restart.
//!
//! The owner loop publishes; every subscriber (a connection on the control server's thread)
//! reads at its own pace. An event is kept until every subscriber has read it, so a client that
//! keeps up never misses one, however large a burst (a thousand programs restarting at once
//! publish thousands in one decision, before any reader runs). What a subscriber that stops
//! reading can pin is bounded: past [`MAX_BACKLOG`] events behind, the oldest go and it is told
//! how many it missed. With no subscriber, nothing is kept at all.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::model::protocol::EventRecord;

/// Most events kept for a subscriber that does not read (a few MiB at worst).
pub const MAX_BACKLOG: usize = 16_384;

/// The log of events and where each subscriber is in it.
#[derive(Default)]
pub struct EventLog {
    inner: Mutex<Inner>,
    published: Notify,
}

#[derive(Default)]
struct Inner {
    events: VecDeque<Arc<EventRecord>>,
    /// Sequence number of `events[0]` (the next to publish when empty).
    first: u64,
    /// Each subscriber's next sequence number.
    readers: HashMap<u64, u64>,
    next_reader: u64,
    closed: bool,
}

impl Inner {
    fn end(&self) -> u64 {
        self.first + self.events.len() as u64
    }

    /// Drops what every reader has read, and beyond the backlog cap the oldest.
    fn trim(&mut self) {
        let oldest_wanted = self.readers.values().copied().min().unwrap_or(self.end());
        while self.first < oldest_wanted && !self.events.is_empty() {
            self.events.pop_front();
            self.first += 1;
        }
        while self.events.len() > MAX_BACKLOG {
            self.events.pop_front();
            self.first += 1;
        }
    }
}

/// What reading the next event gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// The next event.
    Event(Arc<EventRecord>),
    /// This many events went before this reader read them (it fell too far behind).
    Missed(u64),
    /// The log is closed (the init is exiting) and everything in it was read.
    Closed,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> Arc<Self> {
        Arc::new(EventLog::default())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A reader that panicked mid-read leaves consistent data behind: keep going.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds an event (its `seq` is the caller's) and wakes the readers.
    pub fn publish(&self, event: EventRecord) {
        let mut inner = self.lock();
        if !inner.readers.is_empty() {
            inner.events.push_back(Arc::new(event));
            inner.trim();
        } else {
            // Nobody to read it: nothing is kept (an idle init holds no events).
            inner.first += 1;
        }
        drop(inner);
        self.published.notify_waiters();
    }

    /// No more events: readers get what is left, then [`Received::Closed`].
    pub fn close(&self) {
        self.lock().closed = true;
        self.published.notify_waiters();
    }

    /// A reader of every event published from now on.
    pub fn subscribe(self: &Arc<Self>) -> Subscription {
        let mut inner = self.lock();
        let id = inner.next_reader;
        inner.next_reader += 1;
        let at = inner.end();
        inner.readers.insert(id, at);
        Subscription {
            log: Arc::clone(self),
            id,
        }
    }
}

/// One reader's place in the log; leaving (drop) frees what only it still needed.
pub struct Subscription {
    log: Arc<EventLog>,
    id: u64,
}

impl Subscription {
    /// The next event without waiting, if one is there.
    pub fn try_recv(&mut self) -> Option<Received> {
        let mut inner = self.log.lock();
        let next = *inner.readers.get(&self.id)?;
        if next < inner.first {
            let missed = inner.first - next;
            let first = inner.first;
            inner.readers.insert(self.id, first);
            return Some(Received::Missed(missed));
        }
        match inner.events.get((next - inner.first) as usize) {
            Some(event) => {
                let event = Arc::clone(event);
                inner.readers.insert(self.id, next + 1);
                inner.trim();
                Some(Received::Event(event))
            }
            None if inner.closed => Some(Received::Closed),
            None => None,
        }
    }

    /// The next event, waiting for it.
    pub async fn recv(&mut self) -> Received {
        let log = Arc::clone(&self.log);
        loop {
            let published = log.published.notified();
            tokio::pin!(published);
            // Registered before looking, so a publish in between is not missed.
            published.as_mut().enable();
            if let Some(r) = self.try_recv() {
                return r;
            }
            published.await;
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut inner = self.log.lock();
        inner.readers.remove(&self.id);
        inner.trim();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64) -> EventRecord {
        EventRecord {
            seq,
            time: String::new(),
            program: None,
            from: None,
            to: None,
            message: format!("event {seq}"),
            health: None,
        }
    }

    #[test]
    fn a_reader_that_keeps_up_misses_nothing_of_a_burst() {
        let log = EventLog::new();
        let mut sub = log.subscribe();
        for seq in 1..=5_000 {
            log.publish(event(seq));
        }
        for seq in 1..=5_000 {
            match sub.try_recv() {
                Some(Received::Event(e)) => assert_eq!(e.seq, seq),
                other => panic!("{seq}: {other:?}"),
            }
        }
        assert_eq!(sub.try_recv(), None);
        assert!(log.lock().events.is_empty(), "read events are not kept");
    }

    #[test]
    fn a_reader_that_falls_behind_is_told_how_many_it_missed() {
        let log = EventLog::new();
        let mut slow = log.subscribe();
        for seq in 0..(MAX_BACKLOG as u64 + 10) {
            log.publish(event(seq));
        }
        assert_eq!(slow.try_recv(), Some(Received::Missed(10)));
        match slow.try_recv() {
            Some(Received::Event(e)) => assert_eq!(e.seq, 10),
            other => panic!("{other:?}"),
        }
        assert!(log.lock().events.len() <= MAX_BACKLOG);
    }

    #[test]
    fn nothing_is_kept_without_readers_and_a_closed_log_ends_after_its_events() {
        let log = EventLog::new();
        log.publish(event(1));
        assert!(log.lock().events.is_empty());
        let mut sub = log.subscribe();
        log.publish(event(2));
        drop(log.subscribe());
        log.close();
        assert!(matches!(sub.try_recv(), Some(Received::Event(e)) if e.seq == 2));
        assert_eq!(sub.try_recv(), Some(Received::Closed));
        drop(sub);
        assert!(log.lock().readers.is_empty());
    }
}

//! The syslog intake's state and its reading of the datagram socket, on the log thread: a
//! message's sender attributed to a program's run (or to the `syslog` stream), its line written
//! where that program's output goes, within a bounded turn.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tracing::{debug, warn};

use super::budget;
use super::counters::SyslogCounters;
use super::record::{MESSAGE_MAX, Record};
use super::run::Run;
use crate::config::{ConsoleMode, LogSettings};
use crate::logs::console::{self, json_string};
use crate::logs::frame::Block;
use crate::logs::shared::{ProgramLog, Shared};
use crate::sys::ancestry::Owners;
use crate::sys::procs;
use crate::sys::syslog_socket::SyslogSocket;

/// Datagrams read per turn at most.
const BATCH: usize = 256;

/// Time spent reading per turn at most, whatever the messages cost.
const TURN_BUDGET: Duration = Duration::from_millis(2);

/// Senders whose attribution is remembered between table changes, at most.
const SEEN_MAX: usize = 1024;

/// Messages from live senders of no known run held back for the next table, at most.
const PARKED_MAX: usize = 256;

/// How long such a message (or a new stream connection) waits for a table that names its
/// sender.
pub(super) const PARK_FOR: Duration = Duration::from_millis(500);
/// The name of the stream of senders that belong to no program.
pub const FOREIGN: &str = "syslog";

/// A held-back message: its sender, bytes, whether it was cut, when it came.
pub(super) type Parked = (Sender, Vec<u8>, bool, Instant);

/// A sender as read at receipt: the pid the kernel named and the start time of the process
/// that held it then. A pid is reused once its process is gone (a local user can fork until it
/// holds one a program's `logger` used); with the start time it names one process for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Sender {
    pid: i32,
    start: u64,
}

impl Sender {
    /// The process holding `pid` now (`None`: none does).
    pub(super) fn of(pid: i32) -> Option<Sender> {
        let start = procs::stat(pid)?.start;
        Some(Sender { pid, start })
    }
}

/// The intake's state, on the log thread.
pub(crate) struct Intake {
    pub(super) shared: Rc<Shared>,
    pub(super) owners: RefCell<Owners<Run>>,
    /// Senders attributed since the table last changed (`None`: no run).
    pub(super) seen: RefCell<HashMap<Sender, Option<Run>>>,
    /// Counts the tables: stream connections wake on a new one to see whether their run ended.
    pub(super) tables: tokio::sync::watch::Sender<u64>,
    pub(super) budget: RefCell<budget::Budget>,
    pub(super) counters: Arc<SyslogCounters>,
    /// This turn's lines, by source, on their way to the files and the ring.
    pub(super) pending: RefCell<HashMap<String, Vec<u8>>>,
    /// This turn's console bytes.
    pub(super) console: RefCell<Vec<u8>>,
    /// Messages of live senders that no run in the table owns, held back until the next table
    /// (a run spawned a moment ago, whose table is still on its way) or [`PARK_FOR`].
    pub(super) parked: RefCell<Vec<Parked>>,
    /// Wakes [`unparking`] when a message is parked (nothing wakes while none is).
    pub(super) parked_one: tokio::sync::Notify,
}

impl Intake {
    /// An intake writing through `shared`, counting in `counters`, with no table yet.
    pub(super) fn new(shared: &Rc<Shared>, counters: Arc<SyslogCounters>) -> Intake {
        Intake {
            shared: Rc::clone(shared),
            owners: RefCell::new(Owners::default()),
            seen: RefCell::new(HashMap::new()),
            tables: tokio::sync::watch::Sender::new(0),
            budget: RefCell::new(budget::Budget::default()),
            counters,
            pending: RefCell::new(HashMap::new()),
            console: RefCell::new(Vec::new()),
            parked: RefCell::new(Vec::new()),
            parked_one: tokio::sync::Notify::new(),
        }
    }

    /// The owner loop's new table of runs.
    pub(crate) fn set_owners(&self, owners: Owners<Run>) {
        *self.owners.borrow_mut() = owners;
        self.seen.borrow_mut().clear();
        self.tables.send_modify(|n| *n += 1);
        self.unpark(true);
    }

    /// Whether `run` is still in the table (a stream connection it opened is closed when not).
    pub(super) fn live(&self, run: &Run) -> bool {
        self.owners.borrow().holds(run)
    }

    /// Hands the parked messages on: all of them (`all`, a new table), or those that waited
    /// [`PARK_FOR`].
    fn unpark(&self, all: bool) {
        let now = Instant::now();
        let due: Vec<_> = {
            let mut parked = self.parked.borrow_mut();
            if parked.is_empty() {
                return;
            }
            let (due, keep) = std::mem::take(&mut *parked)
                .into_iter()
                .partition(|(_, _, _, at)| all || now.duration_since(*at) >= PARK_FOR);
            *parked = keep;
            due
        };
        for (sender, bytes, cut, at) in due {
            let late = now.duration_since(at) >= PARK_FOR;
            self.deliver(Some(sender), &bytes, cut, now, late);
        }
        self.flush(now);
    }

    /// The run `sender` belongs to, if any: none when its pid is no longer held by that very
    /// process (it exited, and the pid may be another's now).
    pub(super) fn attribute(&self, sender: Sender) -> Option<Run> {
        if let Some(known) = self.seen.borrow().get(&sender) {
            return known.clone();
        }
        let stat = procs::stat(sender.pid).filter(|s| s.start == sender.start)?;
        let owner = self.owners.borrow().owner_by(sender.pid, stat);
        let mut seen = self.seen.borrow_mut();
        if seen.len() >= SEEN_MAX {
            seen.clear();
        }
        seen.insert(sender, owner.clone());
        owner
    }

    /// One datagram from `pid` (`None`: no credentials), `cut` at [`MESSAGE_MAX`].
    pub(super) fn message(&self, pid: Option<i32>, bytes: &[u8], cut: bool, now: Instant) {
        self.count(cut);
        self.deliver(pid.and_then(Sender::of), bytes, cut, now, false);
    }

    /// One message of a stream connection, already attributed to `run` (`None`: no run).
    pub(super) fn stream_message(&self, run: Option<&Run>, bytes: &[u8], cut: bool, now: Instant) {
        self.count(cut);
        self.write(run, bytes, now);
    }

    fn count(&self, cut: bool) {
        SyslogCounters::add(&self.counters.received, 1);
        if cut {
            SyslogCounters::add(&self.counters.truncated, 1);
        }
    }

    /// Attributes and queues one message; a live sender of no known run is parked first
    /// (unless `last_try`).
    fn deliver(&self, from: Option<Sender>, bytes: &[u8], cut: bool, now: Instant, last_try: bool) {
        let owner = from.and_then(|s| self.attribute(s));
        if owner.is_none()
            && !last_try
            && let Some(sender) = from
            && self.parked.borrow().len() < PARKED_MAX
            && Sender::of(sender.pid) == Some(sender)
        {
            self.parked
                .borrow_mut()
                .push((sender, bytes.to_vec(), cut, now));
            self.parked_one.notify_one();
            return;
        }
        self.write(owner.as_ref(), bytes, now);
    }

    /// Parses one message and queues its line for `run`'s program (the `syslog` stream when
    /// none), within that source's budget.
    fn write(&self, run: Option<&Run>, bytes: &[u8], now: Instant) {
        let c = &self.counters;
        if run.is_none() {
            SyslogCounters::add(&c.foreign, 1);
        }
        let source = run.map_or(FOREIGN, |r| r.name.as_str());
        if !self.budget.borrow_mut().take(source, now) {
            SyslogCounters::add(&c.rate_dropped, 1);
            return;
        }
        let record = Record::parse(bytes);
        self.add(source, &record);
    }

    /// Queues `record`'s line for `source`'s file and ring, and the console.
    fn add(&self, source: &str, record: &Record) {
        let mut pending = self.pending.borrow_mut();
        let lines = match pending.get_mut(source) {
            Some(l) => l,
            None => pending.entry(source.to_string()).or_default(),
        };
        let start = lines.len();
        record.line(lines);
        let p = self.log_of(source);
        if !p.settings.get().console {
            return;
        }
        let mut out = self.console.borrow_mut();
        match self.shared.mode.get() {
            ConsoleMode::Off => {}
            ConsoleMode::Plain => out.extend_from_slice(&lines[start..]),
            ConsoleMode::Prefix => {
                out.extend_from_slice(&p.prefixes.borrow().0);
                out.extend_from_slice(&lines[start..]);
            }
            ConsoleMode::Json => json(&mut out, source, record),
        }
    }

    /// The sinks of `source` (the `syslog` stream's opened on first use).
    fn log_of(&self, source: &str) -> Rc<ProgramLog> {
        if let Some(p) = self.shared.programs.borrow().get(source) {
            return Rc::clone(p);
        }
        let p = Rc::new(ProgramLog::new(
            source,
            LogSettings::default(),
            self.shared.width.get(),
        ));
        crate::logs::shared::open_files(&self.shared, &p);
        self.shared
            .programs
            .borrow_mut()
            .insert(source.to_string(), Rc::clone(&p));
        p
    }

    /// Writes this turn's lines to their files, rings, followers and the console (never
    /// waiting for it), and the drop notices that are due.
    pub(super) fn flush(&self, now: Instant) {
        for (source, dropped) in self.budget.borrow_mut().notices(now) {
            let text = format!(
                "ctrlinit: dropped {dropped} syslog messages of {source} (over {} a second)",
                budget::RATE
            );
            warn!("{text}");
            let mut pending = self.pending.borrow_mut();
            let lines = pending.entry(source).or_default();
            lines.extend_from_slice(text.as_bytes());
            lines.push(b'\n');
        }
        let at_ms = now_ms();
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for (source, lines) in pending {
            let p = self.log_of(&source);
            let block = Block {
                data: &lines,
                terminated: true,
            };
            if let Some(f) = p.out_file.borrow_mut().as_mut() {
                f.write_block(block);
            }
            p.ring.borrow_mut().push_block(
                super::super::command::Stream::Stdout,
                &lines,
                true,
                at_ms,
            );
            if !self.shared.followers.borrow().is_empty() {
                let mut follow = Vec::new();
                let prefix = p.prefixes.borrow().0.clone();
                let stream = super::super::command::Stream::Stdout;
                console::format_block(
                    ConsoleMode::Prefix,
                    &prefix,
                    &source,
                    stream,
                    block,
                    &mut follow,
                );
                self.shared.to_followers(&source, &follow);
            }
        }
        let bytes = std::mem::take(&mut *self.console.borrow_mut());
        if !bytes.is_empty() {
            let lines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            let chunk = console::Chunk {
                stderr: false,
                bytes,
            };
            if self.shared.console.try_send(chunk).is_err() {
                SyslogCounters::add(&self.counters.console_dropped, lines);
            }
        }
    }
}

/// Reads the datagram socket: a bounded turn at a time, the other tasks of the log thread
/// (pumps, the hub with a new table of runs) between turns.
pub(super) async fn datagrams(intake: Rc<Intake>, socket: AsyncFd<SyslogSocket>) {
    let mut buf = vec![0u8; MESSAGE_MAX];
    loop {
        match socket.readable().await {
            // Cleared before the drain: a datagram that arrives during it wakes the task again.
            Ok(mut guard) => guard.clear_ready(),
            Err(e) => {
                warn!("syslog socket: {e}; syslog messages are no longer read");
                return;
            }
        }
        // The hub first: a run spawned just now has its table queued before its first message.
        tokio::task::yield_now().await;
        while turn(&intake, socket.get_ref(), &mut buf) {
            tokio::task::yield_now().await;
        }
        intake.unpark(false);
    }
}

/// Hands on parked messages once they waited long enough for a table naming their sender.
pub(super) async fn unparking(intake: Rc<Intake>) {
    loop {
        intake.parked_one.notified().await;
        while !intake.parked.borrow().is_empty() {
            tokio::time::sleep(PARK_FOR).await;
            intake.unpark(false);
        }
    }
}

/// One turn: reads up to [`BATCH`] datagrams within [`TURN_BUDGET`] and writes them out;
/// whether more may be waiting.
fn turn(intake: &Intake, socket: &SyslogSocket, buf: &mut [u8]) -> bool {
    let began = Instant::now();
    let mut more = true;
    for _ in 0..BATCH {
        if began.elapsed() >= TURN_BUDGET {
            break;
        }
        match socket.recv(buf) {
            Ok(Some(got)) => intake.message(got.pid, &buf[..got.len], got.cut, began),
            Ok(None) => {
                more = false;
                break;
            }
            Err(e) => {
                debug!("syslog socket: {e}");
                more = false;
                break;
            }
        }
    }
    intake.flush(Instant::now());
    more
}

/// One JSON console line: ctrlinit's usual fields, `"stream":"syslog"`, the level the severity
/// maps to, and `facility`, `severity`, `tag` and `pid` as the message gave them.
fn json(out: &mut Vec<u8>, source: &str, r: &Record) {
    let ts = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    out.extend_from_slice(b"{\"timestamp\":\"");
    out.extend_from_slice(ts.as_bytes());
    out.extend_from_slice(b"\",\"program\":");
    json_string(out, source.as_bytes());
    out.extend_from_slice(b",\"stream\":\"syslog\",\"level\":\"");
    out.extend_from_slice(r.level().as_bytes());
    out.extend_from_slice(b"\",\"facility\":\"");
    out.extend_from_slice(r.facility.as_bytes());
    out.extend_from_slice(b"\",\"severity\":\"");
    out.extend_from_slice(r.severity.as_bytes());
    out.push(b'"');
    for (key, value) in [("tag", &r.tag), ("pid", &r.pid)] {
        if let Some(v) = value {
            out.extend_from_slice(format!(",\"{key}\":").as_bytes());
            json_string(out, v.as_bytes());
        }
    }
    out.extend_from_slice(b",\"line\":");
    json_string(out, r.text.as_bytes());
    out.extend_from_slice(b"}\n");
}

/// Milliseconds since the Unix epoch (the ring's time).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

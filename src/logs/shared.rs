//! State of the log thread shared by its hub and its pumps (all on that one thread, so `Cell`
//! and `RefCell` suffice): every program's sinks and ring, the console, the followers.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use tokio::sync::mpsc::Sender;
use tokio::sync::watch;
use tracing::warn;

use super::command::Stream;
use super::console::{format_block, prefix};
use super::dirs::Dirs;
use super::file::FileSink;
use super::frame::Block;
use super::ring::{RING_BYTES, Ring};
use crate::config::{Config, ConsoleMode, LogSettings, StderrMode};
use crate::model::ledger::{Fact, Record};

/// Drain tracking for one run: how many of its pipes are still open.
struct RunDrain {
    open: usize,
    done: watch::Sender<bool>,
}

/// One program's sinks.
pub(super) struct ProgramLog {
    pub(super) name: String,
    pub(super) settings: Cell<LogSettings>,
    pub(super) out_file: RefCell<Option<FileSink>>,
    pub(super) err_file: RefCell<Option<FileSink>>,
    pub(super) ring: RefCell<Ring>,
    pub(super) prefixes: RefCell<(Vec<u8>, Vec<u8>)>,
    runs: RefCell<HashMap<u64, RunDrain>>,
}

/// A run's taps, shared by its two pumps (on the log thread).
pub(super) struct RunTaps {
    watch: RefCell<Option<super::command::LineWatch>>,
    activity: Option<Arc<std::sync::atomic::AtomicU64>>,
}

impl RunTaps {
    pub(super) fn new(taps: super::command::Taps) -> Self {
        RunTaps {
            watch: RefCell::new(taps.watch),
            activity: taps.activity,
        }
    }

    /// Output arrived at `at_ms`: note the time; match the lines while a pattern waits.
    pub(super) fn saw(&self, data: &[u8], at_ms: u64) {
        if let Some(a) = &self.activity {
            a.store(at_ms, std::sync::atomic::Ordering::Relaxed);
        }
        let mut watch = self.watch.borrow_mut();
        let Some(w) = watch.as_ref() else { return };
        let matched = data.split(|&b| b == b'\n').any(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            w.pattern.is_match(line)
        });
        if matched && let Some(w) = watch.take() {
            (w.on_match)();
        }
    }
}

/// A `ctrlinit logs -f` client.
pub(super) struct Follower {
    pub(super) programs: Vec<String>,
    pub(super) tx: Sender<Vec<u8>>,
}

/// State shared by the hub and its pumps (all on the log thread).
pub(super) struct Shared {
    pub(super) console: Sender<super::console::Chunk>,
    /// ctrlinit's own lines go to stderr (a program has its stdout).
    pub(super) own_to_stderr: Cell<bool>,
    pub(super) mode: Cell<ConsoleMode>,
    pub(super) width: Cell<usize>,
    pub(super) dirs: Dirs,
    pub(super) programs: RefCell<HashMap<String, Rc<ProgramLog>>>,
    pub(super) own_file: RefCell<Option<FileSink>>,
    /// The run ledger (`ledger.jsonl`), when it is on.
    pub(super) ledger: RefCell<Option<FileSink>>,
    /// The ledger's state between records: an `end` held back, a last write that failed.
    pub(super) ledger_state: RefCell<LedgerState>,
    /// ctrlinit's own lines on their way to the console.
    pub(super) own_queue: Rc<super::own_queue::OwnQueue>,
    pub(super) followers: RefCell<Vec<Follower>>,
    pub(super) open_pipes: Cell<usize>,
    pub(super) all_closed: watch::Sender<usize>,
    pub(super) config: RefCell<Arc<Config>>,
}

/// See [`Shared::ledger_state`].
#[derive(Debug, Default)]
pub(super) struct LedgerState {
    /// The boot's `end`, written last by [`Shared::close_ledger`].
    end: Option<Record>,
    /// The end was written: nothing more is.
    closed: bool,
    /// The last write failed: the next record begins with a newline.
    torn: bool,
}

impl Shared {
    /// Appends `record` to the ledger: one `write` of one whole line, no buffer kept, so a
    /// SIGKILL of ctrlinit loses nothing written. A record over the line cap is left out.
    ///
    /// The boot's `end` is held back until [`Shared::close_ledger`], so that records still on
    /// their way (a crash report of a program that died just before the stop) come before it;
    /// a record after the end is refused: the end is the last record of a boot.
    pub(super) fn append_ledger(&self, record: &Record) {
        let mut state = self.ledger_state.borrow_mut();
        if state.closed {
            tracing::debug!("a ledger record after the boot's end was left out");
            return;
        }
        if matches!(record.fact, Fact::End { .. }) {
            state.end = Some(record.clone());
            return;
        }
        self.write_ledger(&mut state, record);
    }

    /// Writes the held-back `end` (if any) as the boot's last record; nothing is written after.
    pub(super) fn close_ledger(&self) {
        let mut state = self.ledger_state.borrow_mut();
        if let Some(end) = state.end.take() {
            self.write_ledger(&mut state, &end);
        }
        state.closed = true;
    }

    fn write_ledger(&self, state: &mut LedgerState, record: &Record) {
        let mut ledger = self.ledger.borrow_mut();
        let Some(sink) = ledger.as_mut() else { return };
        let Some(line) = record.to_line() else {
            tracing::debug!("a ledger record over the line cap was left out");
            return;
        };
        // After a failed write (ENOSPC) the file may end in a part of a line: this record
        // starts on a line of its own, so the cut one does not take it along.
        let data = if state.torn {
            format!("\n{line}")
        } else {
            line
        };
        sink.write_block(Block {
            data: data.as_bytes(),
            terminated: true,
        });
        state.torn = sink.is_failing();
    }
}

impl ProgramLog {
    /// A program's sinks, none open yet, with prefixes padded to `width`.
    pub(super) fn new(name: &str, settings: LogSettings, width: usize) -> Self {
        ProgramLog {
            name: name.to_string(),
            settings: Cell::new(settings),
            out_file: RefCell::new(None),
            err_file: RefCell::new(None),
            ring: RefCell::new(Ring::new(RING_BYTES)),
            prefixes: RefCell::new((
                prefix(name, width, Stream::Stdout),
                prefix(name, width, Stream::Stderr),
            )),
            runs: RefCell::new(HashMap::new()),
        }
    }

    /// Starts tracking the drain of run `run`'s `pipes` pipes (two, or one when its stderr is
    /// its stdout).
    pub(super) fn track_run(&self, run: u64, pipes: usize) {
        self.runs.borrow_mut().insert(
            run,
            RunDrain {
                open: pipes,
                done: watch::channel(false).0,
            },
        );
    }

    /// A receiver that turns true once run `run`'s pipes are drained (`None`: already drained
    /// or never tracked).
    pub(super) fn drained(&self, run: u64) -> Option<watch::Receiver<bool>> {
        self.runs.borrow().get(&run).map(|r| r.done.subscribe())
    }
}

impl Shared {
    /// A pump reached end of file.
    pub(super) fn pipe_closed(&self, p: &ProgramLog, run: Option<u64>) {
        self.open_pipes.set(self.open_pipes.get().saturating_sub(1));
        self.all_closed.send_replace(self.open_pipes.get());
        let Some(run) = run else { return };
        let mut runs = p.runs.borrow_mut();
        if let Some(r) = runs.get_mut(&run) {
            r.open = r.open.saturating_sub(1);
            if r.open == 0 {
                r.done.send_replace(true);
                runs.remove(&run);
            }
        }
    }

    /// Delivers a block read at `at_ms` to the files and the ring; appends its console and
    /// follower forms.
    pub(super) fn deliver(
        &self,
        p: &ProgramLog,
        stream: Stream,
        block: Block<'_>,
        at_ms: u64,
        console: &mut Vec<u8>,
        follow: &mut Vec<u8>,
    ) {
        let settings = p.settings.get();
        let separate = stream == Stream::Stderr && settings.stderr == StderrMode::Separate;
        let file = if separate { &p.err_file } else { &p.out_file };
        if let Some(f) = file.borrow_mut().as_mut() {
            f.write_block(block);
        }
        p.ring
            .borrow_mut()
            .push_block(stream, block.data, block.terminated, at_ms);
        let prefixes = p.prefixes.borrow();
        let prefix = if stream == Stream::Stderr {
            &prefixes.1
        } else {
            &prefixes.0
        };
        if settings.console {
            format_block(self.mode.get(), prefix, &p.name, stream, block, console);
        }
        if !self.followers.borrow().is_empty() {
            format_block(ConsoleMode::Prefix, prefix, &p.name, stream, block, follow);
        }
    }

    /// Sends a pump's formatted output to its followers (never waiting for them).
    pub(super) fn to_followers(&self, program: &str, buf: &[u8]) {
        let mut followers = self.followers.borrow_mut();
        followers.retain(|f| !f.tx.is_closed());
        for f in followers.iter() {
            if f.programs.is_empty() || f.programs.iter().any(|n| n == program) {
                let _ = f.tx.try_send(buf.to_vec());
            }
        }
    }
}

/// Opens program `p`'s log files as its settings ask (none without a log directory).
pub(super) fn open_files(shared: &Shared, p: &ProgramLog) {
    let settings = p.settings.get();
    let open = |suffix: &str| -> Option<FileSink> {
        // No log directory (a default one that could not be used): the console only.
        let dir = shared.dirs.log_dir.as_ref()?;
        let path = dir.join(format!("{}{suffix}", p.name));
        FileSink::open(&path, &settings, shared.dirs.log_mode)
            .map_err(|e| {
                warn!(
                    "failed to open {}: {e}; {} gets no log file",
                    path.display(),
                    p.name
                )
            })
            .ok()
    };
    let (out, err) = match (settings.file, settings.stderr) {
        (false, _) => (None, None),
        (true, StderrMode::Merge | StderrMode::Stdout) => (open(".log"), None),
        (true, StderrMode::Separate) => (open(".log"), open(".err.log")),
    };
    *p.out_file.borrow_mut() = out;
    *p.err_file.borrow_mut() = err;
}

//! The log thread: routes each program's pipes to its sinks and ring (the pumps), ctrlinit's own
//! lines to the console and its file, answers `logs`, and once a crashed run's pipes are drained
//! hands its last lines to [`crate::crash`] for the report.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc::{Sender, UnboundedReceiver};
use tokio::sync::watch;
use tracing::{Level, warn};

use super::command::{Command, Stream};
use super::console::{self, json_line, prefix};
use super::dirs::Dirs;
use super::file::FileSink;
use super::frame::Block;
use super::own_queue::OwnQueue;
use super::pump;
use super::shared::{Follower, ProgramLog, RunTaps, Shared};
use crate::config::{Config, ConsoleMode, LogSettings};
use crate::crash;

/// How long shutdown waits for pipes to reach end of file (a stray may hold one open).
const DRAIN_AT_EXIT: Duration = Duration::from_secs(2);

/// How long the exit waits for the console to take the last lines.
const CONSOLE_AT_EXIT: Duration = Duration::from_secs(1);

/// Runs the log thread until [`Command::Shutdown`].
pub(super) fn run(
    config: Arc<Config>,
    dirs: Dirs,
    ledger: Option<FileSink>,
    rx: UnboundedReceiver<Command>,
    syslog: Option<(super::syslog::Sockets, Arc<super::syslog::SyslogCounters>)>,
) {
    crate::sys::init::lower_thread_priority();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .expect("failed to build the log thread's runtime");
    let local = tokio::task::LocalSet::new();
    let (console, console_drained) = console::start();
    local.block_on(&runtime, serve(config, dirs, ledger, console, rx, syslog));
    // Tasks still pending (a pump on a pipe a stray holds) keep a console sender: drop them,
    // so the console thread sees the channel close, drains, and ends.
    drop(local);
    drop(runtime);
    // Nothing is said when it times out: stderr is most likely the same stalled pipe.
    console_drained.wait(CONSOLE_AT_EXIT);
}

async fn serve(
    config: Arc<Config>,
    dirs: Dirs,
    ledger: Option<FileSink>,
    console: Sender<console::Chunk>,
    mut rx: UnboundedReceiver<Command>,
    syslog: Option<(super::syslog::Sockets, Arc<super::syslog::SyslogCounters>)>,
) {
    let shared = shared_state(&config, dirs, ledger, console);
    configure(&shared, config);
    tokio::task::spawn_local(Rc::clone(&shared.own_queue).forward(shared.console.clone()));
    let intake = syslog.map(|(sockets, counters)| super::syslog::start(&shared, sockets, counters));
    let mut reports: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    while let Some(cmd) = rx.recv().await {
        match cmd {
            Command::Configure(config) => configure(&shared, config),
            Command::SyslogOwners(owners) => {
                if let Some(i) = &intake {
                    i.set_owners(owners);
                }
            }
            Command::Attach {
                program,
                run,
                stdout,
                stderr,
                taps,
            } => attach(&shared, &program, run, stdout, stderr, taps),
            Command::Own { level, message, at } => own_line(&shared, level, &message, at),
            Command::Reopen => reopen(&shared),
            Command::Ledger(record) => shared.append_ledger(&record),
            Command::Crash(info) => {
                reports.retain(|r| !r.is_finished());
                reports.push(tokio::task::spawn_local(crash_report(
                    Rc::clone(&shared),
                    info,
                )));
            }
            Command::Tail {
                programs,
                lines,
                by_program,
                reply,
                follow,
            } => {
                let _ = reply.send(tail(&shared, &programs, lines, by_program));
                if let Some(tx) = follow {
                    shared
                        .followers
                        .borrow_mut()
                        .push(Follower { programs, tx });
                }
            }
            Command::Shutdown => break,
        }
    }
    // Drain what programs wrote before they died (a stray holding a pipe bounds the wait), then
    // finish the crash reports under way (each bounded by its own drain wait).
    let mut closed = shared.all_closed.subscribe();
    let drained = async {
        let _ = closed.wait_for(|_| shared.open_pipes.get() == 0).await;
        for report in reports {
            let _ = report.await;
        }
        // The last of ctrlinit's own lines (the exit status) reach the console too.
        shared.own_queue.flushed().await;
    };
    let _ = tokio::time::timeout(DRAIN_AT_EXIT, drained).await;
    // After the crash reports' records, whether they finished or not: the end is the last.
    shared.close_ledger();
    // Pending own lines sent before Shutdown are handled above; flush by dropping.
    shared.own_file.borrow_mut().take();
}

/// The log thread's state: the sinks, with ctrlinit's own file opened (its lines carry their
/// timestamp and level already) and the ledger as `logs::ledger` opened it.
fn shared_state(
    config: &Arc<Config>,
    dirs: Dirs,
    ledger: Option<FileSink>,
    console: Sender<console::Chunk>,
) -> Rc<Shared> {
    let own_file = dirs.log_dir.as_ref().and_then(|dir| {
        let own_path = dir.join("ctrlinit.log");
        FileSink::open(&own_path, &LogSettings::default(), dirs.log_mode)
            .map_err(|e| eprintln!("ctrlinit: cannot open {}: {e}", own_path.display()))
            .ok()
    });
    Rc::new(Shared {
        console,
        own_to_stderr: Cell::new(false),
        mode: Cell::new(config.init.console),
        width: Cell::new(8),
        dirs,
        programs: RefCell::new(HashMap::new()),
        own_file: RefCell::new(own_file),
        ledger: RefCell::new(ledger),
        ledger_state: RefCell::default(),
        own_queue: Rc::new(OwnQueue::new()),
        followers: RefCell::new(Vec::new()),
        open_pipes: Cell::new(0),
        all_closed: watch::channel(0).0,
        config: RefCell::new(Arc::clone(config)),
    })
}

fn configure(shared: &Rc<Shared>, config: Arc<Config>) {
    shared.mode.set(config.init.console);
    shared
        .own_to_stderr
        .set(crate::config::InitSettings::own_lines_to_stderr(
            &config.programs,
        ));
    let width = config
        .programs
        .iter()
        .map(|p| p.name.len())
        .chain(std::iter::once("ctrlinit".len()))
        .max()
        .unwrap_or(8);
    shared.width.set(width);
    let mut programs = shared.programs.borrow_mut();
    for spec in &config.programs {
        let prefixes = (
            prefix(&spec.name, width, Stream::Stdout),
            prefix(&spec.name, width, Stream::Stderr),
        );
        match programs.get(&spec.name) {
            Some(p) => {
                *p.prefixes.borrow_mut() = prefixes;
                if p.settings.get() != spec.log {
                    p.settings.set(spec.log);
                    super::shared::open_files(shared, p);
                }
            }
            None => {
                let p = Rc::new(ProgramLog::new(&spec.name, spec.log, width));
                super::shared::open_files(shared, &p);
                programs.insert(spec.name.clone(), p);
            }
        }
    }
    *shared.config.borrow_mut() = config;
}

fn program_log(shared: &Rc<Shared>, name: &str) -> Rc<ProgramLog> {
    if let Some(p) = shared.programs.borrow().get(name) {
        return Rc::clone(p);
    }
    // Not in the config (cannot happen in practice): log with defaults rather than lose lines.
    let width = shared.width.get();
    let p = Rc::new(ProgramLog::new(name, LogSettings::default(), width));
    shared
        .programs
        .borrow_mut()
        .insert(name.to_string(), Rc::clone(&p));
    p
}

fn attach(
    shared: &Rc<Shared>,
    program: &str,
    run: Option<u64>,
    stdout: std::os::fd::OwnedFd,
    stderr: Option<std::os::fd::OwnedFd>,
    taps: super::command::Taps,
) {
    let p = program_log(shared, program);
    let pipes = [
        Some((stdout, Stream::Stdout)),
        stderr.map(|e| (e, Stream::Stderr)),
    ];
    if let Some(run) = run {
        p.track_run(run, pipes.iter().flatten().count());
    }
    // One set of taps for both pipes: a readiness line may come on either.
    let taps = Rc::new(RunTaps::new(taps));
    for (fd, stream) in pipes.into_iter().flatten() {
        shared.open_pipes.set(shared.open_pipes.get() + 1);
        tokio::task::spawn_local(pump::pump(
            Rc::clone(shared),
            Rc::clone(&p),
            stream,
            run,
            fd,
            Rc::clone(&taps),
        ));
    }
}

fn own_line(shared: &Shared, level: Level, message: &str, at: SystemTime) {
    let ts = humantime::format_rfc3339_millis(at).to_string();
    if let Some(f) = shared.own_file.borrow_mut().as_mut() {
        // Every line of a multi-line message (a refused reload lists its errors) gets the
        // timestamp and level, so the file stays one record per line.
        let mut text = String::with_capacity(message.len() + 32);
        for line in message.lines() {
            text.push_str(&format!("{ts} {:<5} {line}\n", level.as_str()));
        }
        f.write_block(Block {
            data: text.as_bytes(),
            terminated: true,
        });
    }
    // `console = "off"`: the file has it, the console says nothing of ctrlinit's own.
    if shared.mode.get() == ConsoleMode::Off {
        return;
    }
    let mut out = Vec::with_capacity(message.len() + 32);
    let dropped = shared.own_queue.dropped();
    let mut lines = Vec::new();
    if dropped > 0 {
        lines.push((
            Level::WARN,
            format!(
                "({dropped} lines of ctrlinit's own log were dropped: the console was blocked)"
            ),
        ));
    }
    lines.push((level, message.to_string()));
    for (level, message) in &lines {
        match shared.mode.get() {
            ConsoleMode::Json => {
                let lvl = level.as_str().to_ascii_lowercase();
                json_line(
                    &mut out,
                    &ts,
                    "ctrlinit",
                    "log",
                    Some(&lvl),
                    message.as_bytes(),
                );
            }
            mode => {
                for (n, line) in message.lines().enumerate() {
                    if mode != ConsoleMode::Plain {
                        out.extend_from_slice(&prefix("ctrlinit", shared.width.get(), Stream::Log));
                    }
                    // The level leads the record; its continuation lines (a fix) follow it.
                    if *level <= Level::WARN && n == 0 {
                        out.extend_from_slice(level.as_str().as_bytes());
                        out.push(b' ');
                    }
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                }
            }
        }
    }
    // Never wait for the console here: the queue does, and drops (and counts) only when full.
    shared.own_queue.push(console::Chunk {
        stderr: shared.own_to_stderr.get(),
        bytes: out,
    });
}

fn reopen(shared: &Shared) {
    for p in shared.programs.borrow().values() {
        for f in [&p.out_file, &p.err_file] {
            if let Some(f) = f.borrow_mut().as_mut() {
                f.reopen();
            }
        }
    }
    for f in [&shared.own_file, &shared.ledger] {
        if let Some(f) = f.borrow_mut().as_mut() {
            f.reopen();
        }
    }
    tracing::info!("reopened the log files");
}

/// The last `lines` lines of each program, formatted as on the console: merged across programs
/// in the order they were read (`by_program`: each program's lines together, by name).
fn tail(shared: &Shared, programs: &[String], lines: usize, by_program: bool) -> Vec<u8> {
    let all = shared.programs.borrow();
    let mut names: Vec<&String> = if programs.is_empty() {
        all.keys().collect()
    } else {
        programs.iter().filter(|n| all.contains_key(*n)).collect()
    };
    names.sort();
    // (time, program's place by name, line's place in its program): a stable merge.
    let mut picked: Vec<(u64, usize, usize, Stream, Vec<u8>)> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let ring = all[*name].ring.borrow();
        for (n, (at, stream, line)) in ring.last_timed_lines(lines).into_iter().enumerate() {
            let at = if by_program { 0 } else { at };
            picked.push((at, k, n, stream, line));
        }
    }
    picked.sort_by_key(|&(at, k, n, _, _)| (at, k, n));
    let mut out = Vec::new();
    for (_, k, _, stream, line) in picked {
        let prefixes = all[names[k]].prefixes.borrow();
        out.extend_from_slice(if stream == Stream::Stderr {
            &prefixes.1
        } else {
            &prefixes.0
        });
        out.extend_from_slice(&line);
        out.push(b'\n');
    }
    out
}

/// Waits (bounded) for the crashed run's pipes to drain, then writes the report off the
/// supervisor's thread.
async fn crash_report(shared: Rc<Shared>, info: Box<crash::CrashInfo>) {
    // No crash directory (a default one that could not be used): no reports.
    let Some(crash_dir) = shared.dirs.crash_dir.clone() else {
        return;
    };
    // The restart that follows a crash needs the CPU first (on a small machine the report's
    // file work would compete with the new process's exec): the report waits a moment.
    tokio::time::sleep(crash::REPORT_DELAY).await;
    let p = program_log(&shared, &info.program);
    if let Some(mut done) = p.drained(info.run) {
        let _ = tokio::time::timeout(crash::DRAIN_WAIT, done.wait_for(|d| *d)).await;
    }
    let last_lines: Vec<String> = p
        .ring
        .borrow()
        .last_lines(crash::REPORT_LINES)
        .into_iter()
        .map(|(stream, line)| {
            let mark = if stream == Stream::Stderr { "! " } else { "| " };
            format!("{mark}{}", String::from_utf8_lossy(&line))
        })
        .collect();
    let max_size = shared.config.borrow().init.crash_max_size;
    match crash::write_report(
        &crash_dir,
        &info,
        &last_lines,
        max_size,
        shared.dirs.crash_mode,
    ) {
        Ok(report) => {
            tracing::warn!(
                "{}: pid {} {}; crash report {}",
                info.program,
                info.pid,
                info.exit,
                report.report.display()
            );
            let name = report.report.file_name().unwrap_or_default();
            shared.append_ledger(&super::ledger::record(crate::model::ledger::Fact::Crash {
                program: info.program.clone(),
                report: name.to_string_lossy().into_owned(),
            }));
        }
        Err(e) => warn!(
            "{}: failed to write a crash report in {}: {e}",
            info.program,
            crash_dir.display()
        ),
    }
}

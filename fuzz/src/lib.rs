//! The checks behind every fuzz target, shared with `tests/fuzz_regressions.rs` (which includes
//! this file with `#[path]`), so a saved crashing input is replayed through exactly the code the
//! fuzzer ran.
//!
//! Each `check_*` function takes the raw fuzzer input and panics when ctrlinit misbehaves: a panic
//! inside ctrlinit, a broken invariant, or a value accepted by the loader that would make the
//! supervisor panic later. Returning normally means the input was handled (an `Ok` or an `Err`).
//!
//! Only `std`, `ctrlinit`, `tempfile` and `tokio` are used, because the regression test compiles
//! this file with the root package's dependencies.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ctrlinit::api::protocol;
use ctrlinit::config::{self, Config, LoadOptions};
use ctrlinit::logs::frame::{Framer, MAX_LINE};

// ---------------------------------------------------------------------------------------------
// Config loader
// ---------------------------------------------------------------------------------------------

/// A line of its own that splits one fuzz input into several files of one conf.d directory, so
/// the checks that span files (one `[init]`, unique names, dependencies, cycles) are fuzzed too.
pub const FILE_SEPARATOR: &[u8] = b"\n#@file\n";

/// A line of its own that makes the load run with a `--` command (the `main` program).
pub const MAIN_MARKER: &[u8] = b"#@main\n";

/// Most files one input is split into.
const MAX_FILES: usize = 8;

/// The environment the config is interpolated from.
pub fn fuzz_env() -> HashMap<String, String> {
    [
        ("PORT", "9000"),
        ("EMPTY", ""),
        ("NAME", "api"),
        ("DOLLAR", "$"),
        ("NESTED", "${PORT}"),
        ("HOME", "/root"),
        ("BIG", "18446744073709551615"),
        ("NEG", "-1"),
        ("DUR", "5s"),
        ("SIG", "SIGHUP"),
        ("TRUE", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A conf.d directory reused for every input of one process (writing a few small files costs
/// microseconds; creating a directory per input would cost more).
pub struct ConfigDir {
    /// The directory (conf.d files, and `log/`, `crash/` for the run target).
    pub dir: tempfile::TempDir,
    written: Vec<PathBuf>,
    env: HashMap<String, String>,
}

impl ConfigDir {
    /// A fresh directory, in /dev/shm when there is one (faster than a disk).
    pub fn new() -> Self {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::Builder::new()
                .prefix("ctrlinit-fuzz-")
                .tempdir_in(shm)
        } else {
            tempfile::Builder::new().prefix("ctrlinit-fuzz-").tempdir()
        }
        .expect("create the fuzz conf.d directory");
        ConfigDir {
            dir,
            written: Vec::new(),
            env: fuzz_env(),
        }
    }

    /// Replaces the directory's files by the pieces of `data` and loads it.
    pub fn load(&mut self, data: &[u8]) -> Result<Config, config::ConfigErrors> {
        for f in self.written.drain(..) {
            let _ = std::fs::remove_file(f);
        }
        let (main, data) = match data.strip_prefix(MAIN_MARKER) {
            Some(rest) => (true, rest),
            None => (false, data),
        };
        for (i, piece) in split(data, FILE_SEPARATOR, MAX_FILES)
            .into_iter()
            .enumerate()
        {
            let path = self.dir.path().join(format!("{i:02}-fuzz.toml"));
            std::fs::write(&path, piece).expect("write a fuzz config file");
            self.written.push(path);
        }
        config::load_dir(&LoadOptions {
            dir: self.dir.path().to_path_buf(),
            main_command: main.then(|| vec!["/bin/true".to_string()]),
            env: Some(self.env.clone()),
        })
    }
}

impl Default for ConfigDir {
    fn default() -> Self {
        Self::new()
    }
}

/// `data` split at `sep`, at most `max` pieces (the last keeps the rest).
fn split<'a>(data: &'a [u8], sep: &[u8], max: usize) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while out.len() + 1 < max {
        match rest.windows(sep.len()).position(|w| w == sep) {
            Some(at) => {
                out.push(&rest[..at]);
                rest = &rest[at + sep.len()..];
            }
            None => break,
        }
    }
    out.push(rest);
    out
}

/// Target `config_toml`: the input as TOML text (inputs that are not UTF-8 are skipped: the
/// `config_bytes` target covers them).
pub fn check_config_toml(dir: &mut ConfigDir, data: &[u8]) {
    if std::str::from_utf8(data).is_err() {
        return;
    }
    check_config(dir, data);
}

/// Target `config_bytes`: the input as raw bytes (not UTF-8, NULs, BOMs, CRs...).
pub fn check_config_bytes(dir: &mut ConfigDir, data: &[u8]) {
    check_config(dir, data);
}

fn check_config(dir: &mut ConfigDir, data: &[u8]) {
    match dir.load(data) {
        Ok(config) => check_loaded(&config),
        Err(errors) => {
            assert!(
                !errors.errors.is_empty(),
                "load_dir returned Err with no error in it"
            );
            // The messages must render (they are printed by `ctrlinit check`).
            let _ = errors.to_string();
        }
    }
}

/// A config the loader accepted must be one the supervisor can run without panicking: each
/// duration can be added to `Instant::now()` (the supervisor computes deadlines as
/// `now + spec.ready_timeout`, `now + spec.stop_timeout`, `now + init.stop_timeout`, and timers
/// as `now + delay`), and the backoff growth `delay.mul_f64(factor)` cannot overflow a
/// `Duration` (it panics when it does).
pub fn check_loaded(config: &Config) {
    let now = Instant::now();
    let fits = |what: &str, who: &str, d: Duration| {
        assert!(
            now.checked_add(d).is_some(),
            "config accepted {who}.{what} = {d:?}, but `Instant::now() + {what}` overflows \
             (the supervisor would panic)"
        );
    };
    fits("stop_timeout", "init", config.init.stop_timeout);
    assert!(
        !config.programs.is_empty(),
        "a config with no program was accepted"
    );
    for p in &config.programs {
        assert!(
            !p.command.is_empty(),
            "program {:?} has an empty command",
            p.name
        );
        assert!(
            !p.name.is_empty()
                && p.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b)),
            "invalid program name {:?} accepted",
            p.name
        );
        let who = format!("program.{}", p.name);
        fits("ready_timeout", &who, p.ready_timeout);
        fits("stop_timeout", &who, p.stop_timeout);
        fits("restart_window", &who, p.restart_window);
        fits("backoff.initial", &who, p.backoff.initial);
        fits("backoff.max", &who, p.backoff.max);
        if let Some(ready) = &p.ready {
            fits("ready.interval", &who, ready.interval);
        }
        assert!(
            p.backoff.factor.is_finite() && p.backoff.factor >= 1.0,
            "{who}.backoff.factor = {} accepted",
            p.backoff.factor
        );
        assert!(
            p.backoff.initial <= p.backoff.max,
            "{who}.backoff.initial > backoff.max accepted"
        );
        // policy.rs: `delay.mul_f64(backoff.factor)` with delay <= backoff.max.
        let grown = p.backoff.max.as_secs_f64() * p.backoff.factor;
        assert!(
            Duration::try_from_secs_f64(grown).is_ok(),
            "config accepted {who}.backoff.max = {:?} with factor {}, but \
             `delay.mul_f64(factor)` overflows a Duration (the supervisor would panic at the \
             first restart that reaches max)",
            p.backoff.max,
            p.backoff.factor
        );
        for d in &p.depends_on {
            assert!(
                config.program(&d.name).is_some(),
                "{who} depends on {:?}, which is not defined",
                d.name
            );
            assert_ne!(d.name, p.name, "{who} depends on itself");
        }
    }
    let mut names: Vec<&str> = config.programs.iter().map(|p| p.name.as_str()).collect();
    let n = names.len();
    names.dedup();
    assert_eq!(
        n,
        names.len(),
        "duplicate or unsorted program names accepted"
    );
}

// ---------------------------------------------------------------------------------------------
// Control protocol
// ---------------------------------------------------------------------------------------------

/// Target `protocol`: `decode_request` on arbitrary bytes never panics, and a request it accepts
/// survives an encode/decode round trip unchanged.
pub fn check_protocol(data: &[u8]) {
    let Ok(req) = protocol::decode_request(data) else {
        return;
    };
    let line = protocol::encode(&req);
    assert!(
        line.ends_with(b"\n"),
        "encoded request does not end with a newline"
    );
    let again = protocol::decode_request(&line[..line.len() - 1])
        .unwrap_or_else(|e| panic!("re-decoding the encoded request {req:?} failed: {e}"));
    assert_eq!(again, req, "request changed in an encode/decode round trip");
}

// ---------------------------------------------------------------------------------------------
// Value parsers and interpolation
// ---------------------------------------------------------------------------------------------

/// Target `units`: `interpolate`, `parse_size`, `parse_duration`, `parse_signal` on arbitrary
/// strings; and properties:
/// - `interpolate` of a string with every `$` doubled gives the string back;
/// - a string without `$` is returned unchanged;
/// - a size printed as a plain number parses back to itself;
/// - a parsed signal's name parses back to the same signal.
pub fn check_units(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let env = fuzz_env();
    let lookup = |k: &str| env.get(k).cloned();
    let _ = config::interpolate(s, &lookup);
    let escaped = s.replace('$', "$$");
    assert_eq!(
        config::interpolate(&escaped, &lookup).as_deref(),
        Ok(s),
        "`$$` did not turn back into `$`"
    );
    if !s.contains('$') {
        assert_eq!(config::interpolate(s, &lookup).as_deref(), Ok(s));
    }

    if let Ok(n) = config::parse_size(s)
        && n < (1 << 53)
    {
        assert_eq!(
            config::parse_size(&n.to_string()),
            Ok(n),
            "size {n} does not round trip"
        );
    }
    let _ = ctrlinit::model::durations::parse_duration(s);
    if let Ok(sig) = ctrlinit::model::signals::parse_signal(s) {
        assert_eq!(
            ctrlinit::model::signals::parse_signal(sig.as_str()),
            Ok(sig)
        );
        let _ = ctrlinit::model::signals::signal_name(sig as i32);
    }
    if data.len() >= 4 {
        let n = i32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        let _ = ctrlinit::model::signals::signal_name(n);
    }
}

// ---------------------------------------------------------------------------------------------
// Log line framing
// ---------------------------------------------------------------------------------------------

/// Decodes a framer fuzz input into the stream a program writes and the reads it arrives in.
///
/// The input is a little program of operations, so a short input can describe lines longer than
/// [`MAX_LINE`] and put read boundaries anywhere:
/// - `0, n, bytes[n]`: append `n` literal bytes;
/// - `1, b, lo, hi`: append byte `b` repeated `(lo | hi << 8) * 4` times (up to 256 KiB);
/// - `2`: end the current read here;
/// - `3`: append a newline;
/// - `4, lo, hi`: append `lo | hi << 8` bytes of `x` and a newline (a sized line);
/// - `5, k`: append a line of exactly `MAX_LINE + k - 128` bytes of `y` (around the limit), no
///   newline;
///   anything else: append the byte itself.
///
/// The stream is capped at 4 MiB.
pub fn decode_framer_input(data: &[u8]) -> Vec<Vec<u8>> {
    const CAP: usize = 4 << 20;
    let mut reads: Vec<Vec<u8>> = vec![Vec::new()];
    let mut total = 0usize;
    let mut i = 0;
    let next = |i: &mut usize| -> u8 {
        let b = data.get(*i).copied().unwrap_or(0);
        *i += 1;
        b
    };
    while i < data.len() && total < CAP {
        let op = next(&mut i);
        if op == 2 {
            reads.push(Vec::new());
            continue;
        }
        let cur = reads.last_mut().expect("one read at least");
        let before = cur.len();
        match op {
            0 => {
                let n = next(&mut i) as usize;
                let end = (i + n).min(data.len());
                cur.extend_from_slice(&data[i.min(data.len())..end]);
                i += n;
            }
            1 => {
                let b = next(&mut i);
                let n = (next(&mut i) as usize | (next(&mut i) as usize) << 8) * 4;
                cur.resize(before + n, b);
            }
            3 => cur.push(b'\n'),
            4 => {
                let n = next(&mut i) as usize | (next(&mut i) as usize) << 8;
                cur.resize(before + n, b'x');
                cur.push(b'\n');
            }
            5 => {
                let k = next(&mut i) as usize;
                cur.resize(before + MAX_LINE + k - 128, b'y');
            }
            b => cur.push(b),
        }
        total += cur.len() - before;
    }
    reads.retain(|r| !r.is_empty());
    reads
}

/// What the sinks must see for `stream`: its lines in order, without their `\n`, each line longer
/// than [`MAX_LINE`] cut into pieces of `MAX_LINE` bytes; an unterminated last line counts as a
/// line. This does not depend on how the stream was split into reads.
pub fn expected_lines(stream: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if stream.is_empty() {
        return out;
    }
    let body = stream.strip_suffix(b"\n").unwrap_or(stream);
    for line in body.split(|&b| b == b'\n') {
        if line.is_empty() {
            out.push(Vec::new());
        }
        for piece in line.chunks(MAX_LINE) {
            out.push(piece.to_vec());
        }
    }
    out
}

/// Feeds `reads` through a [`Framer`] as the pump does (a read fills at most the spare space; the
/// rest of a read arrives in the next one) and returns the lines the sinks would get.
pub fn frame(reads: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut f = Framer::new();
    let mut out: Vec<Vec<u8>> = Vec::new();
    for read in reads {
        let mut rest: &[u8] = read;
        while !rest.is_empty() {
            let spare = f.spare();
            // An empty spare slice would make the pump's read return 0, taken as end of file.
            assert!(
                !spare.is_empty(),
                "Framer::spare() is empty with {} bytes pending",
                rest.len()
            );
            let n = rest.len().min(spare.len());
            spare[..n].copy_from_slice(&rest[..n]);
            f.filled(n);
            rest = &rest[n..];
            while let Some(block) = f.next_block() {
                check_block(&block);
                out.extend(block.lines().map(<[u8]>::to_vec));
            }
        }
    }
    if let Some(block) = f.finish() {
        assert!(
            !block.terminated,
            "the block at end of file claims a newline"
        );
        out.extend(block.lines().map(<[u8]>::to_vec));
    }
    assert_eq!(f.pending(), 0, "bytes pending after finish()");
    out
}

fn check_block(block: &ctrlinit::logs::frame::Block<'_>) {
    assert!(!block.data.is_empty(), "empty block");
    if block.terminated {
        assert_eq!(
            block.data.last(),
            Some(&b'\n'),
            "terminated block without a final newline"
        );
        assert_eq!(
            block.line_count(),
            block.lines().count(),
            "line_count disagrees with lines()"
        );
    } else {
        assert!(
            !block.data.contains(&b'\n'),
            "unterminated block holds a newline"
        );
        assert!(
            block.data.len() <= MAX_LINE,
            "unterminated block longer than MAX_LINE"
        );
        assert_eq!(block.line_count(), 1);
    }
    for line in block.lines() {
        assert!(
            line.len() <= MAX_LINE,
            "a line of {} bytes passed MAX_LINE",
            line.len()
        );
    }
}

/// Target `framer`: no byte lost, duplicated or reordered, and the same lines whatever the reads.
pub fn check_framer(data: &[u8]) {
    let reads = decode_framer_input(data);
    let stream: Vec<u8> = reads.concat();
    let got = frame(&reads);
    // Every byte but the newlines, in order, exactly once.
    let content: Vec<u8> = stream.iter().copied().filter(|&b| b != b'\n').collect();
    let got_content: Vec<u8> = got.concat();
    assert!(
        content == got_content,
        "bytes lost or duplicated: {} content bytes written, {} delivered",
        content.len(),
        got_content.len()
    );
    let want = expected_lines(&stream);
    if got != want {
        let first = got
            .iter()
            .zip(&want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        let show = |v: &[Vec<u8>]| {
            v.iter()
                .skip(first.saturating_sub(1))
                .take(4)
                .map(|l| format!("{} bytes", l.len()))
                .collect::<Vec<_>>()
        };
        panic!(
            "line framing depends on the read boundaries: {} lines expected, {} delivered; \
             from line {first}: expected {:?}, delivered {:?}; read sizes {:?}",
            want.len(),
            got.len(),
            show(&want),
            show(&got),
            reads.iter().map(Vec::len).collect::<Vec<_>>()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Config, run, log path
// ---------------------------------------------------------------------------------------------

/// Target `run_config`: a config the loader accepts, driven as a start drives it: the pure core
/// through boot, spawns, exits, deadlines and a shutdown; and the log thread with every
/// program's name and log settings (prefixes, a follower's formatting, files, rotation, the
/// ring), lines written and read back. The existing targets stopped at the loader, and a name the
/// loader accepted once panicked the log thread.
pub fn check_run(dir: &mut ConfigDir, data: &[u8]) {
    let Ok(config) = dir.load(data) else {
        return;
    };
    check_loaded(&config);
    drive_core(&config);
    drive_logs(dir, config);
}

/// Boot, spawn every program, make each exit, let every deadline pass, shut down: the core must
/// end with one `Exit`.
fn drive_core(config: &Config) {
    use ctrlinit::model::Exit;
    use ctrlinit::supervisor::{Action, Core, Input};
    let mut now = Instant::now();
    let mut core = Core::new(config, now);
    let mut next_pid = 1000;
    let mut live: Vec<i32> = Vec::new();
    let mut exited = false;
    let mut steps = 0;
    let mut feed = |core: &mut Core, input: Input, now: Instant, live: &mut Vec<i32>| -> bool {
        let mut queue = vec![input];
        let mut exit = false;
        while let Some(input) = queue.pop() {
            steps += 1;
            assert!(steps < 100_000, "the core did not settle");
            for action in core.handle(input, now) {
                match action {
                    Action::Spawn { id } => {
                        next_pid += 1;
                        live.push(next_pid);
                        queue.push(Input::Spawned { id, pid: next_pid });
                    }
                    Action::RunFinish { id, .. } => queue.push(Input::FinishFailed { id }),
                    Action::Exit { .. } => exit = true,
                    _ => {}
                }
            }
        }
        exit
    };
    exited |= feed(&mut core, Input::Boot, now, &mut live);
    for round in 0..3 {
        for pid in std::mem::take(&mut live) {
            let exit = if round == 0 {
                Exit::Code(1)
            } else {
                Exit::Code(0)
            };
            let reaped = Input::Reaped {
                pid,
                exit,
                group_empty: true,
                oom_killed: false,
            };
            exited |= feed(&mut core, reaped, now, &mut live);
        }
        now += Duration::from_secs(3600);
        exited |= feed(&mut core, Input::Tick, now, &mut live);
    }
    let reason = "fuzz".to_string();
    exited |= feed(
        &mut core,
        Input::Shutdown {
            reason,
            signal: None,
        },
        now,
        &mut live,
    );
    for pid in std::mem::take(&mut live) {
        let reaped = Input::Reaped {
            pid,
            exit: Exit::Signal {
                sig: 15,
                core_dumped: false,
            },
            group_empty: true,
            oom_killed: false,
        };
        exited |= feed(&mut core, reaped, now, &mut live);
    }
    now += Duration::from_secs(86_400);
    exited |= feed(&mut core, Input::Tick, now, &mut live);
    assert!(exited, "the core never decided to exit after a shutdown");
}

/// The log thread with this config: each program's output through its sinks and a follower.
fn drive_logs(dir: &ConfigDir, mut config: Config) {
    use std::io::Write;
    use std::sync::Arc;

    use ctrlinit::config::ConsoleMode;
    use ctrlinit::logs::{Command, Logs};
    // Nothing of the fuzzing reaches the real console (a follower formats as the console does).
    config.init.console = ConsoleMode::Off;
    config.init.log_dir = dir.dir.path().join("log");
    config.init.crash_dir = dir.dir.path().join("crash");
    let names: Vec<String> = config
        .programs
        .iter()
        .take(8)
        .map(|p| p.name.clone())
        .collect();
    let Ok(logs) = Logs::start(Arc::new(config), |_| {}) else {
        return;
    };
    let (tx, mut follow) = tokio::sync::mpsc::channel::<Vec<u8>>(1024);
    let (nothing, _) = tokio::sync::oneshot::channel();
    logs.send(Command::Tail {
        programs: Vec::new(),
        lines: 0,
        by_program: false,
        reply: nothing,
        follow: Some(tx),
    });
    for name in &names {
        let Ok(pipes) = ctrlinit::process::output_pipes(false) else {
            continue;
        };
        logs.send(Command::Attach {
            program: name.clone(),
            run: Some(1),
            stdout: pipes.stdout_r,
            stderr: pipes.stderr_r,
            taps: Default::default(),
        });
        let mut out = std::fs::File::from(pipes.stdout_w);
        let mut err = std::fs::File::from(pipes.stderr_w);
        let _ = out.write_all(b"first line\nsecond line\n");
        let _ = out.write_all(&vec![b'x'; 70_000]);
        let _ = out.write_all(b"\nlast, unterminated");
        let _ = err.write_all(b"an error line\n");
    }
    let (reply, tail) = tokio::sync::oneshot::channel();
    logs.send(Command::Tail {
        programs: Vec::new(),
        lines: 10,
        by_program: false,
        reply,
        follow: None,
    });
    let _ = tail.blocking_recv();
    logs.shutdown();
    let mut followed = Vec::new();
    while let Ok(chunk) = follow.try_recv() {
        followed.extend_from_slice(&chunk);
    }
    let followed = String::from_utf8_lossy(&followed);
    for name in &names {
        assert!(
            followed
                .lines()
                .any(|l| l.starts_with(name.as_str()) && l.ends_with("| first line")),
            "{name}'s lines never reached the follower"
        );
    }
}

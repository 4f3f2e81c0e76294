//! Client subcommands: talk to the running init and print what it says.
//!
//! Exit statuses follow supervisorctl's LSB-style habit: 0 success, 1 failure (or a `--wait`
//! that timed out), 2 usage or unknown program, 3 a program not in its wanted state (`status`),
//! 4 the init cannot be reached. `health` only ever exits 0 or 1 (Docker reserves 2).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::durations::short_duration;
use crate::api::client::{Client, ClientError};
use crate::model::State;
use crate::model::protocol::{Condition, ErrorKind, EventRecord, ProgramStatus, Request, Response};

/// The command did what it was asked.
pub const EXIT_OK: u8 = 0;
/// A command failed or timed out.
pub const EXIT_FAILED: u8 = 1;
/// Bad arguments or an unknown program.
pub const EXIT_USAGE: u8 = 2;
/// `status`: some program is not in its wanted state.
pub const EXIT_NOT_RUNNING: u8 = 3;
/// The init cannot be reached.
pub const EXIT_UNREACHABLE: u8 = 4;

/// Slack added to a server-side wait for the answer to arrive.
const SLACK: Duration = Duration::from_secs(5);

fn fail(e: &ClientError) -> u8 {
    eprintln!("ctrlinit: {e}");
    match e {
        ClientError::Unreachable(..) => EXIT_UNREACHABLE,
        _ => EXIT_FAILED,
    }
}

/// The exit status for an error answer, by its kind (never by its text).
fn error_code(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::UnknownProgram => EXIT_USAGE,
        ErrorKind::BadRequest | ErrorKind::Refused | ErrorKind::Timeout | ErrorKind::Failed => {
            EXIT_FAILED
        }
    }
}

/// One request, one answer.
fn call(socket: &Path, request: &Request, timeout: Duration) -> Result<Response, ClientError> {
    Client::connect(socket)?.call(request, timeout)
}

/// `ctrlinit status [NAME…] [--json [--usage]]`.
pub fn status(socket: &Path, names: Vec<String>, json: bool, usage: bool) -> u8 {
    let r = match call(socket, &Request::Status { names, usage }, SLACK) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    match r {
        Response::Status {
            seq,
            programs,
            network,
            previous_boot,
            externals,
        } => {
            if json {
                // The network watch is one more entry, of its own type (programs are
                // `service` or `oneshot`), so the array stays an array of named things.
                let network = network.as_ref().map(|n| {
                    let mut v = serde_json::to_value(n).unwrap_or_default();
                    v["name"] = "network".into();
                    v["type"] = "network".into();
                    v["seq"] = seq.into();
                    v
                });
                // Each external too: `type` = `external`.
                let externals = externals.iter().map(|e| {
                    let mut v = serde_json::to_value(e).unwrap_or_default();
                    v["type"] = "external".into();
                    v["seq"] = seq.into();
                    v
                });
                print_json(&programs, seq, network.into_iter().chain(externals));
            } else {
                if let Some(b) = &previous_boot {
                    println!("{}", super::history::boot_line(b));
                }
                print!("{}", render_table(&programs));
                if let Some(n) = &network {
                    println!("{}", super::network_line::render(n));
                }
                print!("{}", super::external_rows::render(&externals));
            }
            let network_ok = network.as_ref().is_none_or(super::network_line::usable);
            if programs.iter().all(in_wanted_state) && network_ok {
                EXIT_OK
            } else {
                EXIT_NOT_RUNNING
            }
        }
        Response::Error { error, kind } => {
            eprintln!("ctrlinit: {error}");
            error_code(kind)
        }
        other => unexpected(&other),
    }
}

/// One program as `status --json` prints it: its fields, then the answer's `seq`.
#[derive(serde::Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    program: &'a ProgramStatus,
    seq: u64,
}

/// An entry of `status --json`'s array: a program, or something else watched (the network).
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Program(Shown<'a>),
    Other(serde_json::Value),
}

/// Prints `programs` (and `other`, the network watch's and the externals' entries) as a pretty JSON array, written straight to stdout through a buffer: no
/// intermediate tree of values (a map per program), which cost more than the request itself
/// for thousands of programs.
fn print_json(
    programs: &[ProgramStatus],
    seq: u64,
    other: impl Iterator<Item = serde_json::Value>,
) {
    use std::io::Write;
    let shown: Vec<Entry<'_>> = programs
        .iter()
        .map(|program| Entry::Program(Shown { program, seq }))
        .chain(other.map(Entry::Other))
        .collect();
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    let _ = serde_json::to_writer_pretty(&mut out, &shown);
    let _ = writeln!(out);
    let _ = out.flush();
}

fn in_wanted_state(p: &ProgramStatus) -> bool {
    match p.kind.as_str() {
        "oneshot" => p.state == State::Completed,
        _ => p.state == State::Running,
    }
}

/// The `status` table's column headings, in the order [`row`] fills them.
const HEADER: [&str; 10] = [
    "NAME",
    "TYPE",
    "STATE",
    "HEALTH",
    "PID",
    "PROCS",
    "UPTIME",
    "RESTARTS",
    "LAST EXIT",
    "READY",
];

/// The `status` table: one row per program, columns padded to their widest cell (the last one
/// unpadded, so no line ends in spaces).
pub fn render_table(programs: &[ProgramStatus]) -> String {
    let rows: Vec<[String; 10]> = programs.iter().map(row).collect();
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(HEADER.to_vec(), &mut out);
    for r in &rows {
        line(r.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// One program's cells, under [`HEADER`]; `-` where there is nothing to show.
fn row(p: &ProgramStatus) -> [String; 10] {
    // No budget (`max_restarts = 0`, as for an imported oneshot that must not be retried)
    // has nothing left to count down: "0 (0 left)" read as an alarm.
    let restarts = if p.max_restarts == 0 {
        p.restarts.to_string()
    } else {
        format!(
            "{} ({} left)",
            p.restarts,
            p.max_restarts.saturating_sub(p.restarts_in_window)
        )
    };
    let last = p.last_exit.as_ref().map_or("-".into(), |e| e.text.clone());
    let ready = match (&p.readiness, p.ready) {
        (Some(r), true) => format!("yes ({r})"),
        (Some(r), false) => format!("no ({r})"),
        (None, true) => "yes".into(),
        (None, false) => "-".into(),
    };
    let health = p.health.as_ref().map_or("-".into(), |h| h.status.clone());
    [
        p.name.clone(),
        p.kind.clone(),
        state_cell(p),
        health,
        p.pid.map_or("-".into(), |v| v.to_string()),
        p.processes.map_or("-".into(), |n| n.to_string()),
        p.uptime_ms.map_or("-".into(), short_duration),
        restarts,
        last,
        ready,
    ]
}

/// The state with what qualifies it: the backoff left, stopped by hand, and the program's own
/// sd_notify `STATUS=` (cut at 40 characters, so one chatty program does not widen the table).
fn state_cell(p: &ProgramStatus) -> String {
    let mut state = p.state.to_string();
    if let Some(ms) = p.backoff_remaining_ms {
        state.push_str(&format!(" ({})", short_duration(ms)));
    }
    if p.stopped_by_hand {
        state.push_str(" (by hand)");
    }
    if let Some(n) = &p.notify
        && let Some(s) = &n.status
    {
        let shown: String = s.chars().take(40).collect();
        let more = if shown.len() < s.len() { "…" } else { "" };
        state.push_str(&format!(" ({shown}{more})"));
    }
    state
}

/// Parses `NAME=STATE` (`STATE` may be `a|b`).
pub fn parse_condition(text: &str) -> Result<Condition, String> {
    let (name, states) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: write NAME=STATE, e.g. api=running"))?;
    let states = states
        .split('|')
        .map(|s| s.parse::<State>())
        .collect::<Result<Vec<State>, String>>()?;
    Ok(Condition {
        name: name.to_string(),
        states,
    })
}

/// `ctrlinit status --wait NAME=STATE… [--timeout T]`.
pub fn wait(socket: &Path, conditions: &[String], timeout: Duration) -> u8 {
    let conditions = match conditions
        .iter()
        .map(|c| parse_condition(c))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ctrlinit: {e}");
            return EXIT_USAGE;
        }
    };
    // The init may still be starting (no socket yet): keep trying until the deadline, so a
    // script can start the container and wait in one step.
    let deadline = std::time::Instant::now() + timeout;
    let mut waited = false;
    let client = loop {
        match Client::connect(socket) {
            Ok(c) => break c,
            Err(ClientError::Unreachable(..)) if std::time::Instant::now() < deadline => {
                waited = true;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return fail(&e),
        }
    };
    // Connected at once: the whole timeout, as given (the init reports it when it passes, and
    // `1s` less the connection's microseconds would read "999ms"). After waiting for the
    // socket, what is left, in whole milliseconds rounded up.
    let left = if waited {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        Duration::from_millis(left.as_micros().div_ceil(1000) as u64)
    } else {
        timeout
    };
    let request = Request::Wait {
        conditions,
        timeout_ms: left.as_millis() as u64,
    };
    let mut client = client;
    done(client.call(&request, left + SLACK))
}

/// Prints the outcome of a command answered with `Done` or `Error`.
fn done(r: Result<Response, ClientError>) -> u8 {
    match r {
        Ok(Response::Done { message }) => {
            println!("{message}");
            EXIT_OK
        }
        Ok(Response::Error { error, kind }) => {
            eprintln!("ctrlinit: {error}");
            error_code(kind)
        }
        Ok(other) => unexpected(&other),
        Err(e) => fail(&e),
    }
}

fn unexpected(r: &Response) -> u8 {
    eprintln!("ctrlinit: unexpected answer: {r:?}");
    EXIT_FAILED
}

/// `ctrlinit start|stop|restart NAME…|--all`.
pub fn change(socket: &Path, verb: &str, names: Vec<String>, all: bool, timeout: Duration) -> u8 {
    let timeout_ms = timeout.as_millis() as u64;
    let request = match verb {
        "start" => Request::Start {
            names,
            all,
            timeout_ms,
        },
        "stop" => Request::Stop {
            names,
            all,
            timeout_ms,
        },
        _ => Request::Restart {
            names,
            all,
            timeout_ms,
        },
    };
    done(call(socket, &request, timeout + SLACK))
}

/// `ctrlinit signal SIGNAME NAME…`.
pub fn signal(socket: &Path, signal: String, names: Vec<String>) -> u8 {
    done(call(socket, &Request::Signal { signal, names }, SLACK))
}

/// How long `ctrlinit reload` waits for its answer. The init answers once the configuration is
/// read, checked and applied (or refused): up to 16 MiB of files, read on a thread of its own,
/// which can take many seconds on a slow or loaded machine. A client that gave up sooner would
/// say the reload failed while it then applied; this bound is only against an init that never
/// answers.
pub const RELOAD_WAIT: Duration = Duration::from_secs(300);

/// `ctrlinit reload`.
pub fn reload(socket: &Path) -> u8 {
    done(call(socket, &Request::Reload, RELOAD_WAIT))
}

/// `ctrlinit shutdown`. The init may end before its answer is read (nothing was left to stop):
/// a connection closed without an answer then means the shutdown happened.
pub fn shutdown(socket: &Path) -> u8 {
    match call(socket, &Request::Shutdown, SLACK) {
        Err(ClientError::Closed) => {
            println!("shutting down");
            EXIT_OK
        }
        r => done(r),
    }
}

/// `ctrlinit health [--strict | --live]`: only 0 or 1.
pub fn health(socket: &Path, strict: bool, live: bool) -> u8 {
    match call(socket, &Request::Health { strict, live }, SLACK) {
        Ok(Response::Health { healthy: true, .. }) => {
            println!("healthy");
            EXIT_OK
        }
        Ok(Response::Health { problems, .. }) => {
            println!("unhealthy: {}", problems.join("; "));
            EXIT_FAILED
        }
        Ok(Response::Error { error, kind: _ }) => {
            println!("unhealthy: {error}");
            EXIT_FAILED
        }
        Ok(other) => {
            println!("unhealthy: unexpected answer {other:?}");
            EXIT_FAILED
        }
        Err(e) => {
            println!("unhealthy: {e}");
            EXIT_FAILED
        }
    }
}

/// `ctrlinit logs NAME… [-n N] [-f] [--by-program]`.
pub fn logs(socket: &Path, names: Vec<String>, lines: usize, follow: bool, by_program: bool) -> u8 {
    let mut client = match Client::connect(socket) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let timeout = (!follow).then_some(SLACK);
    if let Err(e) = client.send(
        &Request::Logs {
            names,
            lines,
            follow,
            by_program,
        },
        timeout,
    ) {
        return fail(&e);
    }
    let mut out = std::io::stdout().lock();
    loop {
        match client.next_response() {
            Ok(Some(Response::Logs { text })) => {
                if out
                    .write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return EXIT_OK;
                }
                if !follow {
                    return EXIT_OK;
                }
            }
            Ok(Some(Response::Error { error, kind })) => {
                eprintln!("ctrlinit: {error}");
                return error_code(kind);
            }
            Ok(Some(other)) => return unexpected(&other),
            Ok(None) => return stream_ended("log lines", follow),
            Err(e) => return fail(&e),
        }
    }
}

/// The init closed a stream the user asked to follow: it stopped or is restarting. Said on
/// stderr, so a follower does not end as if the user had stopped it; the status stays 0, as
/// `docker logs -f` ends when its container stops.
fn stream_ended(what: &str, followed: bool) -> u8 {
    if followed {
        eprintln!(
            "ctrlinit: the init closed the stream (it stopped or is restarting): no more {what}"
        );
    }
    EXIT_OK
}

/// `ctrlinit events [--json]`.
pub fn events(socket: &Path, json: bool) -> u8 {
    let mut client = match Client::connect(socket) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    if let Err(e) = client.send(&Request::Events, None) {
        return refused_or(&mut client, &e);
    }
    let mut out = std::io::stdout().lock();
    // Said at once, so a quiet container does not look like a hung command (the stream was
    // asked for first: no change is missed between the two). JSON stays events only.
    if !json
        && let Ok(Response::Status { programs, .. }) = call(
            socket,
            &Request::Status {
                names: vec![],
                usage: false,
            },
            SLACK,
        )
    {
        let _ = out.write_all(events_header(&programs).as_bytes());
        let _ = out.flush();
    }
    let mut streaming = false;
    loop {
        let line = match client.next_response() {
            Ok(Some(Response::Event { event })) => {
                streaming = true;
                render_event(&event, json)
            }
            // Once events flow, an error only says some were missed: the stream goes on.
            // Before that it is a refusal (permission denied …), and the command failed.
            Ok(Some(Response::Error { error, kind })) => {
                eprintln!("ctrlinit: {error}");
                if !streaming {
                    return error_code(kind);
                }
                continue;
            }
            Ok(Some(other)) => return unexpected(&other),
            Ok(None) => return stream_ended("events", true),
            Err(e) => return fail(&e),
        };
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return EXIT_OK;
        }
    }
}

/// After a failed send: the server may have answered (a refused peer) and closed before reading;
/// its answer says more than the broken pipe.
fn refused_or(client: &mut Client, send_error: &ClientError) -> u8 {
    match client.next_response() {
        Ok(Some(Response::Error { error, kind })) => {
            eprintln!("ctrlinit: {error}");
            error_code(kind)
        }
        _ => fail(send_error),
    }
}

/// `watching 3 programs: api running, provision completed, worker running; changes follow`.
fn events_header(programs: &[ProgramStatus]) -> String {
    let states: Vec<String> = programs
        .iter()
        .map(|p| format!("{} {}", p.name, p.state))
        .collect();
    format!(
        "watching {} program{}: {}; changes follow (Ctrl-C to stop)\n",
        programs.len(),
        if programs.len() == 1 { "" } else { "s" },
        states.join(", ")
    )
}

fn render_event(e: &EventRecord, json: bool) -> String {
    if json {
        let mut s = serde_json::to_string(e).unwrap_or_default();
        s.push('\n');
        s
    } else {
        format!("{} {}\n", e.time, e.message)
    }
}

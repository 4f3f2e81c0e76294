//! The console: ctrlinit's standard output, which `docker logs` shows.
//!
//! One thread owns stdout and writes whole buffers with blocking writes, so lines of different
//! programs never interleave inside a line and stdout's file description is never made
//! non-blocking (it is shared with whoever started ctrlinit). Pumps hand it formatted buffers
//! through a bounded channel and wait when it is full: a stalled reader of the console makes the
//! *programs* wait (their pipes fill), never the supervisor.

use std::io::Write;
use std::time::SystemTime;

use tokio::sync::mpsc::{Receiver, Sender, channel};

use super::command::Stream;
use super::frame::Block;
use crate::config::ConsoleMode;

/// Buffers in flight to the console before pumps wait.
const QUEUE: usize = 64;

/// Formatted bytes for the console, and which stream they go to: programs' lines to stdout;
/// ctrlinit's own to stdout too, or to stderr while a program has ctrlinit's stdout (`stdio =
/// "inherit"`).
pub struct Chunk {
    /// To stderr instead of stdout.
    pub stderr: bool,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Starts the console thread; returns the sender, and a receiver that hears when everything
/// sent has been written (awaited at exit, with a bound: see [`Drained`]).
pub fn start() -> (Sender<Chunk>, Drained) {
    let (tx, rx) = channel(QUEUE);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("ctrlinit-console".into())
        .spawn(move || {
            write_all(rx);
            let _ = done_tx.send(());
        })
        .expect("failed to start the console thread");
    (tx, Drained(done_rx))
}

/// The console thread's end.
pub struct Drained(std::sync::mpsc::Receiver<()>);

impl Drained {
    /// Waits until the console has written everything, for at most `bound`: a console nobody
    /// reads (a stalled `docker logs` pipe) must not keep the container from exiting.
    pub fn wait(self, bound: std::time::Duration) -> bool {
        self.0.recv_timeout(bound).is_ok()
    }
}

fn write_all(mut rx: Receiver<Chunk>) {
    crate::sys::init::lower_thread_priority();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    while let Some(chunk) = rx.blocking_recv() {
        // A closed console (EPIPE) must not stop the draining: programs would block.
        if chunk.stderr {
            // Locked per write, not held: ctrlinit writes to stderr directly too (a `--`
            // command's exec failure), and must never wait on this thread for it.
            let _ = std::io::stderr().lock().write_all(&chunk.bytes);
        } else {
            let _ = out.write_all(&chunk.bytes);
        }
        if rx.is_empty() {
            let _ = out.flush();
        }
    }
    let _ = out.flush();
}

/// The console prefix of a program: its name padded to `width`, then `|` (stdout) or `!` (stderr).
pub fn prefix(name: &str, width: usize, stream: Stream) -> Vec<u8> {
    let mark = match stream {
        Stream::Stderr => '!',
        _ => '|',
    };
    // Padded by hand: a format width is limited to u16::MAX and panics above it.
    let mut out = Vec::with_capacity(name.len().max(width) + 3);
    out.extend_from_slice(name.as_bytes());
    out.resize(name.len().max(width), b' ');
    out.push(b' ');
    out.extend_from_slice(mark.to_string().as_bytes());
    out.push(b' ');
    out
}

/// Appends `block` to `out` as the console shows it in `mode`.
pub fn format_block(
    mode: ConsoleMode,
    prefix: &[u8],
    program: &str,
    stream: Stream,
    block: Block<'_>,
    out: &mut Vec<u8>,
) {
    match mode {
        ConsoleMode::Off => {}
        ConsoleMode::Plain => {
            out.extend_from_slice(block.data);
            if !block.terminated {
                out.push(b'\n');
            }
        }
        ConsoleMode::Prefix => {
            out.reserve(block.data.len() + block.line_count() * (prefix.len() + 1));
            for line in block.lines() {
                out.extend_from_slice(prefix);
                out.extend_from_slice(line);
                out.push(b'\n');
            }
        }
        ConsoleMode::Json => {
            let ts = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
            for line in block.lines() {
                json_line(out, &ts, program, stream.as_str(), None, line);
            }
        }
    }
}

/// Appends one JSON object and a newline: `{"timestamp","program","stream"[,"level"],"line"}`.
pub fn json_line(
    out: &mut Vec<u8>,
    ts: &str,
    program: &str,
    stream: &str,
    level: Option<&str>,
    line: &[u8],
) {
    out.extend_from_slice(b"{\"timestamp\":\"");
    out.extend_from_slice(ts.as_bytes());
    out.extend_from_slice(b"\",\"program\":");
    json_string(out, program.as_bytes());
    out.extend_from_slice(b",\"stream\":\"");
    out.extend_from_slice(stream.as_bytes());
    out.push(b'"');
    if let Some(level) = level {
        out.extend_from_slice(b",\"level\":\"");
        out.extend_from_slice(level.as_bytes());
        out.push(b'"');
    }
    out.extend_from_slice(b",\"line\":");
    json_string(out, line);
    out.extend_from_slice(b"}\n");
}

/// Appends `bytes` as a JSON string. Invalid UTF-8 is kept visible as `\xNN` text (the JSON
/// stays valid and no byte is silently replaced).
pub fn json_string(out: &mut Vec<u8>, mut bytes: &[u8]) {
    out.push(b'"');
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                escape_str(out, s);
                break;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                // `valid` is valid UTF-8 by construction of the error.
                escape_str(out, std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len());
                for b in &rest[..bad] {
                    out.extend_from_slice(format!("\\\\x{b:02x}").as_bytes());
                }
                bytes = &rest[bad..];
            }
        }
    }
    out.push(b'"');
}

fn escape_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        // Multi-byte UTF-8 sequences only use bytes >= 0x80: byte-wise scanning is exact.
        if b != b'"' && b != b'\\' && b >= 0x20 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            c => out.extend_from_slice(format!("\\u{:04x}", c).as_bytes()),
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(data: &[u8]) -> Block<'_> {
        Block {
            data,
            terminated: true,
        }
    }

    #[test]
    fn prefixes_every_line_with_a_padded_name() {
        let mut out = Vec::new();
        let p = prefix("api", 6, Stream::Stdout);
        format_block(
            ConsoleMode::Prefix,
            &p,
            "api",
            Stream::Stdout,
            block(b"one\ntwo\n"),
            &mut out,
        );
        let e = prefix("api", 6, Stream::Stderr);
        format_block(
            ConsoleMode::Prefix,
            &e,
            "api",
            Stream::Stderr,
            block(b"bad\n"),
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "api    | one\napi    | two\napi    ! bad\n"
        );
    }

    #[test]
    fn json_lines_parse_and_keep_invalid_bytes_visible() {
        let mut out = Vec::new();
        let data = b"say \"hi\"\\ \t\x01\n\xffok\n";
        format_block(
            ConsoleMode::Json,
            b"",
            "api",
            Stream::Stderr,
            block(data),
            &mut out,
        );
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["program"], "api");
        assert_eq!(lines[0]["stream"], "stderr");
        assert_eq!(lines[0]["line"], "say \"hi\"\\ \t\u{1}");
        assert_eq!(lines[1]["line"], "\\xffok");
        assert!(lines[0]["timestamp"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn a_prefix_of_any_width_is_padded_without_panicking() {
        assert_eq!(prefix("api", 6, Stream::Stdout), b"api    | ");
        let long = "x".repeat(70_000);
        let p = prefix(&long, 70_000, Stream::Stderr);
        assert_eq!(p.len(), 70_003);
        assert!(p.ends_with(b"x ! "));
    }

    #[test]
    fn plain_passes_bytes_through() {
        let mut out = Vec::new();
        format_block(
            ConsoleMode::Plain,
            b"",
            "x",
            Stream::Stdout,
            Block {
                data: b"\xfe raw",
                terminated: false,
            },
            &mut out,
        );
        assert_eq!(out, b"\xfe raw\n");
    }
}

//! What a local user can throw at `[init] syslog` (every user may write the socket): a flood of
//! 64 KiB datagrams, a message with NULs and invalid UTF-8, a stream client that never ends its
//! message, more stream connections than the cap. Each gets a counted drop or cut, and PID 1
//! keeps answering `status` promptly.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::time::{Duration, Instant};

use common::*;

fn counter(port: u16, name: &str) -> u64 {
    // The probe port may still be starting on a loaded machine.
    let mut s = wait_until("the probe port", DEADLINE, || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}_total ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name}_total in:\n{text}"))
}

/// `status` answers within a generous bound (the machine is loaded; a hung PID 1 never does).
fn status_answers(init: &Init) {
    let began = Instant::now();
    let (code, out) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "status took {:?}",
        began.elapsed()
    );
}

#[test]
fn a_flood_of_64k_datagrams_and_garbage_is_cut_counted_and_pid1_answers() {
    let http = free_port();
    let init = init()
        .file(
            "a.toml",
            &format!(
                "[init]\nsyslog = \"{{dir}}/log.sock\"\nhttp = \"127.0.0.1:{http}\"\n\n\
                 [program.quiet]\ncommand = [\"sh\", \"-c\", \"i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done | logger -u {{dir}}/log.sock -t quiet\"]\n"
            ),
        )
        .start();
    let sock = init.dir().join("log.sock");
    let log = init.dir().join("log");
    wait_until("quiet's first tick", DEADLINE, || {
        std::fs::read_to_string(log.join("quiet.log"))
            .ok()
            .filter(|t| t.contains("tick 1"))
    });
    let sender = UnixDatagram::unbound().unwrap();
    sender.set_nonblocking(true).unwrap();
    let big = vec![b'A'; 64 * 1024];
    let mut sent = 0;
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(3) {
        match sender.send_to(&big, &sock) {
            Ok(_) => sent += 1,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
    assert!(sent > 0);
    status_answers(&init);
    sender.set_nonblocking(false).unwrap();
    sender.send_to(b"<13>bad: a\0b\xff\xfe c\n", &sock).unwrap();
    let line = wait_until("the garbage line", DEADLINE, || {
        let text = std::fs::read_to_string(log.join("syslog.log")).ok()?;
        text.lines()
            .find(|l| l.starts_with("notice bad:"))
            .map(str::to_string)
    });
    assert_eq!(line, "notice bad: a#000b\u{fffd}\u{fffd} c");
    let syslog_file = std::fs::read_to_string(log.join("syslog.log")).unwrap();
    assert!(
        syslog_file.lines().all(|l| l.len() <= 8 * 1024 + 16),
        "a line past 8 KiB"
    );
    let truncated = counter(http, "ctrlinit_syslog_truncated_messages");
    assert!(truncated >= 1, "{truncated}");
    assert!(counter(http, "ctrlinit_syslog_foreign_messages") >= truncated);
    // The quiet program was not starved: its ticks go on after the flood.
    let before = std::fs::read_to_string(log.join("quiet.log"))
        .unwrap()
        .lines()
        .count();
    wait_until("quiet ticking after the flood", DEADLINE, || {
        let now = std::fs::read_to_string(log.join("quiet.log"))
            .ok()?
            .lines()
            .count();
        (now >= before + 3).then_some(())
    });
    status_answers(&init);
}

#[test]
fn a_stream_client_that_never_ends_its_message_is_cut_closed_and_capped() {
    let http = free_port();
    let init = init()
        .file(
            "a.toml",
            &format!(
                "[init]\nsyslog_stream = \"{{dir}}/log.stream\"\nhttp = \"127.0.0.1:{http}\"\n\n\
                 [program.a]\ncommand = [\"sleep\", \"600\"]\n"
            ),
        )
        .start();
    let path = init.dir().join("log.stream");
    wait_until("the stream socket", DEADLINE, || {
        UnixStream::connect(&path).ok()
    });
    // 20 KiB and no end: cut at 8 KiB (counted), then closed after its deadline.
    let mut endless = UnixStream::connect(&path).unwrap();
    endless.write_all(&vec![b'x'; 20 * 1024]).unwrap();
    // More connections than the cap: the ones past it are closed at once.
    let held: Vec<UnixStream> = (0..70)
        .filter_map(|_| UnixStream::connect(&path).ok())
        .collect();
    wait_until("refused connections counted", DEADLINE, || {
        (counter(http, "ctrlinit_syslog_stream_refused_connections") >= 1).then_some(())
    });
    status_answers(&init);
    endless.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(endless.read(&mut buf).unwrap_or(0), 0, "closed by ctrlinit");
    assert!(counter(http, "ctrlinit_syslog_stream_timed_out_connections") >= 1);
    assert!(counter(http, "ctrlinit_syslog_truncated_messages") >= 1);
    drop(held);
    // A well-behaved client still gets through.
    let mut ok = UnixStream::connect(&path).unwrap();
    ok.write_all(b"<14>fine: over the stream\0").unwrap();
    init.wait_for_line("syslog   | info fine: over the stream");
    status_answers(&init);
}

#[test]
fn idle_stream_connections_are_closed_so_a_real_client_gets_in_and_refusals_are_said() {
    let http = free_port();
    let init = init()
        .file(
            "a.toml",
            &format!(
                "[init]\nsyslog_stream = \"{{dir}}/log.stream\"\nhttp = \"127.0.0.1:{http}\"\n\n\
                 [program.a]\ncommand = [\"sleep\", \"600\"]\n"
            ),
        )
        .start();
    let path = init.dir().join("log.stream");
    let syslog_file = init.dir().join("log").join("syslog.log");
    // Bound before any program starts; no connection of the test's may free a slot later.
    init.wait_states(&["a=running"]);
    // Every slot held by a connection that never sends a byte (the cap is 64).
    let idle: Vec<UnixStream> = (0..64)
        .map(|_| UnixStream::connect(&path).unwrap())
        .collect();
    let began = Instant::now();
    wait_until("the cap reached", DEADLINE, || {
        drop(UnixStream::connect(&path).ok());
        (counter(http, "ctrlinit_syslog_stream_refused_connections") >= 1).then_some(())
    });
    init.wait_for_line("syslog stream socket: refused");
    // A real client, retrying as one would: its line lands once the idle ones are closed
    // (30 s of silence), with a wide margin for a loaded machine.
    wait_until(
        "a real client's line",
        Duration::from_secs(30) + DEADLINE + DEADLINE,
        || {
            let text = std::fs::read_to_string(&syslog_file).unwrap_or_default();
            if text.contains("real: client line") {
                return Some(());
            }
            if let Ok(mut c) = UnixStream::connect(&path) {
                let _ = c.write_all(b"<14>real: client line\n");
            }
            None
        },
    );
    assert!(counter(http, "ctrlinit_syslog_stream_idle_closed_connections") >= 64);
    let said = init.count_lines("syslog stream socket: refused");
    let bound = began.elapsed().as_secs() as usize / 10 + 2;
    assert!(
        said <= bound,
        "{said} refusal lines in {:?}",
        began.elapsed()
    );
    drop(idle);
    status_answers(&init);
}

#[test]
fn terminal_escapes_in_a_syslog_tag_and_message_reach_no_file_or_console_raw() {
    let init = init()
        .file(
            "a.toml",
            "[init]\nsyslog = \"{dir}/log.sock\"\n\n[program.a]\ncommand = [\"sleep\", \"600\"]\n",
        )
        .start();
    init.wait_states(&["a=running"]);
    let sock = init.dir().join("log.sock");
    let sender = UnixDatagram::unbound().unwrap();
    let message = "<13>ev\u{1b}[31mil\u{9b}2J: a\u{9b}31m\u{1b}]0;pwned\u{7}b\u{85}end";
    sender.send_to(message.as_bytes(), &sock).unwrap();
    let shown = init.wait_for_line("pwned");
    assert!(
        shown.contains("ev#033[31mil#2332J: a#23331m#033]0;pwned#007b#205end"),
        "{shown}"
    );
    let raw = |t: &str| t.chars().any(|c| c.is_control() && c != '\n' && c != '\t');
    assert!(!raw(&init.output()), "raw controls on the console");
    for entry in std::fs::read_dir(init.dir().join("log")).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).to_string();
        assert!(!raw(&text), "raw controls in {}: {text:?}", path.display());
    }
}

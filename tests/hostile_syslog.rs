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
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
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

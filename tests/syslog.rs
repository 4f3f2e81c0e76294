//! `[init] syslog` against the real binary as PID 1, with Debian's real daemons that log to
//! syslog: haproxy (`log <socket>`) and `logger` from util-linux. Each message goes to the log
//! file and console prefix of the program whose run sent it; a sender of no program to the
//! `syslog` stream; lines logged at start-up are kept. The socket is a temp path in most tests
//! (the host's `/dev/log` is never touched); the literal `/dev/log` is tested in a private mount
//! namespace with a tmpfs over `/dev`.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use common::*;

/// `/metrics` of the init serving `[init] http` on `port`.
pub fn metrics(port: u16) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// The value of counter `name` (with its `_total`) in `/metrics`.
pub fn counter(port: u16, name: &str) -> u64 {
    let text = metrics(port);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}_total ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name}_total in:\n{text}"))
}

/// Runs `logger` with `args`, as a sender that belongs to no program.
fn logger(args: &[&str]) {
    let ran = run_with_deadline(
        {
            let mut c = Command::new("logger");
            c.args(args);
            c
        },
        DEADLINE,
    );
    assert_eq!(ran.code, 0, "logger failed: {}", ran.all());
}

/// A line of `path` containing `needle`, once there is one.
fn wait_in_file(path: &Path, needle: &str) -> String {
    wait_until(
        &format!("{needle:?} in {}", path.display()),
        DEADLINE,
        || {
            let text = std::fs::read_to_string(path).ok()?;
            text.lines()
                .find(|l| l.contains(needle))
                .map(str::to_string)
        },
    )
}

fn haproxy_config(dir: &Path, port: u16) -> String {
    format!(
        "global\n    log {}/log.sock local0\n\
         defaults\n    log global\n    mode http\n    option httplog\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n\
         frontend fe\n    bind 127.0.0.1:{port}\n    default_backend be\n\
         backend be\n    server s1 127.0.0.1:1\n",
        dir.display()
    )
}

#[test]
fn each_message_goes_to_the_program_whose_run_sent_it() {
    let (http, front) = (free_port(), free_port());
    let builder = init();
    let dir = builder.dir();
    std::fs::write(dir.join("haproxy.cfg"), haproxy_config(&dir, front)).unwrap();
    // Five programs that log the moment they start, through a `logger` that reads its lines from
    // a pipe (a descendant of the run, alive while its messages are read: a sender that has
    // exited by then cannot be traced to a run, see docs/src/guide/syslog.md): none of their
    // lines may be lost or go to another stream.
    let mut conf = format!(
        "[init]\nsyslog = \"{{dir}}/log.sock\"\nhttp = \"127.0.0.1:{http}\"\n\n\
         [program.haproxy]\ncommand = [\"haproxy\", \"-db\", \"-f\", \"{{dir}}/haproxy.cfg\"]\n"
    );
    for n in 1..=5 {
        conf.push_str(&format!(
            "\n[program.early{n}]\ncommand = [\"sh\", \"-c\", \"{{ echo 'early{n} at start'; exec sleep 600; }} | logger -u {{dir}}/log.sock -t early -i\"]\n\n[program.late{n}]\ncommand = [\"sh\", \"-c\", \"{{ echo 'early{n} second'; exec sleep 600; }} | logger -u {{dir}}/log.sock -p daemon.err -t early\"]\n"
        ));
    }
    let init = builder.file("a.toml", &conf).start();
    let log = dir.join("log");
    for n in 1..=5 {
        let first = wait_in_file(
            &log.join(format!("early{n}.log")),
            &format!("early{n} at start"),
        );
        assert!(first.starts_with("notice early["), "{first}");
        let second = wait_in_file(
            &log.join(format!("late{n}.log")),
            &format!("early{n} second"),
        );
        assert_eq!(second, format!("err early: early{n} second"));
        init.wait_for_line(&format!("early{n}   | notice early["));
    }
    // haproxy logs each connection through syslog, from its own process.
    wait_until("haproxy listening", DEADLINE, || {
        std::net::TcpStream::connect(("127.0.0.1", front)).ok()
    });
    let mut s = std::net::TcpStream::connect(("127.0.0.1", front)).unwrap();
    s.write_all(b"GET /syslog-test HTTP/1.0\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let line = wait_in_file(&log.join("haproxy.log"), "GET /syslog-test");
    assert!(line.starts_with("info haproxy["), "{line}");
    let shown = init.wait_for_line("GET /syslog-test");
    assert!(shown.starts_with("haproxy  | info haproxy["), "{shown}");
    // A sender that is no program's: the syslog stream, its own file.
    logger(&[
        "-u",
        dir.join("log.sock").to_str().unwrap(),
        "-t",
        "outsider",
        "from no program",
    ]);
    let line = wait_in_file(&log.join("syslog.log"), "from no program");
    assert_eq!(line, "notice outsider: from no program");
    init.wait_for_line("syslog   | notice outsider: from no program");
    let syslog_file = std::fs::read_to_string(log.join("syslog.log")).unwrap();
    assert!(
        !syslog_file.contains("early") && !syslog_file.contains("haproxy"),
        "a program's message went to the syslog stream:\n{syslog_file}"
    );
    assert!(counter(http, "ctrlinit_syslog_foreign_messages") >= 1);
    assert!(counter(http, "ctrlinit_syslog_messages") >= 12);
}

#[test]
fn json_console_lines_carry_facility_severity_and_tag() {
    let init = init()
        .file(
            "a.toml",
            "[init]\nsyslog = \"{dir}/log.sock\"\nconsole = \"json\"\n\n\
             [program.app]\ncommand = [\"sh\", \"-c\", \"{ echo 'disk \\\"nearly\\\" full'; exec sleep 600; } | logger -u {dir}/log.sock -p local3.warning -t jtag -i\"]\n\
             [program.five]\ncommand = [\"sh\", \"-c\", \"{ echo 'in 5424'; exec sleep 600; } | logger -u {dir}/log.sock --rfc5424 -p mail.debug -t mailer\"]\n",
        )
        .start();
    let parse = |needle: &str| -> serde_json::Value {
        serde_json::from_str(&init.wait_for_line(needle)).unwrap()
    };
    let v = parse("jtag");
    assert_eq!(v["program"], "app");
    assert_eq!(v["stream"], "syslog");
    assert_eq!(v["facility"], "local3");
    assert_eq!(v["severity"], "warning");
    assert_eq!(v["level"], "warn");
    assert_eq!(v["tag"], "jtag");
    assert!(v["pid"].as_str().unwrap().parse::<i32>().is_ok(), "{v}");
    assert_eq!(v["line"], "disk \"nearly\" full");
    let v = parse("in 5424");
    assert_eq!(
        (&v["program"], &v["facility"], &v["severity"], &v["tag"]),
        (
            &serde_json::json!("five"),
            &serde_json::json!("mail"),
            &serde_json::json!("debug"),
            &serde_json::json!("mailer")
        )
    );
}

#[test]
fn the_literal_dev_log_in_a_private_mount_namespace() {
    // A tmpfs over /dev in a mount namespace of its own, with the nodes a program needs bound
    // back: ctrlinit binds /dev/log there, and `logger` finds it with no option at all.
    let host_had_one = std::fs::symlink_metadata("/dev/log").is_ok();
    let builder = init();
    let dir = builder.dir();
    let real = dir.join("realdev");
    std::fs::create_dir_all(&real).unwrap();
    let setup = format!(
        "mount --make-rprivate / && mount --rbind /dev {real} && mount -t tmpfs tmpfs /dev && \
         for n in null zero urandom random full tty; do touch /dev/$n && mount --bind {real}/$n /dev/$n; done && \
         exec \"$@\"",
        real = real.display()
    );
    let init = builder
        .under(&["unshare", "--mount", "sh", "-c", &setup, "sh"])
        .file(
            "a.toml",
            "[init]\nsyslog = \"/dev/log\"\n\n[program.plain]\ncommand = [\"sh\", \"-c\", \"{ echo 'through /dev/log'; exec sleep 600; } | logger -t plain\"]\n",
        )
        .start();
    init.wait_for_line("plain    | notice plain: through /dev/log");
    assert_eq!(
        std::fs::symlink_metadata("/dev/log").is_ok(),
        host_had_one,
        "the host's /dev/log was left as it was"
    );
}

#[test]
fn a_file_in_the_way_is_refused_with_the_fix() {
    let builder = init();
    let dir = builder.dir();
    std::fs::write(dir.join("log.sock"), b"not a socket").unwrap();
    let mut init = builder
        .file(
            "a.toml",
            "[init]\nsyslog = \"{dir}/log.sock\"\n\n[program.a]\ncommand = [\"sleep\", \"600\"]\n",
        )
        .start();
    assert_ne!(init.wait_exit(DEADLINE), 0);
    let out = init.output();
    assert!(
        out.contains("exists and is not a socket") && out.contains("[init] syslog"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(dir.join("log.sock")).unwrap(),
        b"not a socket"
    );
}

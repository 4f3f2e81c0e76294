//! `ctrlinit top` in a real pseudo-terminal, against a real init (PID 1 of a fresh PID
//! namespace): what the screen shows is rebuilt from the bytes the view wrote (a vt100
//! parser), and every wait is for screen content with a deadline. The view runs inside the
//! init's namespaces (as `docker exec -it ROLE ctrlinit top` does), except where the init must
//! go away under it (the namespace's end would kill it too).

mod common;
#[path = "common/pty.rs"]
mod pty;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use nix::sys::termios::LocalFlags;
use pty::Pty;

/// What leaving the alternate screen looks like on the wire.
const LEAVE_ALTERNATE_SCREEN: &str = "\x1b[?1049l";

/// The view on a pty, and the screen its output draws.
struct View {
    pty: Pty,
    screen: vt100::Parser,
    /// How much of the output the parser has read.
    fed: usize,
}

impl View {
    /// `ctrlinit top ARGS` on an 80x24 pty, inside the init's PID and mount namespaces
    /// (`inside`) or from the host.
    fn start(init: &Init, inside: bool) -> View {
        let mut cmd = if inside {
            let mut c = Command::new("nsenter");
            c.args(["-t", &init.pid.to_string(), "--pid", "--mount", "--", bin()]);
            c
        } else {
            Command::new(bin())
        };
        cmd.arg("--socket")
            .arg(&init.socket)
            .arg("top")
            .env("TERM", "xterm-256color");
        View {
            pty: Pty::spawn(cmd),
            screen: vt100::Parser::new(size(24), size(80), 0),
            fed: 0,
        }
    }

    /// The screen now, as text (rows joined by newlines).
    fn text(&mut self) -> String {
        let new = self.pty.seen()[self.fed..].to_string();
        self.fed += new.len();
        self.screen.process(new.as_bytes());
        self.screen.screen().contents()
    }

    /// Waits until the screen satisfies `ok`; returns it.
    fn wait(&mut self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let text = self.text();
            if ok(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen shows:\n{text}"
            );
            self.pty.pump(Duration::from_millis(100));
        }
    }

    /// Waits until `program`'s row has `value` under `column`.
    fn wait_cell(&mut self, program: &str, column: &str, value: &str) -> String {
        self.wait(&format!("{program}'s {column} to be {value:?}"), |s| {
            cell(s, program, column).as_deref() == Some(value)
        })
    }

    fn send(&mut self, keys: &str) {
        self.pty.send(keys);
    }
}

/// The text under `column` in `program`'s row (cells start where their heading starts).
fn cell(screen: &str, program: &str, column: &str) -> Option<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let header = lines.iter().find(|l| l.starts_with("NAME "))?;
    let start = header.find(column)?;
    // The cell ends where the next heading starts (the last one, at the line's end).
    let end = header[start + column.len()..]
        .find(|c: char| c != ' ')
        .map_or(usize::MAX, |i| start + column.len() + i);
    let row = lines
        .iter()
        .find(|l| l.starts_with(&format!("{program} ")))?;
    let chars: Vec<char> = row.chars().collect();
    let end = end.min(chars.len());
    (start <= end).then(|| {
        chars[start..end]
            .iter()
            .collect::<String>()
            .trim()
            .to_string()
    })
}

fn size(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap()
}

/// Whether the terminal is back in its cooked mode (line editing and echo).
fn cooked(pty: &Pty) -> bool {
    let flags = pty.termios().local_flags;
    flags.contains(LocalFlags::ICANON) && flags.contains(LocalFlags::ECHO)
}

/// A long-running `api` (which says hello) and a `crashy` that exits 3 when `{dir}/boom`
/// appears, then waits out a long backoff.
fn two_programs() -> Init {
    let init = init()
        .file(
            "top.toml",
            r#"
[program.api]
command = ["/bin/sh", "-c", "echo api says hello; exec sleep 1000"]

[program.crashy]
command = ["/bin/sh", "-c", "until [ -e {dir}/boom ]; do sleep 0.05; done; rm {dir}/boom; exit 3"]
backoff = { initial = "60s", max = "60s" }
"#,
        )
        .start();
    init.wait_states(&["api=running", "crashy=running"]);
    init
}

#[test]
fn the_view_shows_each_program_restarts_one_from_the_keyboard_shows_its_logs_and_quits_cleanly() {
    let init = two_programs();
    let mut v = View::start(&init, true);
    let screen = v.wait_cell("api", "STATE", "running");
    assert!(screen.starts_with("ctrlinit up "), "{screen}");
    assert!(screen.contains("2 programs: 2 running"), "{screen}");
    assert_eq!(
        cell(&screen, "api", "RUN").as_deref(),
        Some("1"),
        "{screen}"
    );
    // Raw mode while it runs.
    assert!(!cooked(&v.pty), "the view runs in raw mode");
    // The client reads the processes' figures itself (it shares the init's namespace): a
    // memory figure, not `-`.
    let screen = v.wait("api's memory", |s| {
        cell(s, "api", "MEM").is_some_and(|m| m.ends_with('K') || m.ends_with('M'))
    });
    assert_ne!(
        cell(&screen, "api", "CPU%").as_deref(),
        Some("-"),
        "{screen}"
    );
    // r asks, y confirms: the run number and the restarts move, on screen and in status.
    v.send("r");
    v.wait("the question", |s| s.contains("restart api? (y/n)"));
    v.send("y");
    v.wait_cell("api", "RUN", "2");
    v.wait_cell("api", "RESTARTS", "1");
    let api = init.program_json("api");
    assert_eq!(
        (api["run"].as_u64(), api["forced_restarts"].as_u64()),
        (Some(2), Some(1))
    );
    // n declines: nothing happens.
    v.send("s");
    v.wait("the question", |s| s.contains("stop api? (y/n)"));
    v.send("n");
    v.wait("the question gone", |s| !s.contains("(y/n)"));
    // l shows the selected program's last lines.
    v.send("l");
    v.wait("api's logs", |s| {
        s.contains("api: last lines") && s.contains("api says hello")
    });
    v.send("\x1b");
    v.wait("the logs closed", |s| !s.contains("api: last lines"));
    // q quits: exit 0, the terminal cooked again and the alternate screen left last.
    v.send("q");
    assert_eq!(v.pty.wait_exit(DEADLINE), 0, "{}", v.text());
    assert!(cooked(&v.pty), "the terminal is restored");
    let out = v.pty.seen().to_string();
    assert!(out.ends_with(LEAVE_ALTERNATE_SCREEN), "{out:?}");
    assert_eq!(
        init.program_json("api")["state"],
        "running",
        "n stopped nothing"
    );
}

#[test]
fn a_program_crashing_while_the_view_is_open_changes_its_row() {
    let init = two_programs();
    let mut v = View::start(&init, true);
    v.wait_cell("crashy", "STATE", "running");
    std::fs::write(init.dir().join("boom"), "").unwrap();
    let screen = v.wait_cell("crashy", "STATE", "backoff");
    assert!(screen.contains("1 running, 1 backoff"), "{screen}");
    v.wait_cell("crashy", "LAST EXIT", "exit status 3");
    v.send("\x03");
    assert_eq!(v.pty.wait_exit(DEADLINE), 0, "Ctrl-C quits: {}", v.text());
    assert!(cooked(&v.pty));
}

#[test]
fn a_window_resize_redraws_at_the_new_size() {
    let init = two_programs();
    let mut v = View::start(&init, true);
    v.wait_cell("api", "STATE", "running");
    // The header bar spans the width: 80 columns now.
    assert!(v.screen.screen().cell(0, 79).unwrap().inverse());
    v.pty.resize(40, 132);
    v.screen.set_size(size(40), size(132));
    v.wait(
        "the bar across 132 columns and the keys on the last line",
        |s| s.lines().count() == 40 && s.lines().last().is_some_and(|l| l.contains("q quit")),
    );
    let text = v.text();
    assert!(
        v.screen.screen().cell(0, 131).unwrap().inverse(),
        "the header bar reaches column 132:\n{text}"
    );
    assert_eq!(
        cell(&text, "api", "STATE").as_deref(),
        Some("running"),
        "{text}"
    );
    v.send("q");
    assert_eq!(v.pty.wait_exit(DEADLINE), 0);
}

#[test]
fn the_init_going_away_under_the_view_restores_the_terminal_and_says_so() {
    let mut init = two_programs();
    // From the host: the namespace's end would SIGKILL a view inside it.
    let mut v = View::start(&init, false);
    let screen = v.wait_cell("api", "STATE", "running");
    // Another namespace's pids are not this client's: no figures rather than wrong ones.
    assert_eq!(
        cell(&screen, "api", "MEM").as_deref(),
        Some("-"),
        "{screen}"
    );
    init.signal("TERM");
    init.wait_exit(DEADLINE);
    assert_eq!(v.pty.wait_exit(DEADLINE), 4, "{}", v.text());
    assert!(cooked(&v.pty), "the terminal is restored");
    let out = v.pty.seen().to_string();
    let left = out
        .rfind(LEAVE_ALTERNATE_SCREEN)
        .expect("the alternate screen is left");
    assert!(
        out[left..].contains("ctrlinit top: ctrlinit went away"),
        "said on the normal screen, after leaving: {out:?}"
    );
}

#[test]
fn a_signal_ends_the_view_and_restores_the_terminal() {
    let init = two_programs();
    let mut v = View::start(&init, false);
    v.wait_cell("api", "STATE", "running");
    assert!(send_signal(v.pty.child.id() as i32, libc::SIGTERM));
    assert_eq!(v.pty.wait_exit(DEADLINE), 128 + libc::SIGTERM);
    assert!(cooked(&v.pty));
    assert!(v.pty.seen().ends_with(LEAVE_ALTERNATE_SCREEN));
}

#[test]
fn without_a_terminal_or_with_once_it_prints_one_frame_and_exits_0() {
    let init = two_programs();
    for args in [&["top"][..], &["top", "--once"]] {
        let (code, out) = init.ctl(args);
        assert_eq!(code, 0, "{args:?}: {out}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("ctrlinit up "), "{out}");
        assert!(lines[0].ends_with("2 programs: 2 running"), "{out}");
        // The run ledger is on: how the previous boot ended heads the view too.
        assert!(
            lines[1].contains("previous boot: none (first boot"),
            "{out}"
        );
        assert!(lines[3].starts_with("NAME "), "{out}");
        assert_eq!(
            cell(&out, "api", "STATE").as_deref(),
            Some("running"),
            "{out}"
        );
        assert_eq!(cell(&out, "crashy", "RUN").as_deref(), Some("1"), "{out}");
        assert!(!out.contains('\x1b'), "plain text: {out:?}");
    }
    // Nothing listening: exit 4, as every client command.
    let (code, out) = ctl_at(&init.dir().join("nothing.sock"), &["top", "--once"]);
    assert_eq!(code, 4, "{out}");
}

#[test]
fn once_against_a_stopped_init_exits_4_unreachable() {
    let init = two_programs();
    // Stopped (SIGSTOP): the socket accepts, nothing answers.
    init.signal("STOP");
    let (code, out) = init.ctl(&["top", "--once"]);
    init.signal("CONT");
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("did not answer in time"), "{out}");
}

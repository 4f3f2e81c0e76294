//! A real pseudo-terminal for tests: the command runs with the terminal as its controlling
//! terminal and standard streams (as `docker run -it` gives PID 1), the test types into it and
//! reads what it shows.

// Each test binary that includes it uses some of it.
#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A command running on a pseudo-terminal.
pub struct Pty {
    master: File,
    /// The command.
    pub child: Child,
    seen: String,
}

impl Pty {
    /// Starts `cmd` in a new session whose controlling terminal is a fresh pty (80x24).
    pub fn spawn(mut cmd: Command) -> Pty {
        let pty = nix::pty::openpty(
            Some(&nix::pty::Winsize {
                ws_row: 24,
                ws_col: 80,
                ws_xpixel: 0,
                ws_ypixel: 0,
            }),
            None,
        )
        .expect("openpty");
        let slave: OwnedFd = pty.slave;
        let slave_raw = slave.as_raw_fd();
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: between fork and exec only setsid and ioctl, both async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // stdin (the slave) becomes the controlling terminal of the new session.
                if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let _ = slave_raw;
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn on the pty");
        // SAFETY: openpty returned this descriptor; it is owned here from now on.
        let master = unsafe { File::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(pty.master)) };
        // Non-blocking: reads poll with a deadline.
        nix::fcntl::fcntl(
            &master,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .unwrap();
        Pty {
            master,
            child,
            seen: String::new(),
        }
    }

    /// Types `text` (control characters included: "\x03" is Ctrl-C, "\x1a" Ctrl-Z).
    pub fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
    }

    /// Everything shown so far.
    pub fn seen(&mut self) -> &str {
        self.pump(Duration::from_millis(0));
        &self.seen
    }

    /// Reads until what was shown since `from` (a byte offset into everything seen) contains
    /// `needle`, or panics after `timeout`. Returns the offset just past the match.
    pub fn expect_from(&mut self, from: usize, needle: &str, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(i) = self.seen.get(from..).and_then(|s| s.find(needle)) {
                return from + i + needle.len();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {needle:?} on the terminal; it shows:\n{}",
                self.seen
            );
            self.pump(left.min(Duration::from_millis(100)));
        }
    }

    /// Reads what is available, waiting at most `wait` for the first bytes.
    pub fn pump(&mut self, wait: Duration) {
        let mut fds = [nix::poll::PollFd::new(
            std::os::fd::AsFd::as_fd(&self.master),
            nix::poll::PollFlags::POLLIN,
        )];
        let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
        let _ = nix::poll::poll(&mut fds, ms);
        let mut buf = [0u8; 4096];
        loop {
            match self.master.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(_) => break,
            }
        }
    }

    /// The terminal's modes now (a pty's master reads its slave's: raw or cooked, echo).
    pub fn termios(&self) -> nix::sys::termios::Termios {
        nix::sys::termios::tcgetattr(&self.master).expect("tcgetattr on the pty")
    }

    /// Changes the terminal's size (the kernel sends SIGWINCH to its foreground group).
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads a winsize from the pointer given, which lives on this stack.
        let rc = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
        assert_eq!(rc, 0, "TIOCSWINSZ");
    }

    /// Waits for the command's exit status (`128 + n` for a signal), reading the terminal
    /// meanwhile so the command never blocks on it.
    pub fn wait_exit(&mut self, timeout: Duration) -> i32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.pump(Duration::from_millis(50));
                return status.code().unwrap_or_else(|| {
                    128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
                });
            }
            assert!(
                Instant::now() < deadline,
                "the command did not exit; the terminal shows:\n{}",
                self.seen
            );
            self.pump(Duration::from_millis(50));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

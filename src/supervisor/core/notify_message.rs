//! The words of systemd's sd_notify protocol, as pure code: one datagram of `KEY=VALUE` lines
//! becomes a [`NotifyMessage`]. Unknown keys are counted and otherwise ignored (systemd adds
//! keys over time; a daemon may send `FDSTORE=1` and others ctrlinit has no use for).

use std::time::Duration;

/// Longest `STATUS=` kept (a status line, not a log).
pub const STATUS_MAX: usize = 256;

/// What one datagram said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyMessage {
    /// `READY=1`: startup (or a reload) is finished.
    pub ready: bool,
    /// `RELOADING=1`: reloading its configuration.
    pub reloading: bool,
    /// `STOPPING=1`: shutting down.
    pub stopping: bool,
    /// `STATUS=…`: a free-form status line (truncated to [`STATUS_MAX`] bytes).
    pub status: Option<String>,
    /// `MAINPID=N`: the main process is now N.
    pub main_pid: Option<i32>,
    /// `EXTEND_TIMEOUT_USEC=N`: the current start or stop needs N more microseconds.
    pub extend_timeout: Option<Duration>,
    /// `WATCHDOG=1`: alive.
    pub watchdog: bool,
    /// `WATCHDOG=trigger`: act as if the watchdog had been missed.
    pub watchdog_trigger: bool,
    /// `ERRNO=N`: the error the daemon failed with.
    pub errno: Option<i32>,
    /// Lines with a key ctrlinit does not act on, or a value it cannot read.
    pub ignored: u32,
}

impl NotifyMessage {
    /// Parses one datagram. Lines that are not `KEY=VALUE` are ignored (and counted).
    pub fn parse(datagram: &[u8]) -> NotifyMessage {
        let mut m = NotifyMessage::default();
        for line in datagram.split(|&b| b == b'\n') {
            if line.is_empty() {
                continue;
            }
            let Some(eq) = line.iter().position(|&b| b == b'=') else {
                m.ignored += 1;
                continue;
            };
            let (key, value) = (&line[..eq], &line[eq + 1..]);
            if !m.apply(key, value) {
                m.ignored += 1;
            }
        }
        m
    }

    /// Applies one `KEY=VALUE`; false when ctrlinit does not act on it.
    fn apply(&mut self, key: &[u8], value: &[u8]) -> bool {
        let number = || std::str::from_utf8(value).ok()?.trim().parse::<u64>().ok();
        match key {
            b"READY" => self.ready = value == b"1",
            b"RELOADING" => self.reloading = value == b"1",
            b"STOPPING" => self.stopping = value == b"1",
            b"STATUS" => self.status = Some(truncated(value)),
            b"MAINPID" => {
                self.main_pid = number()
                    .and_then(|n| i32::try_from(n).ok())
                    .filter(|&n| n > 1);
                return self.main_pid.is_some();
            }
            b"EXTEND_TIMEOUT_USEC" => {
                self.extend_timeout = number().map(Duration::from_micros);
                return self.extend_timeout.is_some();
            }
            // sd_notify_barrier(): the descriptor it carries is closed once read, which is
            // after every earlier datagram was handled; nothing else to do.
            b"BARRIER" => {}
            b"WATCHDOG" if value == b"1" => self.watchdog = true,
            b"WATCHDOG" if value == b"trigger" => self.watchdog_trigger = true,
            b"ERRNO" => {
                self.errno = number().and_then(|n| i32::try_from(n).ok());
                return self.errno.is_some();
            }
            _ => return false,
        }
        true
    }
}

/// `value` as text, cut at [`STATUS_MAX`] bytes on a character boundary, control characters
/// replaced (it is shown on one line).
fn truncated(value: &[u8]) -> String {
    let text = String::from_utf8_lossy(value);
    let mut end = text.len().min(STATUS_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end]
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_line() {
        let m = NotifyMessage::parse(
            b"READY=1\nSTATUS=Processing requests\nMAINPID=4242\nEXTEND_TIMEOUT_USEC=5000000\nWATCHDOG=1\nERRNO=2\nFDSTORE=1\n",
        );
        assert!(m.ready && m.watchdog && !m.reloading && !m.stopping);
        assert_eq!(m.status.as_deref(), Some("Processing requests"));
        assert_eq!(m.main_pid, Some(4242));
        assert_eq!(m.extend_timeout, Some(Duration::from_secs(5)));
        assert_eq!(m.errno, Some(2));
        assert_eq!(m.ignored, 1);
        let m = NotifyMessage::parse(b"RELOADING=1\nSTOPPING=1\nWATCHDOG=trigger");
        assert!(m.reloading && m.stopping && m.watchdog_trigger && !m.watchdog);
    }

    #[test]
    fn garbage_is_ignored_and_counted() {
        let m = NotifyMessage::parse(
            b"READY\nMAINPID=-3\nMAINPID=1\nEXTEND_TIMEOUT_USEC=x\n\xff\xfe=1\n",
        );
        assert_eq!(
            m,
            NotifyMessage {
                ignored: 5,
                ..NotifyMessage::default()
            }
        );
        assert_eq!(NotifyMessage::parse(b""), NotifyMessage::default());
        assert!(!NotifyMessage::parse(b"READY=0").ready);
    }

    #[test]
    fn a_long_status_is_cut_on_a_character_and_kept_on_one_line() {
        let long = format!(
            "STATUS={}\u{e9}{}",
            "a".repeat(STATUS_MAX - 1),
            "b".repeat(100)
        );
        let m = NotifyMessage::parse(long.as_bytes());
        let s = m.status.unwrap();
        assert!(s.len() <= STATUS_MAX && s.starts_with("aaa") && !s.contains('b'));
        let m = NotifyMessage::parse(b"STATUS=one\ttwo\rthree");
        assert_eq!(m.status.as_deref(), Some("one two three"));
    }
}

//! One syslog message, parsed and written out as a line.
//!
//! RFC 5424 (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG`) is read by `syslog_loose`. The
//! RFC 3164 that local clients send to `/dev/log` is read here: glibc's `syslog()`, `logger`,
//! haproxy and Python's `SysLogHandler` send `<PRI>[TIMESTAMP ]TAG[PID]: MSG` with no hostname
//! (rsyslog's imuxsock parses it so too), where `syslog_loose`'s RFC 3164 takes the tag for a
//! hostname and the first word of an untagged message for the tag. A message of neither form
//! is kept whole as its text, with the default priority (user.notice, as RFC 3164 says).
//!
//! The sender's timestamp and hostname are dropped: the line is timed on arrival, as a program's
//! output is. Bytes that would break a one-record-per-line file are escaped as rsyslog does
//! (`#012` for a newline, `#000` for a NUL: `#` and the octal code of any control character but
//! tab); invalid UTF-8 becomes U+FFFD.

use syslog_loose::{ProcId, Protocol, SyslogFacility, SyslogSeverity, Variant, decompose_pri};

/// The longest message kept, in bytes; the rest of a longer one is cut (and counted).
pub const MESSAGE_MAX: usize = 8 * 1024;

/// A tag longer than this is text (RFC 3164 allows 32; some daemons' names are longer).
const TAG_MAX: usize = 48;

/// The months a BSD timestamp starts with.
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A parsed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// `kern` … `local7` (`user` when the message had no priority, as RFC 3164 says).
    pub(crate) facility: &'static str,
    /// `emerg` … `debug` (`notice` without a priority).
    pub(crate) severity: &'static str,
    /// The severity's number, 0 (emerg) to 7 (debug).
    pub(crate) severity_code: u8,
    /// The tag (RFC 3164) or app-name (RFC 5424), when given.
    pub(crate) tag: Option<String>,
    /// The process id the sender wrote (`tag[pid]`, PROCID), when given.
    pub(crate) pid: Option<String>,
    /// The text, escaped.
    pub(crate) text: String,
}

impl Record {
    /// Parses `bytes` (one message, at most the intake's maximum size).
    pub(crate) fn parse(bytes: &[u8]) -> Record {
        let trimmed = trim_end(bytes);
        let text = escape(&String::from_utf8_lossy(trimmed));
        let (pri, rest) = priority(&text);
        if rest.starts_with("1 ") {
            let m = syslog_loose::parse_message_with_year_tz(
                &text,
                |_| 1970,
                Some(chrono::Utc),
                Variant::RFC5424,
            );
            if matches!(m.protocol, Protocol::RFC5424(_)) {
                return Record::of(
                    (m.facility, m.severity),
                    m.appname,
                    m.procid.map(|p| match p {
                        ProcId::PID(n) => n.to_string(),
                        ProcId::Name(s) => s.to_string(),
                    }),
                    m.msg,
                );
            }
        }
        let (tag, pid, msg) = local_3164(rest);
        let pri = pri.map_or((None, None), decompose_pri);
        Record::of(pri, tag, pid.map(str::to_string), msg)
    }

    fn of(
        (facility, severity): (Option<SyslogFacility>, Option<SyslogSeverity>),
        tag: Option<&str>,
        pid: Option<String>,
        text: &str,
    ) -> Record {
        let severity = severity.unwrap_or(SyslogSeverity::SEV_NOTICE);
        Record {
            facility: facility.unwrap_or(SyslogFacility::LOG_USER).as_str(),
            severity: severity.as_str(),
            severity_code: severity as u8,
            tag: tag
                .filter(|t| !t.is_empty() && *t != "-")
                .map(str::to_string),
            pid: pid.filter(|p| !p.is_empty() && p != "-"),
            text: text.to_string(),
        }
    }

    /// The level ctrlinit's JSON lines use: `error` (emerg to err), `warn`, `info` (notice,
    /// info) or `debug`.
    pub(crate) fn level(&self) -> &'static str {
        match self.severity_code {
            0..=3 => "error",
            4 => "warn",
            5 | 6 => "info",
            _ => "debug",
        }
    }

    /// The line as it goes to a log file and a prefixed console: `SEVERITY TAG[PID]: TEXT`.
    pub(crate) fn line(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.severity.as_bytes());
        out.push(b' ');
        if let Some(tag) = &self.tag {
            out.extend_from_slice(tag.as_bytes());
            if let Some(pid) = &self.pid {
                out.push(b'[');
                out.extend_from_slice(pid.as_bytes());
                out.push(b']');
            }
            out.extend_from_slice(b": ");
        }
        out.extend_from_slice(self.text.as_bytes());
        out.push(b'\n');
    }
}

/// `<PRI>` at the start of `s` (0 to 191), and what follows it.
fn priority(s: &str) -> (Option<u8>, &str) {
    let Some(after) = s.strip_prefix('<') else {
        return (None, s);
    };
    let Some((digits, rest)) = after.split_once('>') else {
        return (None, s);
    };
    match digits.parse::<u8>() {
        Ok(n) if n <= 191 && digits.len() <= 3 && !digits.starts_with('+') => (Some(n), rest),
        _ => (None, s),
    }
}

/// `[TIMESTAMP ]TAG[PID]: MSG` as local clients send it: (tag, pid, message). The timestamp
/// is BSD's (`Dec  3 13:04:49`) or RFC 3339's (`2026-12-03T13:04:49.123+00:00`); without a
/// `TAG:` or `TAG[PID]:` word, all of it is the message.
fn local_3164(s: &str) -> (Option<&str>, Option<&str>, &str) {
    let s = skip_timestamp(s);
    let Some((word, msg)) = s.split_once(' ').or(Some((s, ""))) else {
        return (None, None, s);
    };
    let Some(word) = word.strip_suffix(':') else {
        return (None, None, s);
    };
    let (tag, pid) = match word.strip_suffix(']').and_then(|w| w.split_once('[')) {
        Some((tag, pid)) => (tag, Some(pid)),
        None => (word, None),
    };
    if tag.is_empty() || tag.len() > TAG_MAX || tag.contains(['[', ']', ':', '<', '>']) {
        return (None, None, s);
    }
    (Some(tag), pid, msg)
}

/// `s` after a leading BSD or RFC 3339 timestamp and its space (`s` when it has none).
fn skip_timestamp(s: &str) -> &str {
    let b = s.as_bytes();
    let bsd = b.len() >= 16
        && MONTHS.iter().any(|m| s.starts_with(m))
        && (b[3], b[6], b[9], b[12], b[15]) == (b' ', b' ', b':', b':', b' ');
    if bsd {
        return &s[16..];
    }
    let iso =
        b.len() > 20 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[10] == b'T';
    match s.split_once(' ') {
        Some((_, rest)) if iso => rest,
        _ => s,
    }
}

/// `bytes` without the newlines and NULs clients end a message with.
fn trim_end(mut bytes: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r' | 0] = bytes {
        bytes = rest;
    }
    bytes
}

/// Control characters but tab as `#` and their octal code, as rsyslog writes them: C0 and DEL
/// (`#033` for ESC), and C1 too (`#233` for U+009B, a CSI of its own to a terminal that reads
/// 8-bit controls). The whole message is escaped before it is parsed, so its tag, pid and text
/// (every field any line, console or JSON, shows) come out escaped.
fn escape(s: &str) -> String {
    if !s.chars().any(escaped) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if escaped(c) {
            out.push_str(&format!("#{:03o}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `c` is written as its code: a control character (C0, DEL, C1) other than tab.
fn escaped(c: char) -> bool {
    c.is_control() && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(r: &Record) -> String {
        let mut out = Vec::new();
        r.line(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rfc3164_as_glibc_sends_it() {
        let r = Record::parse(b"<30>Dec  3 13:04:49 haproxy[42]: Proxy fe started.\n");
        assert_eq!(
            (r.facility, r.severity, r.level()),
            ("daemon", "info", "info")
        );
        assert_eq!(r.tag.as_deref(), Some("haproxy"));
        assert_eq!(r.pid.as_deref(), Some("42"));
        assert_eq!(line(&r), "info haproxy[42]: Proxy fe started.\n");
    }

    #[test]
    fn rfc5424() {
        let r = Record::parse(
            b"<131>1 2026-12-03T13:04:49.123Z host app 77 ID1 [ex@1 a=\"b\"] disk on fire",
        );
        assert_eq!(
            (r.facility, r.severity, r.level()),
            ("local0", "err", "error")
        );
        assert_eq!(r.tag.as_deref(), Some("app"));
        assert_eq!(r.pid.as_deref(), Some("77"));
        assert_eq!(r.text, "disk on fire");
    }

    #[test]
    fn no_priority_nuls_newlines_and_invalid_utf8() {
        let r = Record::parse(b"plain\0text\nmore \xff\xfe end\0");
        assert_eq!((r.facility, r.severity), ("user", "notice"));
        let l = line(&r);
        assert!(
            l.contains("plain#000text#012more \u{fffd}\u{fffd} end"),
            "{l}"
        );
        assert_eq!(l.matches('\n').count(), 1, "one record, one line: {l:?}");
        let r = Record::parse(b"");
        assert_eq!(line(&r), "notice \n");
    }

    #[test]
    fn terminal_escapes_in_the_tag_and_text_are_written_as_codes() {
        let r = Record::parse(
            "<13>ev\u{1b}(0;x\u{7}il\u{9b}2J[7]: a\u{9b}31m\u{1b}[2Jb\u{85}".as_bytes(),
        );
        let l = line(&r);
        assert_eq!(r.tag.as_deref(), Some("ev#033(0;x#007il#2332J"), "{l}");
        assert_eq!(r.text, "a#23331m#033[2Jb#205", "{l}");
        assert!(!l.chars().any(|c| c.is_control() && c != '\n'), "{l:?}");
        let r = Record::parse("<14>1 2026-12-03T13:04:49Z h ap\u{9b}p 1 - - t\u{9b}".as_bytes());
        assert!(
            !line(&r).chars().any(|c| c.is_control() && c != '\n'),
            "{r:?}"
        );
    }

    #[test]
    fn local_forms_without_a_hostname() {
        let r = Record::parse(b"<13>Dec  3 13:34:35 logger-tag: from outside");
        assert_eq!(
            (r.tag.as_deref(), r.text.as_str()),
            (Some("logger-tag"), "from outside")
        );
        let r = Record::parse(b"<13>Dec  3 13:34:35 just some text");
        assert_eq!((r.tag, r.text.as_str()), (None, "just some text"));
        // Python's SysLogHandler: no timestamp.
        let r = Record::parse(b"<11>myapp: it broke");
        assert_eq!(
            (r.severity, r.tag.as_deref(), r.text.as_str()),
            ("err", Some("myapp"), "it broke")
        );
        let r = Record::parse(b"<14>2026-12-03T13:04:49.123456+00:00 app[5]: iso");
        assert_eq!(
            (r.tag.as_deref(), r.pid.as_deref(), r.text.as_str()),
            (Some("app"), Some("5"), "iso")
        );
        // Not a priority: text whole, the default priority.
        let r = Record::parse(b"<999>x: y");
        assert_eq!(
            (r.facility, r.severity, r.text.as_str()),
            ("user", "notice", "<999>x: y")
        );
    }
}

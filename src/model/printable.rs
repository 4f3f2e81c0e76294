//! Text from outside (a peer's answer, a ledger record, a syslog tag, a program's name in a
//! foreign file) made safe to show on a terminal or in a log: a control character in it could
//! move the cursor, clear the screen or retitle the window of whoever reads `status`, the
//! console or `ctrlinit.log`. `--json` escapes by its own rules; this is for text shown as text.

use std::borrow::Cow;

/// `s` with every control character (C0, DEL and C1, tab included, newline included) written as
/// a visible escape: `\n`, `\r`, `\t`, `\e` for ESC, `\\` for a backslash that could otherwise
/// make an escape look forged, and `\xNN` / `\u{NNNN}` for the rest. Borrowed when nothing needs
/// escaping, which is the usual case, so the common path allocates nothing.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// The same as [`escape_controls`] for bytes that may not be UTF-8: invalid sequences are shown
/// as `\xNN` of each byte, never as raw bytes.
pub fn escape_bytes(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => escape_controls(s),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    push_escaped(&mut out, c);
                }
                for b in chunk.invalid() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            Cow::Owned(out)
        }
    }
}

fn needs_escape(c: char) -> bool {
    c.is_control() || c == '\\'
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{1b}' => out.push_str("\\e"),
        '\\' => out.push_str("\\\\"),
        c if (c as u32) < 0x100 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(
            escape_controls("api ready: ok é"),
            Cow::Borrowed("api ready: ok é")
        ));
    }

    #[test]
    fn terminal_escapes_become_visible() {
        assert_eq!(
            escape_controls("\u{1b}[2J\u{1b}]0;pwned\u{7}x"),
            "\\e[2J\\e]0;pwned\\x07x"
        );
        assert_eq!(escape_controls("a\nb\rc\td"), "a\\nb\\rc\\td");
        assert_eq!(escape_controls("\u{9b}31m"), "\\x9b31m");
        assert_eq!(escape_controls("\u{7f}"), "\\x7f");
    }

    #[test]
    fn a_backslash_cannot_forge_an_escape() {
        assert_eq!(escape_controls("\\e[2J"), "\\\\e[2J");
    }

    #[test]
    fn invalid_utf8_is_shown_byte_by_byte() {
        assert_eq!(escape_bytes(b"ok\xff\x1b"), "ok\\xff\\e");
        assert_eq!(escape_bytes(b"fine"), "fine");
    }
}

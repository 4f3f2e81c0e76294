//! Signal names as users write and read them: `SIGTERM`, `TERM`, `term`, or a number.

use std::str::FromStr;

use nix::sys::signal::Signal;

/// Parses a signal name: `"SIGTERM"`, `"TERM"` or `"term"`, or a number.
pub fn parse_signal(s: &str) -> Result<Signal, String> {
    let upper = s.trim().to_ascii_uppercase();
    if let Ok(n) = upper.parse::<i32>() {
        return Signal::try_from(n).map_err(|_| format!("{n} is not a signal number"));
    }
    let full = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    Signal::from_str(&full).map_err(|_| format!("{s:?} is not a signal name"))
}

/// The conventional name of signal number `sig` (`SIGSEGV`), or `SIG<n>` for unknown numbers.
pub fn signal_name(sig: i32) -> String {
    match Signal::try_from(sig) {
        Ok(s) => s.as_str().to_string(),
        Err(_) => format!("SIG{sig}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals() {
        assert_eq!(parse_signal("SIGTERM").unwrap(), Signal::SIGTERM);
        assert_eq!(parse_signal("hup").unwrap(), Signal::SIGHUP);
        assert_eq!(parse_signal("9").unwrap(), Signal::SIGKILL);
        assert!(parse_signal("SIGNOPE").is_err());
        assert_eq!(signal_name(11), "SIGSEGV");
    }
}

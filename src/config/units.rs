//! Parsers for the units config values are written in: durations, byte sizes, signal names.

use std::str::FromStr;
use std::time::Duration;

use nix::sys::signal::Signal;

/// The longest duration accepted: deadlines are instants, and `now + d` must not overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(3_155_760_000); // 100 years of 365.25 days

/// Parses a duration such as `"500ms"`, `"9s"`, `"1m 30s"` (humantime's syntax); `"0"` is zero.
/// At most [`MAX_DURATION`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    // humantime panics on numbers near u64::MAX (its carry into seconds overflows); no sane
    // duration needs more than 12 digits in one number.
    let longest_number = s
        .split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    if longest_number > 12 {
        return Err("the number is too large".into());
    }
    let d = humantime::parse_duration(s).map_err(|e| format!("{e}"))?;
    if d > MAX_DURATION {
        return Err("longer than 100 years".into());
    }
    Ok(d)
}

/// Parses a byte size such as `"10MiB"`, `"512k"`, `"1 GB"` or `"4096"`.
///
/// Binary units (`KiB`, `MiB`, `GiB`) and their short forms (`K`, `M`, `G`) are powers of 1024;
/// `KB`, `MB`, `GB` are powers of 1000, as on a disk label.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} does not start with a number"))?;
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        other => return Err(format!("unknown size unit {other:?}")),
    };
    Ok((number * multiplier as f64) as u64)
}

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
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("9s").unwrap(), Duration::from_secs(9));
        assert_eq!(parse_duration("1m 30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("18446744073709551615s1000ms").is_err());
        assert!(parse_duration("300000000000y").is_err());
        assert!(parse_duration("101y").is_err());
        assert_eq!(
            parse_duration("100y").unwrap(),
            Duration::from_secs(3_155_760_000)
        );
        assert!(parse_duration("5").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("10MiB").unwrap(), 10 << 20);
        assert_eq!(parse_size("512k").unwrap(), 512 << 10);
        assert_eq!(parse_size("1 GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("10 parsecs").is_err());
    }

    #[test]
    fn signals() {
        assert_eq!(parse_signal("SIGTERM").unwrap(), Signal::SIGTERM);
        assert_eq!(parse_signal("hup").unwrap(), Signal::SIGHUP);
        assert_eq!(parse_signal("9").unwrap(), Signal::SIGKILL);
        assert!(parse_signal("SIGNOPE").is_err());
        assert_eq!(signal_name(11), "SIGSEGV");
    }
}

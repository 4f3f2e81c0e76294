//! supervisord's value types (its `datatypes.py`): what it accepts for an integer, a boolean,
//! a byte size, a signal, an octal mask, exit codes, `autorestart` and a log file name. A value
//! it would refuse is refused here too, with the same reason.

/// Python's `int()` of a string: optional blanks, an optional sign, digits (single `_` between
/// digits allowed).
pub fn integer(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let ok = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
    let n: Option<i64> = ok.then(|| digits.replace('_', "").parse().ok()).flatten();
    match n {
        Some(n) if neg => Ok(-n),
        Some(n) => Ok(n),
        None => Err(format!("{s:?} is not a whole number")),
    }
}

/// supervisord's booleans: `yes`, `true`, `on`, `1` and `no`, `false`, `off`, `0`, any case.
pub fn boolean(s: &str) -> Result<bool, String> {
    match s.to_lowercase().as_str() {
        "yes" | "true" | "on" | "1" => Ok(true),
        "no" | "false" | "off" | "0" => Ok(false),
        _ => Err(format!(
            "{s:?} is not a boolean (true/false, yes/no, on/off, 1/0)"
        )),
    }
}

/// A byte size: a number, or one ending in `KB`, `MB`, `GB` (powers of 1024, any case).
pub fn byte_size(s: &str) -> Result<u64, String> {
    let lower = s.to_lowercase();
    let (digits, mult) = if let Some(d) = lower.strip_suffix("kb") {
        (d, 1u64 << 10)
    } else if let Some(d) = lower.strip_suffix("mb") {
        (d, 1 << 20)
    } else if let Some(d) = lower.strip_suffix("gb") {
        (d, 1 << 30)
    } else {
        (lower.as_str(), 1)
    };
    let n = integer(digits).map_err(|_| format!("{s:?} is not a byte size (such as 50MB)"))?;
    u64::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a byte size (such as 50MB)"))
}

/// A signal by number or name (`TERM`, `SIGTERM`, `15`), as ctrlinit writes it (`SIGTERM`).
pub fn signal(s: &str) -> Result<String, String> {
    crate::model::signals::parse_signal(s)
        .map(|sig| sig.as_str().to_string())
        .map_err(|_| format!("{s:?} is not a valid signal name or number"))
}

/// An octal mask (`022`, `0o22`).
pub fn octal(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let digits = t
        .strip_prefix("0o")
        .or_else(|| t.strip_prefix("0O"))
        .unwrap_or(t);
    u32::from_str_radix(&digits.replace('_', ""), 8)
        .map_err(|_| format!("{s:?} can not be converted to an octal type"))
}

/// Exit codes: whole numbers from 0 to 255, separated by commas.
pub fn exitcodes(s: &str) -> Result<Vec<i64>, String> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    s.split(',')
        .map(|c| match integer(c) {
            Ok(n) if (0..=255).contains(&n) => Ok(n),
            _ => Err(format!("{s:?} is not a valid list of exit codes")),
        })
        .collect()
}

/// A comma-separated list, each item trimmed (an empty value is an empty list).
pub fn list_of_strings(s: &str) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    s.split(',').map(|x| x.trim().to_string()).collect()
}

/// `autorestart`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoRestart {
    /// `true`: whatever the exit.
    Always,
    /// `false`: never.
    Never,
    /// `unexpected`: when the exit code is not one of `exitcodes`.
    Unexpected,
}

/// Parses `autorestart`.
pub fn auto_restart(s: &str) -> Result<AutoRestart, String> {
    if s.eq_ignore_ascii_case("unexpected") {
        return Ok(AutoRestart::Unexpected);
    }
    match boolean(s) {
        Ok(true) => Ok(AutoRestart::Always),
        Ok(false) => Ok(AutoRestart::Never),
        Err(_) => Err(format!(
            "invalid 'autorestart' value {:?}",
            s.to_lowercase()
        )),
    }
}

/// Where a stream's lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    /// `AUTO`: a file supervisord names in `childlogdir`.
    Auto,
    /// `NONE`/`OFF`: nowhere.
    Nowhere,
    /// `syslog` (the deprecated spelling of `*_syslog = true`).
    Syslog,
    /// supervisord's own standard output or error (`/dev/stdout`, `/dev/fd/2` …): the
    /// container's log.
    Console,
    /// A file of its own.
    File(String),
}

/// Parses a `stdout_logfile` / `stderr_logfile` value.
pub fn logfile(s: &str) -> LogTarget {
    match s.to_lowercase().as_str() {
        "none" | "off" => LogTarget::Nowhere,
        "auto" => LogTarget::Auto,
        "syslog" => LogTarget::Syslog,
        "/dev/stdout" | "/dev/stderr" | "/dev/fd/1" | "/dev/fd/2" | "/proc/self/fd/1"
        | "/proc/self/fd/2" | "/proc/1/fd/1" | "/proc/1/fd/2" => LogTarget::Console,
        _ => LogTarget::File(s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_supervisord_reads_them() {
        assert_eq!(integer(" 5 "), Ok(5));
        assert_eq!(integer("+5"), Ok(5));
        assert_eq!(integer("1_000"), Ok(1000));
        assert!(integer("0x10").is_err());
        assert!(integer("5s").is_err());
        assert_eq!(boolean("Yes"), Ok(true));
        assert_eq!(boolean("off"), Ok(false));
        assert!(boolean("maybe").is_err());
        assert_eq!(byte_size("50MB"), Ok(50 << 20));
        assert_eq!(byte_size("0"), Ok(0));
        assert_eq!(byte_size("10kb"), Ok(10 << 10));
        assert!(byte_size("10MiB").is_err());
        assert_eq!(signal("TERM").as_deref(), Ok("SIGTERM"));
        assert_eq!(signal("sigquit").as_deref(), Ok("SIGQUIT"));
        assert_eq!(signal("9").as_deref(), Ok("SIGKILL"));
        assert!(signal("FOO").is_err());
        assert_eq!(octal("022"), Ok(0o22));
        assert_eq!(octal("0755"), Ok(0o755));
        assert!(octal("9").is_err());
        assert_eq!(exitcodes("0,2"), Ok(vec![0, 2]));
        assert!(exitcodes("256").is_err());
        assert_eq!(auto_restart("unexpected"), Ok(AutoRestart::Unexpected));
        assert_eq!(auto_restart("TRUE"), Ok(AutoRestart::Always));
        assert_eq!(logfile("/dev/fd/1"), LogTarget::Console);
        assert_eq!(logfile("AUTO"), LogTarget::Auto);
        assert_eq!(
            logfile("/var/log/x.log"),
            LogTarget::File("/var/log/x.log".into())
        );
    }
}

//! Durations as users write them, in config values and on the command line (`--timeout 30s`).

use std::time::Duration;

/// The longest duration accepted: deadlines are instants, and `now + d` must not overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(3_155_760_000); // 100 years of 365.25 days

/// The units a duration may be written in, longest spellings first within each unit, and what
/// one of each is worth in milliseconds. Months and years are left out on purpose: their length
/// varies, and nobody sets a restart window in months.
const DURATION_UNITS: &[(&str, u64)] = &[
    ("milliseconds", 1),
    ("millisecond", 1),
    ("msecs", 1),
    ("msec", 1),
    ("ms", 1),
    ("seconds", 1_000),
    ("second", 1_000),
    ("secs", 1_000),
    ("sec", 1_000),
    ("s", 1_000),
    ("minutes", 60_000),
    ("minute", 60_000),
    ("mins", 60_000),
    ("min", 60_000),
    ("m", 60_000),
    ("hours", 3_600_000),
    ("hour", 3_600_000),
    ("hrs", 3_600_000),
    ("hr", 3_600_000),
    ("h", 3_600_000),
    ("days", 86_400_000),
    ("day", 86_400_000),
    ("d", 86_400_000),
];

/// What every duration error ends with.
const DURATION_HINT: &str = "use a number and a unit: 500ms, 5s, 2m, 1h";

/// Parses a duration: one or more `<number><unit>` parts, spaces allowed between them and between
/// a number and its unit (`"500ms"`, `"5s"`, `"1.5s"`, `"1m 30s"`, `"5 secs"`, `"2 minutes"`).
/// Units: `ms`, `s`, `m`, `h`, `d` and their long forms (`sec`, `secs`, `second(s)`, `min`,
/// `mins`, `minute(s)`, `hr`, `hrs`, `hour(s)`, `day(s)`, `msec`, `millisecond(s)`). `"0"` alone
/// is zero. At most [`MAX_DURATION`]. Errors are one line in ctrlinit's words.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err(format!("an empty duration — {DURATION_HINT}"));
    }
    let mut rest = text;
    let mut total_ms: f64 = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(digits);
        if number.is_empty() {
            return Err(format!("`{text}` is not a duration — {DURATION_HINT}"));
        }
        // No sane duration needs more than 12 digits in one number; f64 stays exact below that.
        if number.len() > 12 {
            return Err(format!(
                "`{text}`: the number is too large — {DURATION_HINT}"
            ));
        }
        let value: f64 = number
            .parse()
            .map_err(|_| format!("`{text}`: `{number}` is not a number — {DURATION_HINT}"))?;
        let after = after.trim_start();
        let unit_len = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let (unit, tail) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(format!("`{text}` has no unit — {DURATION_HINT}"));
        }
        let Some((_, per)) = DURATION_UNITS
            .iter()
            // `M` is a month in some tools and a minute in others: refuse to guess.
            .find(|(name, _)| name.eq_ignore_ascii_case(unit) && unit != "M")
        else {
            return Err(format!(
                "`{text}`: unknown unit `{unit}` — {DURATION_HINT} (units: ms, s, m, h, d)"
            ));
        };
        total_ms += value * *per as f64;
        rest = tail.trim_start();
    }
    if total_ms > MAX_DURATION.as_millis() as f64 {
        return Err(format!(
            "`{text}` is longer than 100 years — {DURATION_HINT}"
        ));
    }
    Ok(Duration::from_secs_f64(total_ms / 1000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("9s").unwrap(), Duration::from_secs(9));
        assert_eq!(parse_duration("1m 30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("5 secs").unwrap(), Duration::from_secs(5));
        assert_eq!(
            parse_duration("2 minutes").unwrap(),
            Duration::from_secs(120)
        );
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("2d").unwrap(), Duration::from_secs(172_800));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("18446744073709551615s1000ms").is_err());
        assert!(parse_duration("300000000000d").is_err());
        assert!(parse_duration("36525d").is_ok());
        assert!(parse_duration("36526d").is_err());
        // Every error is in ctrlinit's words and says how to write one.
        for (input, says) in [
            ("5", "`5` has no unit"),
            ("soon", "`soon` is not a duration"),
            ("5 parsecs", "unknown unit `parsecs`"),
            ("1y", "unknown unit `y`"),
            ("1.2.3s", "`1.2.3` is not a number"),
            ("", "an empty duration"),
        ] {
            let e = parse_duration(input).unwrap_err();
            assert!(e.contains(says), "{input:?}: {e}");
            assert!(
                e.ends_with("500ms, 5s, 2m, 1h") || e.ends_with("h, d)"),
                "{e}"
            );
            assert!(!e.contains("expected"), "{e}");
        }
    }
}

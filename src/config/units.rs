//! Byte sizes as config values are written (durations and signal names are
//! [`crate::model`]'s: the command line speaks them too).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! The readiness check a program starts with (`ready`), and the probe addresses both it and the
//! liveness checks (`[program.NAME.health]`, see `health.rs`) are written with.

use super::reader::{Reader, Value, get, join};
use super::spec::{HttpTarget, LinePattern, ReadyCheck, ReadyProbe};
use super::targets::{UrlProblem, parse_http_url, parse_tcp_target};

/// Every kind of `ready` probe, in the order the fix lists them.
const READY_PROBES: &[&str] = &[
    "tcp", "http", "exec", "file", "notify", "fd", "log", "uptime",
];

pub(super) fn read_ready(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Option<ReadyCheck> {
    let table = r.table(v, path)?;
    let mut known = READY_PROBES.to_vec();
    known.push("interval");
    r.reject_unknown_keys(table, path, &known);
    let probes: Vec<&str> = READY_PROBES
        .iter()
        .copied()
        .filter(|k| get(table, k).is_some())
        .collect();
    if probes.len() != 1 {
        r.error(
            &v.span(),
            path,
            format!("a readiness check needs exactly one probe, found {}", probes.len()),
            Some(r#"use one of { tcp = "127.0.0.1:8080" }, { http = "http://127.0.0.1:8080/ready" }, { exec = ["cmd", "arg"] }, { file = "/run/x.ready" }, { notify = "systemd" }, { fd = 3 }, { log = "ready to accept" }, { uptime = "5s" }"#.into()),
        );
        return None;
    }
    let interval = match get(table, "interval") {
        Some(iv) => r.duration(iv, &join(path, "interval"))?,
        None => std::time::Duration::from_millis(100),
    };
    let probe_key = join(path, probes[0]);
    let pv = get(table, probes[0])?;
    let probe = match probes[0] {
        "tcp" => ReadyProbe::Tcp(tcp_target(r, pv, &probe_key)?),
        "http" => ReadyProbe::Http(http_target(r, pv, &probe_key)?),
        "exec" => ReadyProbe::Exec(r.command(pv, &probe_key)?),
        "notify" => {
            r.choice(pv, &probe_key, &[("systemd", ())])?;
            ReadyProbe::Notify
        }
        "fd" => ReadyProbe::Fd(notification_fd(r, pv, &probe_key)?),
        "log" => ReadyProbe::Log(line_pattern(r, pv, &probe_key)?),
        "uptime" => ReadyProbe::Uptime(uptime(r, pv, &probe_key)?),
        _ => ReadyProbe::File(crate::sys::init::resolve(r.string(pv, &probe_key)?)),
    };
    Some(ReadyCheck { probe, interval })
}

/// A `tcp` probe's address.
pub(super) fn tcp_target(
    r: &mut Reader<'_>,
    v: &Value<'_>,
    key: &str,
) -> Option<std::net::SocketAddr> {
    let s = r.string(v, key)?;
    let addr = parse_tcp_target(&s);
    if addr.is_none() {
        r.error(
            &v.span(),
            key,
            format!("{s:?} is not an address and port"),
            Some(r#"write "127.0.0.1:8080", "[::1]:8080" or "localhost:8080""#.into()),
        );
    }
    addr
}

/// An `http` probe's URL.
pub(super) fn http_target(r: &mut Reader<'_>, v: &Value<'_>, key: &str) -> Option<HttpTarget> {
    let s = r.string(v, key)?;
    match parse_http_url(&s) {
        Ok(t) => Some(t),
        Err(problem) => {
            let (what, fix) = match problem {
                UrlProblem::Https => (
                    format!("{s:?}: https is not supported by checks"),
                    "check the plain-HTTP port on the loopback (http://127.0.0.1:PORT/PATH), or use an exec check with curl".to_string(),
                ),
                UrlProblem::NeedsDns(host) => (
                    format!("{s:?}: the host {host:?} would need a DNS lookup, which PID 1 does not make"),
                    "write an IP address or localhost: http://127.0.0.1:8080/healthz".to_string(),
                ),
                UrlProblem::Shape => (
                    format!("{s:?} is not an http URL"),
                    "write http://HOST:PORT/PATH with HOST an IP address or localhost".to_string(),
                ),
            };
            r.error(&v.span(), key, what, Some(fix));
            None
        }
    }
}

/// `uptime = "5s"`: how long a run must stay up to count as ready; not zero, which would be
/// no check at all.
fn uptime(r: &mut Reader<'_>, v: &Value<'_>, key: &str) -> Option<std::time::Duration> {
    let d = r.duration(v, key)?;
    if d.is_zero() {
        r.error(
            &v.span(),
            key,
            "an uptime of 0 is no check: the program would be ready as soon as it is spawned".into(),
            Some(r#"write how long a run must stay up, e.g. uptime = "5s", or remove `ready` (a program without one is ready once spawned)"#.into()),
        );
        return None;
    }
    Some(d)
}

/// A `ready = { uptime }` that `ready_timeout` would always cut short: said at `ready`.
pub(super) fn check_uptime_fits(
    r: &mut Reader<'_>,
    ready: &Value<'_>,
    key: &str,
    check: &ReadyCheck,
    ready_timeout: std::time::Duration,
) {
    let ReadyProbe::Uptime(up) = check.probe else {
        return;
    };
    if up < ready_timeout {
        return;
    }
    let show = |d| humantime::format_duration(d).to_string();
    r.error(
        &ready.span(),
        &join(key, "uptime"),
        format!(
            "uptime {} is not shorter than ready_timeout ({}): every run would be stopped as not ready before it counts as up",
            show(up),
            show(ready_timeout)
        ),
        Some(format!(
            "set ready_timeout longer than the uptime (ready_timeout = \"{}\"), or shorten the uptime",
            show(up + std::time::Duration::from_secs(10))
        )),
    );
}

/// `fd = N`: a descriptor above stdio the program is started with.
fn notification_fd(r: &mut Reader<'_>, v: &Value<'_>, key: &str) -> Option<i32> {
    let n = r.integer(v, key, 3..1024)?;
    Some(n as i32)
}

/// Longest `log` pattern accepted, in bytes.
pub(crate) const MAX_PATTERN: usize = 4096;

/// Largest compiled program of a `log` pattern, in bytes (`x{1000}{1000}` is short and huge).
const COMPILED_LIMIT: usize = 1 << 20;

/// A regular expression, compiled now so a bad one is a config error, not a start that hangs.
fn line_pattern(r: &mut Reader<'_>, v: &Value<'_>, key: &str) -> Option<LinePattern> {
    let source = r.string(v, key)?;
    // Parsing alone is unbounded by the compiled size limits below: a 1.2 MB pattern took PID 1
    // to 160 MB before compiling failed or passed. A line pattern is a few words.
    if source.len() > MAX_PATTERN {
        r.error(
            &v.span(),
            key,
            format!(
                "the pattern is {} bytes long, longer than the {MAX_PATTERN} bytes a log pattern may be",
                source.len()
            ),
            Some("match a short piece of the line that says the program is ready, e.g. \"ready to accept connections\"".into()),
        );
        return None;
    }
    // Bounded: a pattern is matched against every line on the log thread.
    // Unicode mode off: `\d`, `\w`, `\s` and case-insensitivity are ASCII's, `.` any byte but a
    // newline, and a literal non-ASCII character still matches its UTF-8 bytes. Log lines are
    // bytes; the Unicode tables would cost ctrlinit about 150 KiB of relocated data, resident
    // in every container.
    match regex::bytes::RegexBuilder::new(&source)
        .unicode(false)
        .size_limit(COMPILED_LIMIT)
        .dfa_size_limit(256 << 10)
        .nest_limit(64)
        .build()
    {
        Ok(regex) => Some(LinePattern { source, regex }),
        Err(e) => {
            let detail = e.to_string();
            let last = detail.lines().last().unwrap_or("").trim();
            let last = last.strip_prefix("error: ").unwrap_or(last).to_string();
            r.error(
                &v.span(),
                key,
                format!("{source:?} is not a regular expression: {last}"),
                Some("write a regular expression (Rust regex syntax), e.g. \"ready to accept connections\" or \"listening on .*:8080\"; escape special characters with \\\\".into()),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pattern `ready = { log = PATTERN }` compiles to, from a one-line config.
    fn pattern(source: &str) -> regex::bytes::Regex {
        let text = format!("p = {source:?}\n");
        let table = toml::de::DeTable::parse(&text).unwrap();
        let lookup = |_: &str| None;
        let mut errors = Vec::new();
        let mut r = Reader::new(std::path::Path::new("t.toml"), &text, &lookup, &mut errors);
        let v = table.get_ref().get("p").unwrap();
        line_pattern(&mut r, v, "p").expect("a valid pattern").regex
    }

    /// The error `line_pattern` gives for `source`, if any.
    fn refusal(source: &str) -> Option<String> {
        let text = format!("p = {source:?}\n");
        let table = toml::de::DeTable::parse(&text).unwrap();
        let lookup = |_: &str| None;
        let mut errors = Vec::new();
        let mut r = Reader::new(std::path::Path::new("t.toml"), &text, &lookup, &mut errors);
        let v = table.get_ref().get("p").unwrap();
        let got = line_pattern(&mut r, v, "p");
        drop(r);
        assert_eq!(got.is_none(), !errors.is_empty());
        errors.first().map(|e| format!("{e:?}"))
    }

    #[test]
    fn huge_patterns_are_config_errors() {
        // 1.2 MB of alternatives: refused before it is parsed, with the fix.
        let huge: String = (0..120_000).map(|k| format!("w{k:05}|")).collect();
        let e = refusal(&huge).expect("a 1.2 MB pattern is refused");
        assert!(
            e.contains("longer than the 4096 bytes"),
            "{}",
            &e[..e.len().min(300)]
        );
        // Short but compiling to a huge program: refused by the compiled size limit.
        assert!(refusal("(?:x{1000}){1000}").is_some());
        assert!(refusal(&format!("{}a{}", "(".repeat(100), ")".repeat(100))).is_some());
        assert!(refusal("ready to accept connections").is_none());
    }

    #[test]
    fn log_patterns_match_bytes_with_ascii_classes() {
        let p = pattern(r"port \d+ (?i)READY");
        assert!(p.is_match(b"listening on port 8080 ready"));
        assert!(!p.is_match(b"listening on port x ready"));
        // A literal non-ASCII character matches its UTF-8 bytes; invalid UTF-8 around it is fine.
        let p = pattern("prêt");
        assert!(p.is_match("serveur prêt".as_bytes()));
        assert!(p.is_match(b"\xff\xfe pr\xc3\xaat"));
    }
}

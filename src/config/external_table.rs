//! `[external.NAME]`: a dependency outside the container (another container's port, URL,
//! a command's verdict, or a program of a peer ctrlinit), watched by one check and named in
//! `depends_on` like a program.
//!
//! Invariants: an external has exactly one check kind; its host is kept as written (a name
//! is resolved at every check, so a Swarm VIP that moves is followed); `successes`,
//! `failures` and `interval` are above zero; its name is a valid program name that no program
//! has (checked in `load.rs`, which sees every file).

use std::time::Duration;

use std::collections::HashMap;
use std::path::PathBuf;

use super::error::ConfigError;
use super::external_spec::{ExternalCheck, ExternalSpec, HostPort, OnTimeout};
use super::names::{name_problem, short};
use super::reader::{Reader, Value, get, join};
use super::spec::ProgramSpec;

/// The keys of an `[external.NAME]` table.
pub(super) const EXTERNAL_KEYS: &[&str] = &[
    "tcp",
    "http",
    "exec",
    "ctrlinit",
    "program",
    "interval",
    "timeout",
    "failures",
    "successes",
    "start_timeout",
    "on_timeout",
];

/// The check kinds, in the order the fix lists them.
const KINDS: &[&str] = &["tcp", "http", "exec", "ctrlinit"];

const KIND_FIX: &str = r#"use one of tcp = "config:8082", http = "http://config:8082/healthz", exec = ["check-config-api"], or ctrlinit = "http://config:9100" with program = "api""#;

/// An external read from one file, before the checks that span files.
pub(super) struct LocatedExternal {
    pub spec: ExternalSpec,
    pub file: PathBuf,
    pub line: usize,
}

/// Names across files: each valid, defined once, and no program's; returns the externals
/// sorted by name.
pub(super) fn check_externals(
    externals: Vec<LocatedExternal>,
    programs: &[ProgramSpec],
    errors: &mut Vec<ConfigError>,
) -> Vec<ExternalSpec> {
    let mut first: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for e in externals {
        let name = &e.spec.name;
        let error = |message: String, fix: &str| ConfigError {
            file: e.file.clone(),
            line: Some(e.line),
            key: format!("external.{}", short(name)),
            message,
            fix: Some(fix.to_string()),
        };
        if let Some((message, fix)) = name_problem(name) {
            errors.push(error(message, &fix));
            continue;
        }
        if let Some(at) = first.get(name) {
            errors.push(error(
                format!("external `{name}` is defined twice (first at {at})"),
                "give each external one [external.NAME] table across all files",
            ));
            continue;
        }
        if let Some(p) = programs
            .iter()
            .find(|p| &p.name == name || p.instance.as_ref().is_some_and(|i| &i.group == name))
        {
            errors.push(error(
                format!(
                    "`{name}` is both an external and a program (defined at {})",
                    p.defined_at
                ),
                "rename one of them: depends_on names programs and externals alike",
            ));
            continue;
        }
        first.insert(name.clone(), e.spec.defined_at.clone());
        out.push(e.spec);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Reads `[external.NAME]`; `None` (with errors said) when it is not usable.
pub(super) fn read_external(
    r: &mut Reader<'_>,
    name: &str,
    v: &Value<'_>,
    defined_at: String,
) -> Option<ExternalSpec> {
    let path = format!("external.{name}");
    let table = r.table(v, &path)?;
    r.reject_unknown_keys(table, &path, EXTERNAL_KEYS);
    let key = |k: &str| join(&path, k);
    let mut ok = true;
    let mut times = [
        ("interval", Duration::from_secs(2)),
        ("timeout", Duration::from_secs(1)),
    ];
    for (k, slot) in times.iter_mut() {
        if let Some(tv) = get(table, k) {
            match r.positive_duration(tv, &key(k), "2s") {
                Some(d) => *slot = d,
                None => ok = false,
            }
        }
    }
    let mut counts = [("failures", 3u32), ("successes", 1u32)];
    for (k, slot) in counts.iter_mut() {
        if let Some(cv) = get(table, k) {
            match r.integer(cv, &key(k), 1..1001) {
                Some(n) => *slot = n as u32,
                None => ok = false,
            }
        }
    }
    let start_timeout = match get(table, "start_timeout") {
        Some(tv) => {
            let d = r.positive_duration(tv, &key("start_timeout"), "2s");
            ok &= d.is_some();
            d
        }
        None => None,
    };
    let on_timeout = match get(table, "on_timeout") {
        Some(ov) => {
            let choices = [("wait", OnTimeout::Wait), ("exit", OnTimeout::Exit)];
            let c = r.choice(ov, &key("on_timeout"), &choices);
            ok &= c.is_some();
            c.unwrap_or(OnTimeout::Wait)
        }
        None => OnTimeout::Wait,
    };
    let check = read_kind(r, table, v, &path);
    Some(ExternalSpec {
        name: name.to_string(),
        check: check.filter(|_| ok)?,
        interval: times[0].1,
        timeout: times[1].1,
        failures: counts[0].1,
        successes: counts[1].1,
        start_timeout,
        on_timeout,
        defined_at,
    })
}

/// Exactly one of `tcp`, `http`, `exec`, `ctrlinit` (with `program`).
fn read_kind(
    r: &mut Reader<'_>,
    table: &toml::de::DeTable<'_>,
    v: &Value<'_>,
    path: &str,
) -> Option<ExternalCheck> {
    let kinds: Vec<&str> = KINDS
        .iter()
        .copied()
        .filter(|k| get(table, k).is_some())
        .collect();
    if kinds.len() != 1 {
        let found = if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(" and ")
        };
        r.error(
            &v.span(),
            path,
            format!("an external dependency needs exactly one check kind, found {found}"),
            Some(KIND_FIX.into()),
        );
        return None;
    }
    let kind = kinds[0];
    let key = join(path, kind);
    let kv = get(table, kind)?;
    let program = get(table, "program");
    if kind != "ctrlinit"
        && let Some(pv) = program
    {
        r.error(
            &pv.span(),
            &join(path, "program"),
            format!("program belongs to a ctrlinit check, not to {kind}"),
            Some(
                r#"remove program, or use ctrlinit = "http://HOST:PORT" with program = "NAME""#
                    .into(),
            ),
        );
        return None;
    }
    match kind {
        "tcp" => {
            let s = r.string(kv, &key)?;
            match parse_host_port(&s) {
                Some(at) => Some(ExternalCheck::Tcp(at)),
                None => {
                    r.error(
                        &kv.span(),
                        &key,
                        format!("{s:?} is not a host and port"),
                        Some(r#"write "config:8082", "10.0.0.5:8082" or "[fd00::5]:8082""#.into()),
                    );
                    None
                }
            }
        }
        "http" => {
            let url = r.string(kv, &key)?;
            let Some((at, path)) = parse_url(&url) else {
                r.error(
                    &kv.span(),
                    &key,
                    format!("{url:?} is not an http URL"),
                    Some("write http://HOST[:PORT]/PATH (plain HTTP; https is not checked)".into()),
                );
                return None;
            };
            Some(ExternalCheck::Http { url, at, path })
        }
        "exec" => Some(ExternalCheck::Exec(r.command(kv, &key)?)),
        _ => read_peer(r, kv, v, &key, program, path),
    }
}

/// `ctrlinit = "http://HOST:PORT"` with `program = "NAME"`.
fn read_peer(
    r: &mut Reader<'_>,
    kv: &Value<'_>,
    v: &Value<'_>,
    key: &str,
    program: Option<&Value<'_>>,
    path: &str,
) -> Option<ExternalCheck> {
    let url = r.string(kv, key)?;
    let at = match parse_url(&url) {
        Some((at, p)) if p == "/" => Some(at),
        _ => {
            r.error(
                &kv.span(),
                key,
                format!("{url:?} is not a peer's probe endpoint"),
                Some("write the peer's [init] http address as http://HOST:PORT, no path".into()),
            );
            None
        }
    };
    let Some(pv) = program else {
        r.error(
            &v.span(),
            path,
            "a ctrlinit check needs program: which of the peer's programs it watches".into(),
            Some(format!("add program = \"api\" beside ctrlinit = {url:?}")),
        );
        return None;
    };
    let program = r.string(pv, &join(path, "program"))?;
    if program.is_empty() {
        r.error(
            &pv.span(),
            &join(path, "program"),
            "the peer's program name is empty".into(),
            Some("name one of the peer's programs, e.g. program = \"api\"".into()),
        );
        return None;
    }
    Some(ExternalCheck::Ctrlinit { at: at?, program })
}

/// `host:port` or `[v6]:port`; a host is an IP literal or a DNS name (letters, digits, `-`,
/// `_`, `.`).
pub(super) fn parse_host_port(s: &str) -> Option<HostPort> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest.split_once("]:")?;
        h.parse::<std::net::Ipv6Addr>().ok()?;
        (h, p)
    } else {
        s.rsplit_once(':')?
    };
    let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
    let name_ok = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    name_ok.then(|| HostPort {
        host: host.to_string(),
        port,
    })
}

/// `http://HOST[:PORT][/PATH]`: where to connect, and the path (`/` when none).
fn parse_url(url: &str) -> Option<(HostPort, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    if path.contains(char::is_whitespace) || authority.contains('@') {
        return None;
    }
    let has_port = authority
        .rfind(':')
        .is_some_and(|i| !authority[i..].contains(']'));
    let with_port = if has_port {
        authority.to_string()
    } else if authority.contains(':') && !authority.starts_with('[') {
        return None;
    } else {
        format!("{authority}:80")
    };
    Some((parse_host_port(&with_port)?, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports() {
        let hp = parse_host_port("config:8082").unwrap();
        assert_eq!((hp.host.as_str(), hp.port), ("config", 8082));
        assert_eq!(parse_host_port("[::1]:80").unwrap().host, "::1");
        assert_eq!(parse_host_port("[::1]:80").unwrap().to_string(), "[::1]:80");
        assert!(parse_host_port("config").is_none());
        assert!(parse_host_port("config:0").is_none());
        assert!(parse_host_port("a b:80").is_none());
        assert!(parse_host_port(":80").is_none());
    }

    #[test]
    fn urls() {
        let (at, path) = parse_url("http://config:8082/healthz").unwrap();
        assert_eq!(at.to_string(), "config:8082");
        assert_eq!(path, "/healthz");
        let (at, path) = parse_url("http://config").unwrap();
        assert_eq!((at.port, path.as_str()), (80, "/"));
        assert!(parse_url("https://config/").is_none());
        assert!(parse_url("http://u@config/").is_none());
    }
}

//! Checks a program is watched with: its readiness check (`ready`).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use super::reader::{Reader, Value, get, join};
use super::spec::{ReadyCheck, ReadyProbe};

pub(super) fn read_ready(r: &mut Reader<'_>, v: &Value<'_>, path: &str) -> Option<ReadyCheck> {
    let table = r.table(v, path)?;
    r.reject_unknown_keys(table, path, &["tcp", "exec", "file", "interval"]);
    let probes: Vec<&str> = ["tcp", "exec", "file"]
        .into_iter()
        .filter(|k| get(table, k).is_some())
        .collect();
    if probes.len() != 1 {
        r.error(
            &v.span(),
            path,
            format!("a readiness check needs exactly one probe, found {}", probes.len()),
            Some(r#"use one of { tcp = "127.0.0.1:8080" }, { exec = ["cmd", "arg"] }, { file = "/run/x.ready" }"#.into()),
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
        "tcp" => {
            let s = r.string(pv, &probe_key)?;
            match parse_tcp_target(&s) {
                Some(addr) => ReadyProbe::Tcp(addr),
                None => {
                    r.error(
                        &pv.span(),
                        &probe_key,
                        format!("{s:?} is not an address and port"),
                        Some(r#"write "127.0.0.1:8080", "[::1]:8080" or "localhost:8080""#.into()),
                    );
                    return None;
                }
            }
        }
        "exec" => ReadyProbe::Exec(r.command(pv, &probe_key)?),
        _ => ReadyProbe::File(PathBuf::from(r.string(pv, &probe_key)?)),
    };
    Some(ReadyCheck { probe, interval })
}

/// `ip:port`, `localhost:port` or `:port` (loopback). No DNS: a lookup would block the supervisor.
fn parse_tcp_target(s: &str) -> Option<SocketAddr> {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Some(addr);
    }
    let port = s
        .strip_prefix("localhost:")
        .or_else(|| s.strip_prefix(':'))?;
    Some(SocketAddr::from((
        Ipv4Addr::LOCALHOST,
        port.parse::<u16>().ok()?,
    )))
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_targets() {
        assert_eq!(
            parse_tcp_target("127.0.0.1:80").unwrap().to_string(),
            "127.0.0.1:80"
        );
        assert_eq!(
            parse_tcp_target("localhost:8080").unwrap().to_string(),
            "127.0.0.1:8080"
        );
        assert_eq!(parse_tcp_target(":99").unwrap().to_string(), "127.0.0.1:99");
        assert!(parse_tcp_target("db.example:80").is_none());
        assert!(parse_tcp_target("127.0.0.1").is_none());
    }
}

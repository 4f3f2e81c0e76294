//! Where network checks connect: `tcp` addresses and `http` URLs. No DNS: a lookup can block for
//! seconds, and PID 1 must not wait on a resolver; the host is an IP literal or `localhost`.

use std::net::{Ipv4Addr, SocketAddr};

use super::spec::HttpTarget;

/// `ip:port`, `localhost:port` or `:port` (loopback).
pub(super) fn parse_tcp_target(s: &str) -> Option<SocketAddr> {
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

/// Why a URL is not one an `http` check can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum UrlProblem {
    /// `https://` (no TLS in PID 1).
    Https,
    /// Not `http://HOST[:PORT][/PATH]`.
    Shape,
    /// A host name that would need a DNS lookup.
    NeedsDns(String),
}

/// `http://HOST[:PORT][/PATH?QUERY]` with HOST an IP literal (`[::1]` for IPv6) or `localhost`.
pub(super) fn parse_http_url(url: &str) -> Result<HttpTarget, UrlProblem> {
    if url.starts_with("https://") {
        return Err(UrlProblem::Https);
    }
    let rest = url.strip_prefix("http://").ok_or(UrlProblem::Shape)?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.is_empty() || authority.contains('@') || path.contains(char::is_whitespace) {
        return Err(UrlProblem::Shape);
    }
    let with_port = if has_port(authority) {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = parse_tcp_target(&with_port).ok_or_else(|| {
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        if host.parse::<std::net::IpAddr>().is_err() && !host.starts_with('[') {
            UrlProblem::NeedsDns(host.to_string())
        } else {
            UrlProblem::Shape
        }
    })?;
    Ok(HttpTarget {
        url: url.to_string(),
        addr,
        host: authority.to_string(),
        path,
    })
}

/// Whether an authority ends in `:PORT` (an IPv6 literal's colons are inside brackets).
fn has_port(authority: &str) -> bool {
    match authority.rfind(':') {
        Some(i) => !authority[i..].contains(']') && !authority.starts_with("::"),
        None => false,
    }
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

    #[test]
    fn http_urls() {
        let t = parse_http_url("http://127.0.0.1:8080/healthz?deep=1").unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.1:8080");
        assert_eq!(t.host, "127.0.0.1:8080");
        assert_eq!(t.path, "/healthz?deep=1");
        let t = parse_http_url("http://localhost").unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.1:80");
        assert_eq!(t.path, "/");
        let t = parse_http_url("http://[::1]:9000/x").unwrap();
        assert_eq!(t.addr.to_string(), "[::1]:9000");
        let t = parse_http_url("http://[::1]/x").unwrap();
        assert_eq!(t.addr.to_string(), "[::1]:80");
        let t = parse_http_url("http://127.0.0.1:81?q").unwrap();
        assert_eq!(t.path, "/?q");
        assert_eq!(parse_http_url("https://x/"), Err(UrlProblem::Https));
        assert_eq!(
            parse_http_url("http://api.internal:80/"),
            Err(UrlProblem::NeedsDns("api.internal".into()))
        );
        assert_eq!(parse_http_url("ftp://x"), Err(UrlProblem::Shape));
        assert_eq!(parse_http_url("http://"), Err(UrlProblem::Shape));
        assert_eq!(
            parse_http_url("http://127.0.0.1:99999/"),
            Err(UrlProblem::Shape)
        );
    }
}

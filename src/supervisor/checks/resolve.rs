//! Names of external checks, resolved at every attempt, off the loop, by hickory's resolver (a
//! DNS client in Rust, so a static binary in a `FROM scratch` image resolves without NSS):
//! `/etc/hosts` first, then the nameservers of `/etc/resolv.conf` (Docker's 127.0.0.11), with
//! answers kept at most a second, so a Swarm service VIP that moves is followed. The resolver
//! is built only when some external names a host that is not an IP literal: a container
//! without externals pays nothing for it.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hickory_resolver::ResolveError;
use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ResolveHosts, ResolverConfig};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::proto::ProtoErrorKind;

use crate::config::HostPort;

/// The resolver, built on first use.
pub(crate) type LazyResolver = Arc<OnceLock<TokioResolver>>;

/// The first address of `at`: an IP literal as it is, a name through the resolver.
pub(crate) async fn resolve(at: &HostPort, resolver: &LazyResolver) -> Result<SocketAddr, String> {
    if let Ok(ip) = at.host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, at.port));
    }
    let r = resolver.get_or_init(build_resolver);
    match r.lookup_ip(at.host.as_str()).await {
        Ok(ips) => match ips.iter().next() {
            Some(ip) => Ok(SocketAddr::new(ip, at.port)),
            None => Err(format!("{} has no address", at.host)),
        },
        Err(e) => Err(plain_words(&at.host, &e)),
    }
}

/// What a failed lookup of `host` means, in a user's words: hickory's own text carries a debug
/// dump of the query (`proto error: no records found for Query { … }`).
fn plain_words(host: &str, e: &ResolveError) -> String {
    if e.is_no_records_found() || e.is_nx_domain() {
        return format!("no address for {host}");
    }
    let why = match e.proto().map(|p| p.kind()) {
        Some(ProtoErrorKind::Timeout) => "no answer from the nameservers in time".to_string(),
        Some(ProtoErrorKind::NoConnections) => "no nameserver could be reached".to_string(),
        Some(ProtoErrorKind::Io(io)) => super::http_get::os_words(io),
        _ => first_words(&e.to_string()),
    };
    format!("cannot resolve {host}: {why}")
}

/// `text` without hickory's `proto error: ` prefix and without any debug dump (from the first
/// `{`), on one line.
fn first_words(text: &str) -> String {
    let text = text.strip_prefix("proto error: ").unwrap_or(text);
    let text = text
        .split('{')
        .next()
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("");
    let text = text
        .trim()
        .trim_end_matches(" for Query")
        .trim_end_matches(':');
    if text.is_empty() {
        "the resolver failed".into()
    } else {
        text.to_string()
    }
}

/// `/etc/resolv.conf`'s nameservers and `/etc/hosts`; with no readable resolv.conf, the hosts
/// file only. Answers are kept a second at most: a service VIP may move.
fn build_resolver() -> TokioResolver {
    let builder = TokioResolver::builder_tokio().unwrap_or_else(|_| {
        TokioResolver::builder_with_config(
            ResolverConfig::new(),
            TokioConnectionProvider::default(),
        )
    });
    let mut builder = builder;
    let opts = builder.options_mut();
    opts.use_hosts_file = ResolveHosts::Always;
    opts.positive_max_ttl = Some(Duration::from_secs(1));
    opts.negative_max_ttl = Some(Duration::from_secs(1));
    opts.cache_size = 32;
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolvers_debug_dump_is_not_shown() {
        assert_eq!(
            first_words(
                "proto error: no records found for Query { name: Name(\"x.\"), query_type: AAAA }"
            ),
            "no records found"
        );
        assert_eq!(first_words("request timed out"), "request timed out");
        assert_eq!(first_words("{ }"), "the resolver failed");
        let e = ResolveError::from(hickory_resolver::proto::ProtoError::from(
            ProtoErrorKind::NoConnections,
        ));
        assert_eq!(
            plain_words("db", &e),
            "cannot resolve db: no nameserver could be reached"
        );
    }
}

//! External dependencies' checks (`[external.NAME]`): one task per external, one attempt per
//! `interval`, each bounded by `timeout`, told to the owner loop as a [`ProbeEvent::External`].
//!
//! Names are resolved at every attempt, off the loop, by hickory's resolver (a DNS client in
//! Rust, so a static binary in a `FROM scratch` image resolves without NSS): `/etc/hosts`
//! first, then the nameservers of `/etc/resolv.conf` (Docker's 127.0.0.11), with answers kept
//! at most a second, so a Swarm service VIP that moves is followed. The resolver is built only
//! when some external names a host that is not an IP literal: a container without externals
//! pays nothing for it.
//!
//! `exec` checks are processes: the task only says when one is due, and the owner loop spawns
//! and reaps it (see `external_exec.rs`). Every read is capped ([`PEER_CAP`]) and every attempt
//! has one deadline, so a peer that answers garbage or never closes is a failed check.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ResolveHosts, ResolverConfig};
use hickory_resolver::name_server::TokioConnectionProvider;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::events::ProbeEvent;
use super::http_get::{self, fmt_secs, os_words};
use crate::config::{ExternalCheck, ExternalSpec, HostPort, HttpTarget};

/// Most of a peer's answer read (status line, headers and its one-line body).
pub(crate) const PEER_CAP: usize = 4096;

/// The running check tasks, one per external (none for `exec` ones, which the loop runs).
#[derive(Default)]
pub(crate) struct ExternalChecks {
    tasks: Vec<JoinHandle<()>>,
}

impl ExternalChecks {
    /// Starts (or, after a reload, starts again) a task per external of `specs`.
    pub(crate) fn start(&mut self, specs: &[ExternalSpec], tx: &UnboundedSender<ProbeEvent>) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
        let resolver = Arc::new(OnceLock::new());
        for spec in specs {
            let spec = Arc::new(spec.clone());
            let (tx, resolver) = (tx.clone(), Arc::clone(&resolver));
            self.tasks.push(tokio::spawn(run(spec, resolver, tx)));
        }
    }
}

/// The resolver, built on first use.
type LazyResolver = Arc<OnceLock<TokioResolver>>;

/// Checks `spec` forever: an attempt, its result sent, `interval`, and again.
async fn run(spec: Arc<ExternalSpec>, resolver: LazyResolver, tx: UnboundedSender<ProbeEvent>) {
    loop {
        let (passed, output, peer_run) = if let ExternalCheck::Exec(_) = spec.check {
            // The owner loop spawns it and sends the result itself.
            let (done_tx, done) = tokio::sync::oneshot::channel();
            let due = ProbeEvent::ExternalExecDue {
                name: spec.name.clone(),
                done: done_tx,
            };
            if tx.send(due).is_err() {
                return;
            }
            let _ = done.await;
            tokio::time::sleep(spec.interval).await;
            continue;
        } else {
            match tokio::time::timeout(spec.timeout, attempt(&spec, &resolver)).await {
                Ok(r) => r,
                Err(_) => (
                    false,
                    format!("timed out after {}", fmt_secs(spec.timeout)),
                    None,
                ),
            }
        };
        let event = ProbeEvent::External {
            name: spec.name.clone(),
            passed,
            output,
            peer_run,
        };
        if tx.send(event).is_err() {
            return;
        }
        tokio::time::sleep(spec.interval).await;
    }
}

/// One attempt: (passed, what it found, the peer's run).
async fn attempt(spec: &ExternalSpec, resolver: &LazyResolver) -> (bool, String, Option<String>) {
    let Some(at) = spec.check.host() else {
        return (false, "not an in-process check".into(), None);
    };
    let addr = match resolve(at, resolver).await {
        Ok(a) => a,
        Err(e) => return (false, e, None),
    };
    match &spec.check {
        ExternalCheck::Tcp(_) => match tokio::net::TcpStream::connect(addr).await {
            Ok(_) => (true, format!("connected to {addr}"), None),
            Err(e) => (false, os_words(&e), None),
        },
        ExternalCheck::Http { url, path, .. } => {
            let target = HttpTarget {
                url: url.clone(),
                addr,
                host: at.to_string(),
                path: path.clone(),
            };
            match http_get::get(&target, spec.timeout).await {
                Ok(answer) => (answer.passed(), answer.line, None),
                Err(e) => (false, e, None),
            }
        }
        ExternalCheck::Ctrlinit { program, .. } => match peer(addr, at, program).await {
            Ok((ready, line, run)) => (ready, line, Some(run)),
            Err(e) => (false, e, None),
        },
        ExternalCheck::Exec(_) => (false, "not an in-process check".into(), None),
    }
}

/// The first address of `at`: an IP literal as it is, a name through the resolver.
async fn resolve(at: &HostPort, resolver: &LazyResolver) -> Result<SocketAddr, String> {
    if let Ok(ip) = at.host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, at.port));
    }
    let r = resolver.get_or_init(build_resolver);
    match r.lookup_ip(at.host.as_str()).await {
        Ok(ips) => match ips.iter().next() {
            Some(ip) => Ok(SocketAddr::new(ip, at.port)),
            None => Err(format!("{} has no address", at.host)),
        },
        Err(e) => Err(format!("cannot resolve {}: {e}", at.host)),
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

/// Asks a peer ctrlinit's probe endpoint about `program`: (ready, what it said, boot/run).
async fn peer(
    addr: SocketAddr,
    at: &HostPort,
    program: &str,
) -> Result<(bool, String, String), String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect to {addr}: {}", os_words(&e)))?;
    let request = format!(
        "GET /v1/peer?program={program} HTTP/1.1\r\nHost: {at}\r\nUser-Agent: ctrlinit-peer\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send the request: {}", os_words(&e)))?;
    let mut buf = vec![0u8; PEER_CAP];
    let mut filled = 0;
    while filled < buf.len() {
        let n = stream
            .read(&mut buf[filled..])
            .await
            .map_err(|e| format!("cannot read the answer: {}", os_words(&e)))?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    parse_peer(&buf[..filled], program)
}

/// `HTTP/1.1 200 OK … \r\n\r\nboot=ID program=api run=3 state=running ready=true`.
pub(crate) fn parse_peer(answer: &[u8], program: &str) -> Result<(bool, String, String), String> {
    let text =
        std::str::from_utf8(answer).map_err(|_| "not a ctrlinit peer's answer".to_string())?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| "not a ctrlinit peer's answer (cut short or too long)".to_string())?;
    let status = head.lines().next().unwrap_or("");
    if status.split(' ').nth(1) == Some("404") {
        return Err(format!("the peer has no program {program}"));
    }
    let field = |k: &str| {
        body.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
    };
    match (field("boot"), field("run"), field("state"), field("ready")) {
        (Some(boot), Some(run), Some(state), Some(ready)) if run.parse::<u64>().is_ok() => Ok((
            ready == "true",
            format!("{program} is {state} (run {run})"),
            format!("{boot}/{run}"),
        )),
        _ => Err("not a ctrlinit peer's answer".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_answers() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nboot=b1 program=api run=3 state=running ready=true\n";
        let (ready, line, run) = parse_peer(ok, "api").unwrap();
        assert!(ready);
        assert_eq!(line, "api is running (run 3)");
        assert_eq!(run, "b1/3");
        let waiting =
            b"HTTP/1.1 200 OK\r\n\r\nboot=b1 program=api run=4 state=backoff ready=false\n";
        assert!(!parse_peer(waiting, "api").unwrap().0);
        assert!(
            parse_peer(b"HTTP/1.1 404 Not Found\r\n\r\nno\n", "api")
                .unwrap_err()
                .contains("no program api")
        );
        assert!(parse_peer(b"garbage", "api").is_err());
        assert!(parse_peer(b"HTTP/1.1 200 OK\r\n\r\nhello", "api").is_err());
        assert!(parse_peer(&[0xff, 0xfe], "api").is_err());
    }
}

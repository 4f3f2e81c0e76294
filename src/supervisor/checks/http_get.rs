//! The `http` check's client: one `GET` over a fresh connection, answered 2xx or 3xx to pass.
//! A redirect is not followed; at most [`READ_CAP`] bytes of the answer are read (the status
//! line and headers; a check never downloads a body); the whole exchange has one deadline.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::HttpTarget;

/// Most of an answer read: enough for a status line and ordinary headers.
pub(crate) const READ_CAP: usize = 4096;

/// What one GET found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpAnswer {
    /// The status code.
    pub(crate) code: u16,
    /// `HTTP 503 Service Unavailable`.
    pub(crate) line: String,
}

impl HttpAnswer {
    /// 2xx and 3xx pass, as Kubernetes' `httpGet` probes count them.
    pub(crate) fn passed(&self) -> bool {
        (200..400).contains(&self.code)
    }
}

/// GETs `target` within `timeout`; an error is the check's output (`connection refused`,
/// `timed out after 3s`, `not an HTTP answer`).
pub(crate) async fn get(target: &HttpTarget, timeout: Duration) -> Result<HttpAnswer, String> {
    match tokio::time::timeout(timeout, exchange(target)).await {
        Ok(answer) => answer,
        Err(_) => Err(format!("timed out after {}", fmt_secs(timeout))),
    }
}

async fn exchange(target: &HttpTarget) -> Result<HttpAnswer, String> {
    let mut stream = tokio::net::TcpStream::connect(target.addr)
        .await
        .map_err(|e| format!("cannot connect to {}: {}", target.addr, os_words(&e)))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ctrlinit-health\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        target.path, target.host
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send the request: {}", os_words(&e)))?;
    let mut buf = vec![0u8; READ_CAP];
    let mut filled = 0;
    loop {
        let n = stream
            .read(&mut buf[filled..])
            .await
            .map_err(|e| format!("cannot read the answer: {}", os_words(&e)))?;
        filled += n;
        if let Some(answer) = parse(&buf[..filled])? {
            return Ok(answer);
        }
        if n == 0 || filled == buf.len() {
            // The status line is all a check needs: take it even if the headers go on.
            return status_line_only(&buf[..filled]);
        }
    }
}

/// The answer once its headers are complete; `None` while more is needed.
fn parse(bytes: &[u8]) -> Result<Option<HttpAnswer>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => Ok(Some(answer(
            response.code.unwrap_or(0),
            response.reason.unwrap_or(""),
        ))),
        Ok(httparse::Status::Partial) => Ok(None),
        // Too many headers: the status line parsed fine before them.
        Err(httparse::Error::TooManyHeaders) => status_line_only(bytes).map(Some),
        Err(e) => Err(format!("not an HTTP answer ({e})")),
    }
}

/// The status line alone, from an answer cut short or with headers past the cap.
fn status_line_only(bytes: &[u8]) -> Result<HttpAnswer, String> {
    let line_end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let line = String::from_utf8_lossy(&bytes[..line_end]);
    let mut parts = line.trim_end().splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    let code = parts.next().and_then(|c| c.parse::<u16>().ok());
    match code {
        Some(code) if version.starts_with("HTTP/") => Ok(answer(code, parts.next().unwrap_or(""))),
        _ if bytes.is_empty() => Err("the connection closed without an answer".into()),
        _ => Err("not an HTTP answer".into()),
    }
}

fn answer(code: u16, reason: &str) -> HttpAnswer {
    let reason: String = reason
        .chars()
        .take(80)
        .filter(|c| !c.is_control())
        .collect();
    HttpAnswer {
        code,
        line: format!("HTTP {code} {reason}").trim_end().to_string(),
    }
}

/// `connection refused`, not `Connection refused (os error 111)`.
pub(crate) fn os_words(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => text.to_string(),
    }
}

/// `3s`, `1.5s`, `250ms`.
pub(crate) fn fmt_secs(d: Duration) -> String {
    crate::supervisor::core::notices::fmt_duration(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_their_status_line() {
        let a = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap()
            .unwrap();
        assert_eq!(a.code, 200);
        assert_eq!(a.line, "HTTP 200 OK");
        assert!(a.passed());
        assert_eq!(parse(b"HTTP/1.1 503 Service Unavail").unwrap(), None);
        let a = status_line_only(b"HTTP/1.0 503 Service Unavailable\r\nX: y").unwrap();
        assert_eq!(a.line, "HTTP 503 Service Unavailable");
        assert!(!a.passed());
        let a = parse(b"HTTP/1.1 302 Found\r\nLocation: /login\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(a.passed(), "a redirect passes and is not followed");
        assert!(parse(b"SSH-2.0-OpenSSH_9.2\r\n").is_err());
        assert!(status_line_only(b"").is_err());
    }

    /// A one-connection HTTP server on the loopback: it reads the request, then `answer`
    /// writes what it likes; the thread returns what `answer` returns.
    fn serve<T: Send + 'static>(
        answer: impl FnOnce(&mut std::net::TcpStream) -> T + Send + 'static,
    ) -> (HttpTarget, std::thread::JoinHandle<T>) {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            stream.set_read_timeout(Some(WITHIN)).unwrap();
            stream.set_write_timeout(Some(WITHIN)).unwrap();
            let mut request = Vec::new();
            let mut byte = [0u8; 1];
            while !request.ends_with(b"\r\n\r\n") {
                assert_eq!(
                    stream.read(&mut byte).unwrap(),
                    1,
                    "the request ended early"
                );
                request.push(byte[0]);
            }
            answer(&mut stream)
        });
        let target = HttpTarget {
            url: format!("http://{addr}/healthz"),
            addr,
            host: addr.to_string(),
            path: "/healthz".into(),
        };
        (target, server)
    }

    /// The check's timeout in these tests, and the servers' deadline: generous for a loaded
    /// machine, and far longer than a capped read takes.
    const WITHIN: Duration = Duration::from_secs(20);

    fn get_now(target: &HttpTarget) -> Result<HttpAnswer, String> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(get(target, WITHIN))
    }

    /// Writes `head`, then `fill` bytes forever: until the client goes away (true) or the
    /// server's deadline passes (false).
    fn endless(stream: &mut std::net::TcpStream, head: &[u8], fill: u8) -> bool {
        use std::io::{ErrorKind, Write};
        if stream.write_all(head).is_err() {
            return true;
        }
        let chunk = [fill; 16 << 10];
        loop {
            match stream.write(&chunk) {
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return false;
                }
                Err(_) => return true,
            }
        }
    }

    #[test]
    fn a_verdict_needs_no_more_than_read_cap_bytes() {
        use std::io::{Read, Write};
        const { assert!(READ_CAP <= 4096, "the README promises at most 4 KiB") };
        // Exactly READ_CAP bytes, the headers still unfinished, then nothing: a client that
        // wanted one byte more would wait for it until its timeout.
        let (target, server) = serve(|stream| {
            let mut head = b"HTTP/1.1 200 OK\r\nX-Filler: ".to_vec();
            head.resize(READ_CAP, b'a');
            stream.write_all(&head).unwrap();
            // The client closing is the end of file (or a reset) here; the deadline is not.
            match stream.read(&mut [0u8; 1]) {
                Ok(0) => Ok(()),
                Ok(_) => Err("the client sent more".to_string()),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(()),
                Err(e) => Err(format!("the client did not close: {e}")),
            }
        });
        let answer = get_now(&target).expect("a verdict from READ_CAP bytes");
        assert_eq!(answer.line, "HTTP 200 OK");
        assert!(answer.passed());
        server.join().unwrap().unwrap();
    }

    #[test]
    fn an_endless_header_or_body_still_gets_a_verdict_in_time() {
        let answers: [(&[u8], u8, u16); 2] = [
            (b"HTTP/1.1 503 Service Unavailable\r\nX-Filler: ", b'a', 503),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n",
                b'b',
                200,
            ),
        ];
        for (head, fill, code) in answers {
            let (target, server) = serve(move |stream| endless(stream, head, fill));
            let answer = get_now(&target).expect("a verdict before the timeout");
            assert_eq!(answer.code, code);
            assert_eq!(answer.passed(), code == 200);
            assert!(
                server.join().unwrap(),
                "the client stopped reading and closed ({code})"
            );
        }
    }

    #[test]
    fn os_errors_in_plain_words() {
        let e = std::io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(os_words(&e), "connection refused");
    }
}

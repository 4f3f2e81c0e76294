//! The syslog sockets (`[init] syslog`, `syslog_stream`): a unix datagram socket every user may
//! send to, each datagram with its sender's credentials (`SO_PASSCRED`: the kernel's, not
//! forgeable), and a unix stream listener whose connections carry theirs (`SO_PEERCRED`).
//!
//! What is at the path already: a socket nobody listens on (a syslogd of a previous run) is
//! replaced; a socket someone listens on (the host's `/dev/log` mounted in) and anything that is
//! not a socket are refused, with the fix.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use nix::sys::socket::{
    AddressFamily, Backlog, SockFlag, SockType, UnixAddr, bind, connect, listen, setsockopt,
    socket, sockopt,
};

use super::scm::{ControlBuffer, recv_raw};
use super::socket_file::{Placement, place};

/// Connections a stream listener queues before `accept`.
const BACKLOG: i32 = 64;

/// One datagram, as received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The sender's pid (`None`: no credentials came).
    pub pid: Option<i32>,
    /// The sender's user.
    pub uid: Option<u32>,
    /// Bytes placed in the buffer (at most its length).
    pub len: usize,
    /// The datagram was longer than the buffer: what is there is its beginning.
    pub cut: bool,
}

/// The datagram socket syslog clients send to.
#[derive(Debug)]
pub struct SyslogSocket {
    fd: OwnedFd,
}

impl SyslogSocket {
    /// Binds the datagram socket at `path`, mode 0666; `key` names the setting in errors.
    pub fn bind(path: &Path, key: &str) -> Result<SyslogSocket, String> {
        let fd = bind_at(path, key, SockType::Datagram)?;
        Ok(SyslogSocket { fd })
    }

    /// The next datagram into `buf`, or `None` when none is waiting (never blocks). Descriptors
    /// a sender attached are closed before this returns (see `scm`).
    pub fn recv(&self, buf: &mut [u8]) -> std::io::Result<Option<Received>> {
        let mut control = ControlBuffer::new();
        let (len, flags) = match recv_raw(self.fd.as_raw_fd(), buf, &mut control) {
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        };
        let creds = control.take().creds;
        Ok(Some(Received {
            pid: creds.map(|c| c.pid),
            uid: creds.map(|c| c.uid),
            len: len.min(buf.len()),
            cut: flags & libc::MSG_TRUNC != 0,
        }))
    }
}

impl AsFd for SyslogSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for SyslogSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Binds a listening stream socket at `path`, mode 0666, non-blocking; `key` names the setting.
pub fn bind_stream(path: &Path, key: &str) -> Result<std::os::unix::net::UnixListener, String> {
    let fd = bind_at(path, key, SockType::Stream)?;
    Ok(std::os::unix::net::UnixListener::from(fd))
}

/// Checks what is at `path`, then binds a socket of `kind` there with mode 0666.
fn bind_at(path: &Path, key: &str, kind: SockType) -> Result<OwnedFd, String> {
    refuse_occupied(path, key)?;
    let placement = Placement {
        what: "the syslog socket",
        path,
        mode: 0o666,
        gid: None,
    };
    place(&placement, |tmp| {
        let fd = socket(
            AddressFamily::Unix,
            kind,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
            None,
        )?;
        if kind == SockType::Datagram {
            setsockopt(&fd, sockopt::PassCred, &true)?;
        }
        bind(fd.as_raw_fd(), &UnixAddr::new(tmp)?)?;
        if kind == SockType::Stream {
            listen(&fd, Backlog::new(BACKLOG).unwrap_or(Backlog::MAXCONN))?;
        }
        Ok(fd)
    })
}

/// Refuses `path` when something other than a stale socket is there.
fn refuse_occupied(path: &Path, key: &str) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Err(format!(
            "{} exists and is not a socket; ctrlinit will not replace it\n    fix: remove it, or set [init] {key} to another path",
            path.display()
        ));
    }
    if listened(path) {
        return Err(format!(
            "{} is a socket someone listens on (a syslog daemon, or the host's socket mounted in); ctrlinit will not take it over\n    fix: stop that daemon or remove the mount, or set [init] {key} to another path",
            path.display()
        ));
    }
    Ok(())
}

/// Whether a datagram or stream socket at `path` has a reader (a connect succeeds).
fn listened(path: &Path) -> bool {
    let Ok(addr) = UnixAddr::new(path) else {
        return false;
    };
    [SockType::Datagram, SockType::Stream]
        .into_iter()
        .any(|kind| {
            socket(AddressFamily::Unix, kind, SockFlag::SOCK_CLOEXEC, None)
                .is_ok_and(|fd| connect(fd.as_raw_fd(), &addr).is_ok())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_socket_is_replaced_and_a_file_or_live_one_refused() {
        let dir = std::env::temp_dir().join(format!("ctrlinit-syslog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        let first = SyslogSocket::bind(&path, "syslog").unwrap();
        let err = SyslogSocket::bind(&path, "syslog").unwrap_err();
        assert!(err.contains("listens on"), "{err}");
        drop(first);
        let again = SyslogSocket::bind(&path, "syslog").expect("a stale socket is replaced");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
        let sender = std::os::unix::net::UnixDatagram::unbound().unwrap();
        sender.send_to(&[b'x'; 100], &path).unwrap();
        let mut buf = [0u8; 10];
        let got = again.recv(&mut buf).unwrap().unwrap();
        assert_eq!((got.len, got.cut), (10, true));
        assert_eq!(got.pid, Some(std::process::id() as i32));
        assert_eq!(again.recv(&mut buf).unwrap(), None);
        drop(again);
        let file = dir.join("file");
        std::fs::write(&file, b"").unwrap();
        let err = SyslogSocket::bind(&file, "syslog").unwrap_err();
        assert!(
            err.contains("not a socket") && err.contains("[init] syslog"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

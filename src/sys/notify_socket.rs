//! sd_notify's transport: a unix datagram socket whose every datagram carries its sender's
//! credentials (`SO_PASSCRED`: the kernel attaches the real pid, which the sender cannot forge),
//! and sending one datagram to a socket ctrlinit was itself given (`NOTIFY_SOCKET`, upward).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use nix::sys::socket::{
    AddressFamily, MsgFlags, SockFlag, SockType, UnixAddr, bind, sendto, setsockopt, socket,
    sockopt,
};

use super::scm::{ControlBuffer, recv_raw};

use super::socket_file::{Placement, place};

/// Largest datagram read; systemd accepts no more either. A longer one is dropped whole.
pub const DATAGRAM_MAX: usize = 4096;

/// One datagram, as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// The sender's pid, from the kernel (`None` when no credentials came with it).
    pub pid: Option<i32>,
    /// The sender's user, from the kernel likewise.
    pub uid: Option<u32>,
    /// Its bytes; empty when it was longer than [`DATAGRAM_MAX`].
    pub bytes: Vec<u8>,
    /// It was longer than [`DATAGRAM_MAX`] and is dropped.
    pub truncated: bool,
    /// How many descriptors came with it (all closed already).
    pub descriptors: usize,
}

/// The socket programs send sd_notify datagrams to.
#[derive(Debug)]
pub struct NotifySocket {
    fd: OwnedFd,
}

impl NotifySocket {
    /// Binds the socket at `path` (replacing a stale socket there), writable by every user: a
    /// program may run as any user, and a datagram is attributed by its sender's pid, never by
    /// who could reach the file.
    pub fn bind(path: &Path) -> Result<NotifySocket, String> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(format!(
                    "{} exists and is not a socket; ctrlinit will not remove it\n    fix: remove it, or set [init] notify_socket to another path",
                    path.display()
                ));
            }
            let _ = std::fs::remove_file(path);
        }
        let placement = Placement {
            what: "the notify socket",
            path,
            mode: 0o666,
            gid: None,
        };
        let fd = place(&placement, |tmp| {
            let fd = socket(
                AddressFamily::Unix,
                SockType::Datagram,
                SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
                None,
            )?;
            setsockopt(&fd, sockopt::PassCred, &true)?;
            bind(fd.as_raw_fd(), &UnixAddr::new(tmp)?)?;
            Ok(fd)
        })?;
        Ok(NotifySocket { fd })
    }

    /// The next datagram, or `None` when none is waiting (the socket never blocks).
    ///
    /// Descriptors a sender passed along (`FDSTORE=1`, or a hostile user's hundreds) are
    /// closed before this returns, whatever else happened: the control buffer has room for the
    /// kernel's maximum (`SCM_MAX_FD`), they arrive close-on-exec, and the control headers are
    /// walked by hand, so a truncated control part (`MSG_CTRUNC`) still has what it holds
    /// closed (the kernel closes what did not fit).
    pub fn recv(&self) -> std::io::Result<Option<Datagram>> {
        let mut buf = vec![0u8; DATAGRAM_MAX];
        let mut control = ControlBuffer::new();
        let (len, flags) = match recv_raw(self.fd.as_raw_fd(), &mut buf, &mut control) {
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        };
        let received = control.take();
        let truncated = flags & libc::MSG_TRUNC != 0;
        buf.truncate(if truncated { 0 } else { len.min(DATAGRAM_MAX) });
        Ok(Some(Datagram {
            pid: received.creds.map(|c| c.pid),
            uid: received.creds.map(|c| c.uid),
            bytes: buf,
            truncated,
            descriptors: received.descriptors,
        }))
    }
}

impl AsFd for NotifySocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for NotifySocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Sends `message` to the sd_notify socket at `address` (a path, or `@name` in the abstract
/// namespace), without blocking: a supervisor that does not read is not waited for.
pub fn send(address: &str, message: &[u8]) -> std::io::Result<()> {
    let addr = match address.strip_prefix('@') {
        Some(name) => UnixAddr::new_abstract(name.as_bytes())?,
        None => UnixAddr::new(address)?,
    };
    let fd = socket(
        AddressFamily::Unix,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )?;
    sendto(fd.as_raw_fd(), message, &addr, MsgFlags::MSG_NOSIGNAL)?;
    Ok(())
}

//! sd_notify's transport: a unix datagram socket whose every datagram carries its sender's
//! credentials (`SO_PASSCRED`: the kernel attaches the real pid, which the sender cannot forge),
//! and sending one datagram to a socket ctrlinit was itself given (`NOTIFY_SOCKET`, upward).

use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use nix::sys::socket::{
    AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType, UnixAddr, bind, recvmsg,
    sendto, setsockopt, socket, sockopt,
};

use super::socket_file::{Placement, place};

/// Largest datagram read; systemd accepts no more either. A longer one is dropped whole.
pub const DATAGRAM_MAX: usize = 4096;

/// One datagram, as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// The sender's pid, from the kernel (`None` when no credentials came with it).
    pub pid: Option<i32>,
    /// Its bytes; empty when it was longer than [`DATAGRAM_MAX`].
    pub bytes: Vec<u8>,
    /// It was longer than [`DATAGRAM_MAX`] and is dropped.
    pub truncated: bool,
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

    /// The next datagram, or `None` when none is waiting (the socket never blocks). Descriptors
    /// a sender passed along (`FDSTORE=1`) are closed at once.
    pub fn recv(&self) -> std::io::Result<Option<Datagram>> {
        let mut buf = vec![0u8; DATAGRAM_MAX];
        let mut cmsg = nix::cmsg_space!(libc::ucred, [RawFd; 16]);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_TRUNC;
        let msg = match recvmsg::<()>(self.fd.as_raw_fd(), &mut iov, Some(&mut cmsg), flags) {
            Ok(m) => m,
            Err(nix::errno::Errno::EAGAIN) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let (len, truncated) = (msg.bytes, msg.flags.contains(MsgFlags::MSG_TRUNC));
        let mut pid = None;
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                match c {
                    ControlMessageOwned::ScmCredentials(cred) => pid = Some(cred.pid()),
                    ControlMessageOwned::ScmRights(fds) => {
                        for fd in fds {
                            // SAFETY: the kernel just installed these descriptors in this
                            // process for this message; nothing else knows or owns them.
                            drop(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
                        }
                    }
                    _ => {}
                }
            }
        }
        buf.truncate(if truncated { 0 } else { len.min(DATAGRAM_MAX) });
        Ok(Some(Datagram {
            pid,
            bytes: buf,
            truncated,
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

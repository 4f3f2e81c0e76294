//! The kernel's link events: a netlink route socket subscribed to `RTMGRP_LINK`, so ctrlinit
//! learns that a network interface of its namespace appeared, changed or was deleted when it
//! happens, without polling. Only the socket and the parsing of its messages live here; what
//! they mean for the container is `supervisor::watch`'s.
//!
//! Invariants: the socket is non-blocking and close-on-exec; one read takes one datagram into a
//! fixed buffer (a longer one is counted as lost, and the caller lists the interfaces again);
//! the parser never reads past a message's own length. No `unsafe`: nix wraps every call.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, recv, socket,
};

/// The read buffer: the kernel sends link notifications one per datagram, each well under a
/// page; 16 KiB leaves room for the largest (many attributes) without growing.
const BUFFER: usize = 16 * 1024;

const NLMSG_HDRLEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_OVERRUN: u16 = 4;
const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const IFLA_IFNAME: u16 = 3;
const IFF_UP: u32 = 1;

/// One change the kernel announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkChange {
    /// The interface exists (new, or changed): its index, name and whether it is up.
    Present {
        /// Interface index (stable while it exists; a rename keeps it).
        index: i32,
        /// Its name now.
        name: String,
        /// `IFF_UP`.
        up: bool,
    },
    /// The interface was deleted.
    Gone {
        /// Interface index.
        index: i32,
        /// Its last name.
        name: String,
    },
    /// Notifications were lost (the socket's buffer overran): list the interfaces again.
    Resync,
}

/// A netlink route socket subscribed to link events.
#[derive(Debug)]
pub struct LinkEvents {
    fd: OwnedFd,
    buf: Box<[u8]>,
}

impl AsRawFd for LinkEvents {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl LinkEvents {
    /// Opens and subscribes the socket (non-blocking, close-on-exec).
    pub fn open() -> io::Result<LinkEvents> {
        let fd = socket(
            AddressFamily::Netlink,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
            SockProtocol::NetlinkRoute,
        )?;
        bind(
            fd.as_raw_fd(),
            &NetlinkAddr::new(0, libc::RTMGRP_LINK as u32),
        )?;
        Ok(LinkEvents {
            fd,
            buf: vec![0; BUFFER].into_boxed_slice(),
        })
    }

    /// The socket registered with tokio's reactor, for the owner loop to await.
    pub fn into_async(self) -> io::Result<tokio::io::unix::AsyncFd<LinkEvents>> {
        // SAFETY: the socket owns its descriptor and moves into the AsyncFd, which deregisters
        // it before dropping it (and so before the descriptor is closed).
        let fd = unsafe { tokio::io::unix::AsyncFd::register(self) }?;
        Ok(fd)
    }

    /// Reads one datagram and appends its changes to `out`; `Ok(false)` when none was waiting.
    pub fn recv(&mut self, out: &mut Vec<LinkChange>) -> io::Result<bool> {
        match recv(self.fd.as_raw_fd(), &mut self.buf, MsgFlags::MSG_TRUNC) {
            Ok(n) if n > self.buf.len() => {
                out.push(LinkChange::Resync);
                Ok(true)
            }
            Ok(n) => {
                parse(&self.buf[..n], out);
                Ok(true)
            }
            Err(Errno::EAGAIN) => Ok(false),
            Err(Errno::EINTR) => Ok(true),
            // The kernel dropped notifications for want of buffer space.
            Err(Errno::ENOBUFS) => {
                out.push(LinkChange::Resync);
                Ok(true)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// The interfaces of this network namespace now, with their indexes (the loopback included):
/// a later rename names only the index.
pub fn links_now() -> io::Result<Vec<(i32, String)>> {
    let list = nix::net::if_::if_nameindex()?;
    Ok(list
        .iter()
        .map(|i| {
            let index = i32::try_from(i.index()).unwrap_or(i32::MAX);
            (index, i.name().to_string_lossy().into_owned())
        })
        .collect())
}

/// Parses the netlink messages of one datagram, appending the link changes among them.
pub fn parse(mut data: &[u8], out: &mut Vec<LinkChange>) {
    while data.len() >= NLMSG_HDRLEN {
        let len = u32_at(data, 0) as usize;
        if len < NLMSG_HDRLEN || len > data.len() {
            return;
        }
        let kind = u16_at(data, 4);
        let body = &data[NLMSG_HDRLEN..len];
        match kind {
            RTM_NEWLINK | RTM_DELLINK => {
                if let Some(change) = link(kind, body) {
                    out.push(change);
                }
            }
            NLMSG_OVERRUN => out.push(LinkChange::Resync),
            NLMSG_ERROR => {}
            _ => {}
        }
        data = &data[align(len).min(data.len())..];
    }
}

/// An `ifinfomsg` and its attributes.
fn link(kind: u16, body: &[u8]) -> Option<LinkChange> {
    if body.len() < IFINFOMSG_LEN {
        return None;
    }
    let index = u32_at(body, 4) as i32;
    let flags = u32_at(body, 8);
    let name = attribute(&body[IFINFOMSG_LEN..], IFLA_IFNAME)?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let name = String::from_utf8_lossy(&name[..end]).into_owned();
    Some(if kind == RTM_NEWLINK {
        LinkChange::Present {
            index,
            name,
            up: flags & IFF_UP != 0,
        }
    } else {
        LinkChange::Gone { index, name }
    })
}

/// The payload of the first `rtattr` of type `wanted`.
fn attribute(mut attrs: &[u8], wanted: u16) -> Option<&[u8]> {
    while attrs.len() >= 4 {
        let len = usize::from(u16_at(attrs, 0));
        if len < 4 || len > attrs.len() {
            return None;
        }
        if u16_at(attrs, 2) & 0x3fff == wanted {
            return Some(&attrs[4..len]);
        }
        attrs = &attrs[align(len).min(attrs.len())..];
    }
    None
}

fn align(len: usize) -> usize {
    (len + 3) & !3
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u16, index: i32, flags: u32, name: &str) -> Vec<u8> {
        let mut attr = Vec::new();
        let payload = [name.as_bytes(), &[0]].concat();
        attr.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        attr.extend_from_slice(&IFLA_IFNAME.to_ne_bytes());
        attr.extend_from_slice(&payload);
        while attr.len() % 4 != 0 {
            attr.push(0);
        }
        let mut body = vec![0u8; 4];
        body.extend_from_slice(&index.to_ne_bytes());
        body.extend_from_slice(&flags.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        body.extend_from_slice(&attr);
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(&body);
        m
    }

    #[test]
    fn new_and_deleted_links_are_read_with_their_names() {
        let mut data = message(RTM_NEWLINK, 4, IFF_UP, "eth0");
        data.extend(message(RTM_DELLINK, 5, 0, "tun0"));
        let mut out = Vec::new();
        parse(&data, &mut out);
        assert_eq!(
            out,
            vec![
                LinkChange::Present {
                    index: 4,
                    name: "eth0".into(),
                    up: true
                },
                LinkChange::Gone {
                    index: 5,
                    name: "tun0".into()
                },
            ]
        );
    }

    #[test]
    fn truncated_or_lying_lengths_stop_the_parse() {
        let data = message(RTM_NEWLINK, 4, IFF_UP, "eth0");
        for cut in 0..data.len() {
            let mut out = Vec::new();
            parse(&data[..cut], &mut out);
            assert!(out.is_empty(), "cut at {cut}");
        }
        let mut lying = data.clone();
        lying[0..4].copy_from_slice(&9999u32.to_ne_bytes());
        let mut out = Vec::new();
        parse(&lying, &mut out);
        assert!(out.is_empty());
    }
}

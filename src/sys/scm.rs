//! What arrives beside a datagram on a unix socket (`SCM_CREDENTIALS`, `SCM_RIGHTS`), read
//! without trusting the sender.
//!
//! Invariants: the control buffer has room for the kernel's largest `SCM_RIGHTS` message
//! (`SCM_MAX_FD`, 253 descriptors) beside the credentials, so nothing a sender attaches is
//! truncated; descriptors arrive close-on-exec (`MSG_CMSG_CLOEXEC`); and the control headers are
//! walked here, by hand, within the length the kernel reported, so a truncated or odd control
//! part (`MSG_CTRUNC`, which nix refuses to iterate) still has every descriptor it holds owned
//! and therefore closed. The walk itself ([`parse`]) is pure and never panics.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// The most descriptors one `SCM_RIGHTS` message can carry (the kernel's `SCM_MAX_FD`).
pub const SCM_MAX_FD: usize = 253;

/// Room for credentials and the largest `SCM_RIGHTS` message, with headers and alignment; a
/// little more, so a kernel that adds a header of its own (`SO_PASSSEC`) leaves the rights whole.
const CONTROL_LEN: usize = 2048;

/// The size of a control message header (`struct cmsghdr`).
const HEADER: usize = std::mem::size_of::<libc::cmsghdr>();

/// Control messages are aligned to `size_t`.
const ALIGN: usize = std::mem::size_of::<usize>();

/// A sender's credentials, as the kernel attached them (they cannot be forged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creds {
    /// Its pid.
    pub pid: i32,
    /// Its user.
    pub uid: u32,
    /// Its group.
    pub gid: u32,
}

/// What one control part held.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// `SCM_CREDENTIALS`, the last if several came.
    pub creds: Option<Creds>,
    /// Every descriptor number of every `SCM_RIGHTS` message, in order.
    pub fds: Vec<RawFd>,
    /// Messages of other kinds, or cut short.
    pub other: usize,
}

/// Walks the control messages in `control` (the bytes the kernel filled in): each header is read
/// where alignment puts it, and a message whose length runs past the end is read as far as it
/// goes (whole descriptors only), so no descriptor that was delivered is missed.
pub fn parse(control: &[u8]) -> Parsed {
    let mut out = Parsed::default();
    let mut at = 0usize;
    while let Some(header) = control.get(at..at + HEADER) {
        // SAFETY: `header` is exactly `size_of::<cmsghdr>()` bytes; read_unaligned copies them
        // into a plain-data struct (integers only), whatever their alignment.
        let h: libc::cmsghdr = unsafe { std::ptr::read_unaligned(header.as_ptr().cast()) };
        let len = h.cmsg_len as usize;
        if len < HEADER {
            out.other += 1;
            break;
        }
        let data_end = (at + len).min(control.len());
        let data = &control[at + HEADER..data_end];
        match (h.cmsg_level, h.cmsg_type) {
            (libc::SOL_SOCKET, libc::SCM_RIGHTS) => {
                out.fds.extend(
                    data.chunks_exact(4)
                        .map(|c| RawFd::from_ne_bytes([c[0], c[1], c[2], c[3]])),
                );
            }
            (libc::SOL_SOCKET, libc::SCM_CREDENTIALS) if data.len() >= 12 => {
                let word = |i: usize| [data[i], data[i + 1], data[i + 2], data[i + 3]];
                out.creds = Some(Creds {
                    pid: i32::from_ne_bytes(word(0)),
                    uid: u32::from_ne_bytes(word(4)),
                    gid: u32::from_ne_bytes(word(8)),
                });
            }
            _ => out.other += 1,
        }
        // The next header starts at the aligned end of this message.
        match len
            .checked_next_multiple_of(ALIGN)
            .and_then(|l| at.checked_add(l))
        {
            Some(next) => at = next,
            None => break,
        }
    }
    out
}

/// A control buffer for one `recvmsg`, aligned for `cmsghdr`.
pub struct ControlBuffer {
    /// `u64`s so the start is aligned as a header must be.
    words: Box<[u64; CONTROL_LEN / 8]>,
    /// How much the kernel filled in.
    filled: usize,
}

/// What came with a datagram: its sender, and the descriptors it carried, already owned (they
/// close when dropped).
#[derive(Debug, Default)]
pub struct Received {
    /// The sender's credentials.
    pub creds: Option<Creds>,
    /// Its descriptors.
    pub descriptors: usize,
}

impl ControlBuffer {
    /// An empty buffer with room for [`SCM_MAX_FD`] descriptors and credentials.
    pub fn new() -> ControlBuffer {
        ControlBuffer {
            words: Box::new([0u64; CONTROL_LEN / 8]),
            filled: 0,
        }
    }

    /// The credentials, and how many descriptors came: every one of them is closed here.
    pub fn take(&mut self) -> Received {
        // SAFETY: the first `filled` bytes of `words` (at most its size, see `recv_raw`) are
        // initialised integers; viewing them as bytes is always valid.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.filled) };
        let parsed = parse(bytes);
        self.filled = 0;
        for &fd in &parsed.fds {
            if fd >= 0 {
                // SAFETY: the kernel installed this descriptor in this process for this message
                // (it is in the control part it filled in); nothing else knows or owns it.
                drop(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
        Received {
            creds: parsed.creds,
            descriptors: parsed.fds.len(),
        }
    }
}

impl Default for ControlBuffer {
    fn default() -> Self {
        ControlBuffer::new()
    }
}

impl Drop for ControlBuffer {
    /// Whatever was received and not taken is closed all the same.
    fn drop(&mut self) {
        if self.filled > 0 {
            self.take();
        }
    }
}

/// One `recvmsg(MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC)` on `fd` into `buf`, with `control`
/// filled in: the datagram's full length (which may exceed `buf`) and the flags the kernel set.
pub fn recv_raw(
    fd: RawFd,
    buf: &mut [u8],
    control: &mut ControlBuffer,
) -> std::io::Result<(usize, libc::c_int)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain data; all-zero is a valid empty header, filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.words.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL_LEN as _;
    let flags = libc::MSG_DONTWAIT | libc::MSG_TRUNC | libc::MSG_CMSG_CLOEXEC;
    // SAFETY: `msg` points at `iov` (which points at `buf`, `buf.len()` bytes) and at the control
    // words (`CONTROL_LEN` bytes), all alive and exclusively borrowed for the call; the kernel
    // writes within those lengths only.
    let n = unsafe { libc::recvmsg(fd, &mut msg, flags) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Recorded before anything else can fail, so the descriptors are closed on every path.
    control.filled = (msg.msg_controllen as usize).min(CONTROL_LEN);
    Ok((n as usize, msg.msg_flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A control message as the kernel lays it out.
    fn message(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
        let len = HEADER + data.len();
        let mut h: libc::cmsghdr = unsafe { std::mem::zeroed() };
        h.cmsg_len = len as _;
        h.cmsg_level = level;
        h.cmsg_type = kind;
        // SAFETY: a plain-data struct viewed as its bytes.
        let hb = unsafe {
            std::slice::from_raw_parts((&h as *const libc::cmsghdr).cast::<u8>(), HEADER)
        };
        let mut out = hb.to_vec();
        out.extend_from_slice(data);
        out.resize(len.next_multiple_of(ALIGN), 0);
        out
    }

    #[test]
    fn credentials_and_descriptors_even_cut_short() {
        let mut creds = Vec::new();
        for v in [42i32, 65534, 65534] {
            creds.extend_from_slice(&v.to_ne_bytes());
        }
        let fds: Vec<u8> = (100..117).flat_map(|f: i32| f.to_ne_bytes()).collect();
        let mut control = message(libc::SOL_SOCKET, libc::SCM_CREDENTIALS, &creds);
        control.extend(message(libc::SOL_SOCKET, libc::SCM_RIGHTS, &fds));
        let p = parse(&control);
        assert_eq!(p.creds.map(|c| (c.pid, c.uid)), Some((42, 65534)));
        assert_eq!(p.fds, (100..117).collect::<Vec<_>>());
        // Cut in the middle of the rights: the whole descriptors before the cut are found.
        let cut = control.len() - 10;
        let p = parse(&control[..cut]);
        assert_eq!(
            p.fds.len(),
            15,
            "62 bytes of rights survive the cut: 15 whole"
        );
        assert_eq!(parse(&[]), Parsed::default());
        assert_eq!(parse(&[0u8; 7]), Parsed::default());
    }

    #[test]
    fn the_buffer_holds_the_largest_rights_message_and_credentials() {
        let need = (HEADER + 12).next_multiple_of(ALIGN) + HEADER + 4 * SCM_MAX_FD;
        assert!(CONTROL_LEN >= need, "{need}");
    }
}

//! Properties of the sd_notify intake against anything a sender can put in a datagram (issue 21):
//! its text (`NotifyMessage::parse`), its control part as the kernel lays it out, cut anywhere
//! (`sys::scm::parse`), and real datagrams carrying 0 to 253 descriptors through the real socket,
//! after which no descriptor is left open (the other properties here open none, so counting
//! this process's descriptors is exact while they run beside it).

use std::os::fd::AsRawFd;

use ctrlinit::supervisor::core::notify_message::{NotifyMessage, STATUS_MAX};
use ctrlinit::sys::notify_socket::NotifySocket;
use ctrlinit::sys::scm::{self, SCM_MAX_FD};
use proptest::prelude::*;

const HEADER: usize = std::mem::size_of::<libc::cmsghdr>();
const ALIGN: usize = std::mem::size_of::<usize>();

/// One control message a sender (or the kernel) could produce.
#[derive(Debug, Clone)]
enum Cmsg {
    Creds(i32, u32, u32),
    Rights(Vec<i32>),
    Other(i32, Vec<u8>),
}

fn cmsg() -> impl Strategy<Value = Cmsg> {
    prop_oneof![
        (any::<i32>(), any::<u32>(), any::<u32>()).prop_map(|(p, u, g)| Cmsg::Creds(p, u, g)),
        prop::collection::vec(0i32..100_000, 0..=SCM_MAX_FD).prop_map(Cmsg::Rights),
        (any::<i32>(), prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(t, d)| Cmsg::Other(t, d)),
    ]
}

/// The kernel's layout: header, data, padding to the alignment.
fn lay_out(messages: &[Cmsg]) -> (Vec<u8>, Vec<(usize, i32)>) {
    let mut out = Vec::new();
    let mut fds = Vec::new();
    for m in messages {
        let (level, kind, data) = match m {
            Cmsg::Creds(p, u, g) => {
                let mut d = p.to_ne_bytes().to_vec();
                d.extend(u.to_ne_bytes());
                d.extend(g.to_ne_bytes());
                (libc::SOL_SOCKET, libc::SCM_CREDENTIALS, d)
            }
            Cmsg::Rights(v) => {
                let d: Vec<u8> = v.iter().flat_map(|f| f.to_ne_bytes()).collect();
                (libc::SOL_SOCKET, libc::SCM_RIGHTS, d)
            }
            // Never a SOL_SOCKET kind the parser acts on.
            Cmsg::Other(t, d) => (libc::SOL_IP, *t, d.clone()),
        };
        let start = out.len();
        // SAFETY: plain data, zeroed then filled.
        let mut h: libc::cmsghdr = unsafe { std::mem::zeroed() };
        h.cmsg_len = (HEADER + data.len()) as _;
        h.cmsg_level = level;
        h.cmsg_type = kind;
        // SAFETY: a plain-data struct viewed as its bytes.
        out.extend_from_slice(unsafe {
            std::slice::from_raw_parts((&h as *const libc::cmsghdr).cast::<u8>(), HEADER)
        });
        if let Cmsg::Rights(v) = m {
            for (k, f) in v.iter().enumerate() {
                fds.push((start + HEADER + 4 * k + 4, *f));
            }
        }
        out.extend_from_slice(&data);
        out.resize(out.len().next_multiple_of(ALIGN), 0);
    }
    (out, fds)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

proptest! {
    #[test]
    fn any_text_parses_to_bounded_printable_fields(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let m = NotifyMessage::parse(&bytes);
        if let Some(s) = &m.status {
            prop_assert!(s.len() <= STATUS_MAX);
            prop_assert!(!s.chars().any(char::is_control));
        }
        prop_assert!(m.main_pid.is_none_or(|p| p > 1));
    }

    #[test]
    fn every_whole_descriptor_in_a_control_part_cut_anywhere_is_found(
        messages in prop::collection::vec(cmsg(), 0..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let (control, fds) = lay_out(&messages);
        let at = if control.is_empty() { 0 } else { cut.index(control.len() + 1) };
        let parsed = scm::parse(&control[..at]);
        // Every descriptor that lies whole before the cut, in a message whose header is whole.
        let expected: Vec<i32> = fds.iter().filter(|(end, _)| *end <= at).map(|(_, f)| *f).collect();
        prop_assert_eq!(parsed.fds, expected);
    }

    #[test]
    fn garbage_control_parts_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = scm::parse(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_descriptor_a_datagram_carries_is_closed(n in 0usize..=SCM_MAX_FD, text in prop::collection::vec(any::<u8>(), 0..200)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.sock");
        let socket = NotifySocket::bind(&path).unwrap();
        let sender = std::os::unix::net::UnixDatagram::unbound().unwrap();
        let (r, _w) = nix::unistd::pipe().unwrap();
        let before = open_fds();
        let fds = vec![r.as_raw_fd(); n];
        let cmsg = [nix::sys::socket::ControlMessage::ScmRights(&fds)];
        let iov = [std::io::IoSlice::new(&text)];
        let addr = nix::sys::socket::UnixAddr::new(&path).unwrap();
        nix::sys::socket::sendmsg(sender.as_raw_fd(), &iov, if n > 0 { &cmsg } else { &[] }, nix::sys::socket::MsgFlags::empty(), Some(&addr)).unwrap();
        let got = socket.recv().unwrap().unwrap();
        prop_assert_eq!(got.descriptors, n);
        prop_assert_eq!(got.pid, Some(std::process::id() as i32));
        prop_assert_eq!(got.bytes, text);
        prop_assert_eq!(open_fds(), before);
    }
}

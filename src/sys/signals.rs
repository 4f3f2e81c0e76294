//! Signals arrive through a signalfd, never through handlers.
//!
//! The signals ctrlinit acts on are blocked in every thread (the mask is set before any thread
//! exists, and threads inherit it) and read as data from the signalfd in the owner loop. No
//! handler ever runs, so nothing is async-signal-unsafe, and a signal that reaches a freshly
//! forked child before its exec takes the default action there instead of looking like a
//! container shutdown to ctrlinit. Children get an empty mask back before exec (see `process`).

use std::io;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use tokio::io::unix::AsyncFd;

/// The signals ctrlinit handles.
pub const HANDLED: [Signal; 12] = [
    Signal::SIGCHLD,
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGHUP,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
    Signal::SIGTTIN,
    Signal::SIGTTOU,
    Signal::SIGALRM,
    Signal::SIGPIPE,
];

/// Blocks [`HANDLED`] in the calling thread. Call before any thread is created.
pub fn block_handled() -> nix::Result<SigSet> {
    let mut set = SigSet::empty();
    for s in HANDLED {
        set.add(s);
    }
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
    Ok(set)
}

/// Signals ctrlinit neither handles nor can get from its own faults, whose default action would
/// stop or kill it. As PID 1 the kernel already drops them; as a subreaper (not PID 1) they are
/// ignored, so that a stray `kill -PROF` or `kill -TSTP` does not take down the whole container.
const IGNORED: [Signal; 9] = [
    Signal::SIGTSTP,
    Signal::SIGVTALRM,
    Signal::SIGPROF,
    Signal::SIGXCPU,
    Signal::SIGXFSZ,
    Signal::SIGIO,
    Signal::SIGPWR,
    Signal::SIGSTKFLT,
    Signal::SIGURG,
];

/// Ignores [`IGNORED`] and the real-time signals not reserved by the C library. Programs get
/// default dispositions back before exec (see `process::child`).
pub fn ignore_unhandled() {
    let numbers = IGNORED
        .iter()
        .map(|s| *s as libc::c_int)
        .chain(libc::SIGRTMIN()..=libc::SIGRTMAX());
    for n in numbers {
        // SAFETY: SIG_IGN installs no handler, so no code of ours ever runs in signal context;
        // numbers the kernel rejects only return an error, which is of no consequence here.
        unsafe {
            libc::signal(n, libc::SIG_IGN);
        }
    }
}

/// A signal that arrived, with its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrived {
    /// Which signal.
    pub signal: Signal,
    /// The sending process (0 for the kernel).
    pub sender: i32,
}

/// The readable end of the signalfd, registered with the runtime.
pub struct Signals {
    fd: AsyncFd<SignalFd>,
}

impl Signals {
    /// Opens a signalfd for `set` (which must be blocked). Needs a tokio runtime.
    pub fn new(set: &SigSet) -> io::Result<Self> {
        let sfd = SignalFd::with_flags(set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)?;
        // SAFETY: the SignalFd owns its descriptor, which stays open and unchanged until the
        // AsyncFd (and the SignalFd inside it) is dropped.
        let fd = unsafe { AsyncFd::register(sfd) }?;
        Ok(Signals { fd })
    }

    /// Waits for signals and returns every one pending (SIGCHLDs coalesce; that is fine, the
    /// reaper drains all exits).
    pub async fn recv(&mut self) -> io::Result<Vec<Arrived>> {
        loop {
            let mut guard = self.fd.readable_mut().await?;
            let mut out = Vec::new();
            loop {
                match guard.get_inner_mut().read_signal() {
                    Ok(Some(info)) => {
                        if let Ok(signal) = Signal::try_from(info.ssi_signo as i32) {
                            out.push(Arrived {
                                signal,
                                sender: info.ssi_pid as i32,
                            });
                        }
                    }
                    Ok(None) => break,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            guard.clear_ready();
            if !out.is_empty() {
                return Ok(out);
            }
        }
    }
}

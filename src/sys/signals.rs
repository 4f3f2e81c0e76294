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

/// Blocks [`HANDLED`] in the calling thread, or with `forward_all` (a `--` command, run as
/// tini runs its child) every signal that can be forwarded (see [`forwardable`]). Call before
/// any thread is created.
pub fn block_handled(forward_all: bool) -> nix::Result<SigSet> {
    // SAFETY: sigemptyset initialises the set it is given; sigaddset only sets bits in it.
    let raw = unsafe {
        let mut raw: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut raw);
        for s in HANDLED {
            libc::sigaddset(&mut raw, s as libc::c_int);
        }
        if forward_all {
            for n in 1..=libc::SIGRTMAX() {
                if forwardable(n) {
                    libc::sigaddset(&mut raw, n);
                }
            }
        }
        raw
    };
    // SAFETY: `raw` was initialised by sigemptyset and holds only valid signal numbers.
    let set = unsafe { SigSet::from_sigset_t_unchecked(raw) };
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
    Ok(set)
}

/// Whether signal `n` can be forwarded to a `--` command: every signal but SIGKILL and SIGSTOP
/// (they cannot be caught) and the real-time signals the C library keeps for its threads, as
/// dumb-init does.
///
/// The fault signals (SEGV, BUS, FPE, ILL, TRAP, SYS) and ABRT are forwarded too: blocking them
/// only catches the ones another process sends with `kill`. A real fault in any of ctrlinit's
/// threads still ends it: the kernel raises a fault's signal with `force_sig`, which unblocks it
/// in the faulting thread and resets a blocked signal's action to the default (kill, with a
/// core) before it is delivered, there and then, so the signalfd never sees it (and as PID 1 the
/// same force lifts the namespace init's protection). `abort()` unblocks SIGABRT before raising
/// it (glibc and musl), thread-directed, so it kills too. `tests/dumb_init_compat.rs` faults each
/// thread of a running ctrlinit from outside (its instruction pointer set to 0) to show it.
pub fn forwardable(n: libc::c_int) -> bool {
    let uncatchable = matches!(n, libc::SIGKILL | libc::SIGSTOP);
    let reserved = n > libc::SIGSYS && n < libc::SIGRTMIN();
    !uncatchable && !reserved && n >= 1 && n <= libc::SIGRTMAX()
}

/// The signal state ctrlinit was started with, for a `--` command to start with (tini's
/// behaviour): the blocked mask, and which signals were ignored.
#[derive(Clone, Copy)]
pub struct StartedWith {
    /// The blocked mask.
    pub mask: libc::sigset_t,
    /// `ignored[n]`: signal `n` was SIG_IGN.
    pub ignored: [bool; 65],
}

static STARTED_WITH: std::sync::OnceLock<StartedWith> = std::sync::OnceLock::new();

/// Notes the signal state ctrlinit was started with. Call first, before anything changes it.
/// SIGPIPE is the one exception: Rust's runtime ignores it before `main`, so it is recorded as
/// default (what a container engine starts PID 1 with).
pub fn record_startup() {
    // SAFETY: a null new mask only reads the current one into `mask`; a null new action only
    // reads the disposition into `old`; both write into the locals given.
    let state = unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
        let mut ignored = [false; 65];
        for (n, slot) in ignored.iter_mut().enumerate().skip(1) {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(n as libc::c_int, std::ptr::null(), &mut old) == 0 {
                *slot = old.sa_sigaction == libc::SIG_IGN && n as libc::c_int != libc::SIGPIPE;
            }
        }
        StartedWith { mask, ignored }
    };
    let _ = STARTED_WITH.set(state);
}

/// What [`record_startup`] noted (an empty mask and nothing ignored, if it did not run).
pub fn started_with() -> StartedWith {
    STARTED_WITH.get().copied().unwrap_or_else(|| StartedWith {
        // SAFETY: an all-zero sigset_t is the empty set on Linux.
        mask: unsafe { std::mem::zeroed() },
        ignored: [false; 65],
    })
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

/// Ignores [`IGNORED`] and the real-time signals not reserved by the C library (not with a
/// `--` command: those are blocked and forwarded instead, and an ignored signal would never
/// reach the signalfd). Programs get default dispositions back before exec (see
/// `process::child`).
pub fn ignore_unhandled(forward_all: bool) {
    if forward_all {
        return;
    }
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

/// For a client command (never the init): SIGPIPE back to its default action, so that
/// `ctrlinit check | head -1` ends quietly as Unix tools do (killed by SIGPIPE) instead of
/// panicking in `println!` once the reader has gone. Rust's runtime ignores SIGPIPE before
/// `main`; the init keeps that (it reads SIGPIPE from its signalfd, see [`HANDLED`]).
pub fn default_sigpipe_for_client() {
    // SAFETY: SIG_DFL installs no handler, so no code of ours ever runs in signal context; it
    // is called at the start of a client command, which has no signal setup of its own.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A signal that arrived, with its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrived {
    /// Its number (real-time signals have no [`Signal`]).
    pub signo: i32,
    /// The sending process (0 for the kernel).
    pub sender: i32,
}

impl Arrived {
    /// As a [`Signal`], unless it is a real-time signal.
    pub fn signal(&self) -> Option<Signal> {
        Signal::try_from(self.signo).ok()
    }
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
                    Ok(Some(info)) => out.push(Arrived {
                        signo: info.ssi_signo as i32,
                        sender: info.ssi_pid as i32,
                    }),
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

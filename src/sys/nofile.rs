//! ctrlinit's own descriptor limit (`RLIMIT_NOFILE`): read it, and raise the soft limit towards
//! the hard one when a configuration needs more (an unprivileged process may raise its soft
//! limit up to its hard limit, never past it). Programs inherit the raised soft limit, as they
//! would inherit any limit ctrlinit was started with; `rlimits` in a program's table sets its own.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// The soft and hard `RLIMIT_NOFILE` of this process now (`u64::MAX`: unlimited).
pub fn limits() -> (u64, u64) {
    getrlimit(Resource::RLIMIT_NOFILE).unwrap_or((u64::MAX, u64::MAX))
}

/// Raises the soft limit to `wanted` when it is lower and the hard limit allows it; returns the
/// soft limit in force afterwards and the hard limit. Never lowers anything.
pub fn raise_to(wanted: u64) -> (u64, u64) {
    let (soft, hard) = limits();
    if wanted <= soft {
        return (soft, hard);
    }
    let target = wanted.min(hard);
    match setrlimit(Resource::RLIMIT_NOFILE, target, hard) {
        Ok(()) => (target, hard),
        Err(_) => (soft, hard),
    }
}

//! ctrlinit's own descriptor limit (`RLIMIT_NOFILE`), as the descriptor budget of a
//! configuration is checked against it (`config::descriptors`). The soft limit was raised to the
//! hard one at start (`init::harden_self`), so the hard limit is what a config may use.

use nix::sys::resource::{Resource, getrlimit};

/// The soft and hard `RLIMIT_NOFILE` of this process now (`u64::MAX`: unlimited).
pub fn limits() -> (u64, u64) {
    getrlimit(Resource::RLIMIT_NOFILE).unwrap_or((u64::MAX, u64::MAX))
}

//! Which s6-overlay layout a root holds: v3's s6-rc source directory, v2's directories, or
//! both (s6-overlay v3 runs both, and so does the import).

use std::path::Path;

use super::tree::Tree;
use super::{v2, v3};

/// The layouts found under a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Any of `etc/cont-init.d`, `etc/services.d`, `etc/cont-finish.d`, `etc/fix-attrs.d`.
    pub v2: bool,
    /// `etc/s6-overlay/s6-rc.d`.
    pub v3: bool,
}

/// What `tree` holds.
pub fn layouts(tree: &Tree) -> Found {
    Found {
        v2: v2::DIRS.iter().any(|d| tree.is_dir(Path::new(d))),
        v3: tree.is_dir(Path::new(v3::DIR)),
    }
}

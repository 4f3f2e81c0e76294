//! What the readers make of a layout, before translation: units (a cont-init.d script, a
//! services.d service, an s6-rc oneshot or longrun) with s6's words for their settings, the
//! bundles, and the shutdown scripts. Names are s6's; translation makes them ctrlinit's.

use std::path::PathBuf;

use super::script::Command;

/// Where a unit comes from, which decides its place in s6-overlay's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `/etc/cont-init.d/NAME`: run in name order, before every service.
    ContInit,
    /// `/etc/services.d/NAME`: started after cont-init.d and the s6-rc `user` bundle.
    Services,
    /// `/etc/s6-overlay/s6-rc.d/NAME`: started by its dependencies.
    Rc,
}

/// One thing s6-overlay runs.
#[derive(Debug, Clone)]
pub struct Unit {
    /// s6's name (the directory's or the script's).
    pub name: String,
    /// Where it comes from.
    pub origin: Origin,
    /// A oneshot (else a longrun).
    pub oneshot: bool,
    /// Its directory or file, as the report names it.
    pub at: PathBuf,
    /// What it runs; `None` for a oneshot whose `up` does nothing.
    pub run: Option<Command>,
    /// The `finish` script (longruns).
    pub finish: Option<Command>,
    /// The `down` command (oneshots): run when it is brought down.
    pub down: Option<Command>,
    /// Started at boot (no `down` file; in the `user` bundle).
    pub autostart: bool,
    /// `notification-fd`.
    pub ready_fd: Option<i32>,
    /// `timeout-up`, `timeout-down`, `timeout-kill` in milliseconds.
    pub timeout_up: Option<u64>,
    /// See `timeout_up`.
    pub timeout_down: Option<u64>,
    /// See `timeout_up`.
    pub timeout_kill: Option<u64>,
    /// `down-signal`.
    pub down_signal: Option<String>,
    /// What it depends on (s6 names: units, bundles, s6-overlay's own).
    pub deps: Vec<String>,
}

impl Unit {
    /// A unit with nothing set but its name, origin and kind.
    pub fn new(name: &str, origin: Origin, oneshot: bool, at: PathBuf) -> Unit {
        Unit {
            name: name.to_string(),
            origin,
            oneshot,
            at,
            run: None,
            finish: None,
            down: None,
            autostart: true,
            ready_fd: None,
            timeout_up: None,
            timeout_down: None,
            timeout_kill: None,
            down_signal: None,
            deps: Vec::new(),
        }
    }
}

/// A layout as read.
#[derive(Debug, Default)]
pub struct Layout {
    /// Every unit, cont-init.d first (in name order), then s6-rc.d's, then services.d's.
    pub units: Vec<Unit>,
    /// Bundles: name and contents.
    pub bundles: Vec<(String, Vec<String>, PathBuf)>,
    /// The names in the `user` bundle (started before services.d); `None` when the layout
    /// has no s6-rc.d.
    pub user: Option<Vec<String>>,
    /// The names in the `user2` bundle (started after services.d).
    pub user2: Vec<String>,
    /// `/etc/cont-finish.d` scripts, in name order.
    pub finish_scripts: Vec<(PathBuf, Command)>,
}

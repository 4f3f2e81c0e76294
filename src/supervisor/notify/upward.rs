//! Readiness reported upward: when ctrlinit itself was started with `NOTIFY_SOCKET` (podman
//! `--sdnotify=container`, a systemd unit running the container), it sends `READY=1` once every
//! program meant to be up is up, `STATUS=` with a one-line summary whenever that changes, and
//! `STOPPING=1` when the container starts to stop.

use tracing::debug;

use crate::config::Kind;
use crate::supervisor::core::Core;
use crate::supervisor::core::program::{Phase, Target};

/// What has been told to ctrlinit's own supervisor.
pub(crate) struct Upward {
    address: String,
    ready_sent: bool,
    stopping_sent: bool,
    last_status: String,
}

impl Upward {
    /// From ctrlinit's own `NOTIFY_SOCKET`, if it was given one.
    pub(crate) fn from_env() -> Option<Upward> {
        let address = std::env::var("NOTIFY_SOCKET")
            .ok()
            .filter(|a| !a.is_empty())?;
        Some(Upward {
            address,
            ready_sent: false,
            stopping_sent: false,
            last_status: String::new(),
        })
    }

    /// Tells what changed since the last call.
    pub(crate) fn update(&mut self, core: &Core) {
        if core.shutting_down() {
            if !self.stopping_sent {
                self.stopping_sent = true;
                self.send("STOPPING=1\nSTATUS=stopping");
            }
            return;
        }
        let (status, all_up) = summary(core);
        let mut message = String::new();
        if all_up && !self.ready_sent {
            self.ready_sent = true;
            message.push_str("READY=1\n");
        }
        if status != self.last_status {
            message.push_str(&format!("STATUS={status}"));
            self.last_status = status;
        }
        if !message.is_empty() {
            self.send(&message);
        }
    }

    fn send(&self, message: &str) {
        if let Err(e) = crate::sys::notify_socket::send(&self.address, message.as_bytes()) {
            debug!("cannot notify {}: {e}", self.address);
        }
    }
}

/// `4 of 4 programs up` or `3 of 4 programs up; waiting for api (starting)`, and whether every
/// program meant to be up is up (a service ready, a oneshot completed).
pub(crate) fn summary(core: &Core) -> (String, bool) {
    let wanted: Vec<_> = core
        .programs()
        .iter()
        .filter(|p| p.target == Target::Up)
        .collect();
    let down: Vec<String> = wanted
        .iter()
        .filter(|p| match p.spec.kind {
            Kind::Service => !matches!(p.phase, Phase::Running { .. }),
            Kind::Oneshot => p.phase != Phase::Completed,
        })
        .map(|p| format!("{} ({})", p.name(), p.state()))
        .collect();
    let up = wanted.len() - down.len();
    let mut status = format!("{up} of {} programs up", wanted.len());
    if !down.is_empty() {
        let shown: Vec<&str> = down.iter().take(5).map(String::as_str).collect();
        status.push_str(&format!("; waiting for {}", shown.join(", ")));
        if down.len() > shown.len() {
            status.push_str(&format!(" and {} more", down.len() - shown.len()));
        }
    }
    (status, down.is_empty())
}

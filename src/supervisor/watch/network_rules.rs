//! The decisions about the container's network, pure: which watched interfaces are present,
//! when every one of them is gone, and when the grace for their return is over. No I/O and no
//! clock: link changes and the time come in as arguments, so every case is unit-tested with
//! explicit instants.
//!
//! Invariants: the grace deadline lives in the `Losing` phase and nowhere else (it cannot
//! outlive the loss it belongs to, so there is no stale timer); an interface that was never
//! seen cannot be lost; the verdict to give up is returned once.

use std::time::{Duration, Instant, SystemTime};

use crate::config::{NetworkWatch, OnNetworkLost};
use crate::model::protocol::{InterfaceStatus, NetworkOnLost, NetworkState, NetworkStatus};
use crate::supervisor::core::Level;

/// Where the watch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing to watch (no interface but `lo`, or none of those named was ever present).
    Idle,
    /// At least one watched interface is present.
    Present,
    /// Every watched interface is gone; they may come back until `until`.
    Losing {
        /// When the last one went.
        since: Instant,
        /// The end of the grace.
        until: Instant,
    },
    /// Gone past the grace.
    Lost {
        /// When the last one went.
        since: Instant,
    },
}

impl Phase {
    /// As `status` and `/metrics` name it.
    pub fn state(self) -> NetworkState {
        match self {
            Phase::Idle => NetworkState::Idle,
            Phase::Present => NetworkState::Present,
            Phase::Losing { .. } => NetworkState::Losing,
            Phase::Lost { .. } => NetworkState::Lost,
        }
    }
}

/// One watched interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// Its name.
    pub name: String,
    /// Whether it exists now.
    pub present: bool,
    /// When it was last deleted (wall clock, for the log and the termination message).
    pub gone_at: Option<SystemTime>,
    /// Whether it was ever present (an interface never seen cannot be lost).
    pub seen: bool,
}

/// What the shell must do after a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Log it and announce it on `events`.
    Note(Level, String),
    /// Stop the container with `code`; `line` is the termination message.
    GiveUp {
        /// Exit status.
        code: u8,
        /// Names the interfaces lost and when.
        line: String,
    },
}

/// The network watch: settings, interfaces and phase.
#[derive(Debug, Clone)]
pub struct NetWatch {
    settings: NetworkWatch,
    watched: Vec<Watched>,
    phase: Phase,
    /// Times every watched interface was lost past the grace.
    pub losses: u64,
}

impl NetWatch {
    /// A watch for `settings`, given the interfaces present at start (the loopback included).
    pub fn new(settings: NetworkWatch, present: &[String]) -> (NetWatch, Vec<Outcome>) {
        let names: Vec<String> = match &settings.interfaces {
            Some(named) => named.clone(),
            None => present.iter().filter(|n| *n != "lo").cloned().collect(),
        };
        let watched: Vec<Watched> = names
            .into_iter()
            .map(|name| {
                let present = present.contains(&name);
                Watched {
                    name,
                    present,
                    gone_at: None,
                    seen: present,
                }
            })
            .collect();
        let mut w = NetWatch {
            settings,
            watched,
            phase: Phase::Idle,
            losses: 0,
        };
        w.phase = if w.any_present() {
            Phase::Present
        } else {
            Phase::Idle
        };
        let note = w.start_note();
        (w, vec![note])
    }

    fn start_note(&self) -> Outcome {
        let s = &self.settings;
        if self.watched.is_empty() {
            return Outcome::Note(
                Level::Info,
                "network: no interface but lo in this namespace (a container started with --network none?): nothing to watch".into(),
            );
        }
        let names = self.names(|_| true);
        let what = match s.on_lost {
            OnNetworkLost::Exit => format!(
                "on_lost = \"exit\": the container stops with exit code {} once every one has been gone for {}",
                s.exit_code,
                secs(s.grace)
            ),
            OnNetworkLost::Warn => "on_lost = \"warn\": a loss is reported, nothing stops".into(),
        };
        if self.phase == Phase::Idle {
            return Outcome::Note(
                Level::Warn,
                format!("network: watching {names}, none of which is present yet; {what}"),
            );
        }
        Outcome::Note(Level::Info, format!("network: watching {names}; {what}"))
    }

    /// The phase now.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The watched interfaces.
    pub fn watched(&self) -> &[Watched] {
        &self.watched
    }

    /// The settings it runs by.
    pub fn settings(&self) -> &NetworkWatch {
        &self.settings
    }

    /// When the grace ends, while every watched interface is gone.
    pub fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Losing { until, .. } => Some(until),
            _ => None,
        }
    }

    /// Whether the network is usable (not ready while every watched interface is gone).
    pub fn usable(&self) -> bool {
        matches!(self.phase, Phase::Idle | Phase::Present)
    }

    /// The interface `name` exists (it appeared, or changed).
    pub fn appeared(&mut self, name: &str, now: Instant) -> Vec<Outcome> {
        let Some(w) = self.watched.iter_mut().find(|w| w.name == name) else {
            return vec![];
        };
        if w.present {
            return vec![];
        }
        w.present = true;
        w.seen = true;
        let back = match self.phase {
            Phase::Losing { since, .. } | Phase::Lost { since } => Some(now - since),
            _ => None,
        };
        self.phase = Phase::Present;
        let msg = match back {
            Some(after) => format!("network: {name} is back after {}", secs(after)),
            None => format!("network: {name} is present"),
        };
        vec![Outcome::Note(Level::Info, msg)]
    }

    /// The interface `name` was deleted.
    pub fn vanished(&mut self, name: &str, now: Instant, wall: SystemTime) -> Vec<Outcome> {
        let Some(w) = self.watched.iter_mut().find(|w| w.name == name) else {
            return vec![];
        };
        if !w.present {
            return vec![];
        }
        w.present = false;
        w.gone_at = Some(wall);
        if self.any_present() {
            let left = self.names(|w| w.present);
            return vec![Outcome::Note(
                Level::Warn,
                format!("network: {name} is gone ({left} left)"),
            )];
        }
        let grace = self.settings.grace;
        self.phase = Phase::Losing {
            since: now,
            until: now + grace,
        };
        let then = match self.settings.on_lost {
            OnNetworkLost::Exit => format!(
                "the container stops in {} unless one comes back",
                secs(grace)
            ),
            OnNetworkLost::Warn => format!("reported as lost in {}", secs(grace)),
        };
        let msg = format!("network: {name} is gone, every watched interface is gone; {then}");
        let mut out = vec![Outcome::Note(Level::Warn, msg)];
        if grace.is_zero() {
            out.extend(self.tick(now));
        }
        out
    }

    /// The interfaces present now, after notifications were lost: each watched one is
    /// compared with it.
    pub fn resync(&mut self, present: &[String], now: Instant, wall: SystemTime) -> Vec<Outcome> {
        let names: Vec<(String, bool)> = self
            .watched
            .iter()
            .map(|w| (w.name.clone(), present.contains(&w.name)))
            .collect();
        let mut out = Vec::new();
        for (name, here) in names {
            if here {
                out.extend(self.appeared(&name, now));
            } else {
                out.extend(self.vanished(&name, now, wall));
            }
        }
        out
    }

    /// The time is `now`: the grace may be over.
    pub fn tick(&mut self, now: Instant) -> Vec<Outcome> {
        let Phase::Losing { since, until } = self.phase else {
            return vec![];
        };
        if now < until {
            return vec![];
        }
        self.phase = Phase::Lost { since };
        self.losses += 1;
        let lost = self.lost_list();
        let s = &self.settings;
        match s.on_lost {
            OnNetworkLost::Exit => {
                let line = format!(
                    "network lost: {lost}; not back within {}, stopping the container with exit code {}",
                    secs(s.grace),
                    s.exit_code
                );
                vec![
                    Outcome::Note(Level::Error, line.clone()),
                    Outcome::GiveUp {
                        code: s.exit_code,
                        line,
                    },
                ]
            }
            OnNetworkLost::Warn => vec![Outcome::Note(
                Level::Warn,
                format!(
                    "network lost: {lost}; not back within {} (on_lost = \"warn\": nothing stops)",
                    secs(s.grace)
                ),
            )],
        }
    }

    /// `eth0 gone at 2026-…Z, tun0 gone at …`.
    fn lost_list(&self) -> String {
        let parts: Vec<String> = self
            .watched
            .iter()
            .filter(|w| w.seen && !w.present)
            .map(|w| match w.gone_at {
                Some(t) => format!("{} gone at {}", w.name, humantime::format_rfc3339_millis(t)),
                None => format!("{} gone", w.name),
            })
            .collect();
        parts.join(", ")
    }

    fn any_present(&self) -> bool {
        self.watched.iter().any(|w| w.present)
    }

    fn names(&self, which: impl Fn(&Watched) -> bool) -> String {
        let n: Vec<&str> = self
            .watched
            .iter()
            .filter(|w| which(w))
            .map(|w| w.name.as_str())
            .collect();
        n.join(", ")
    }
}

impl NetWatch {
    /// As `status` shows it at `now`.
    pub fn status(&self, now: Instant) -> NetworkStatus {
        let lost_for = match self.phase {
            Phase::Losing { since, .. } | Phase::Lost { since } => Some(now - since),
            _ => None,
        };
        NetworkStatus {
            state: self.phase.state(),
            on_lost: match self.settings.on_lost {
                OnNetworkLost::Exit => NetworkOnLost::Exit,
                OnNetworkLost::Warn => NetworkOnLost::Warn,
            },
            grace_ms: self.settings.grace.as_millis() as u64,
            exit_code: self.settings.exit_code,
            lost_for_ms: lost_for.map(|d| d.as_millis() as u64),
            interfaces: self
                .watched
                .iter()
                .map(|w| InterfaceStatus {
                    name: w.name.clone(),
                    present: w.present,
                    gone_at: w
                        .gone_at
                        .map(|t| humantime::format_rfc3339_millis(t).to_string()),
                })
                .collect(),
        }
    }
}

/// `3s`, `1.5s`.
fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Interface names by index, as last seen: the kernel announces a rename as a change of the
/// link with the same index and the new name only, so the old name's going is known only from
/// here. Seeded with the interfaces present at start-up, so a link renamed before any event
/// on it is seen to go too.
#[derive(Debug, Clone, Default)]
pub struct LinkNames(std::collections::HashMap<i32, String>);

impl LinkNames {
    /// The names of the links present now, by index.
    pub fn new(present: &[(i32, String)]) -> LinkNames {
        LinkNames(present.iter().cloned().collect())
    }
}

impl NetWatch {
    /// Link `index` exists under `name` (new or changed): a rename is its old name going, then
    /// the new name appearing (so a link renamed to a watched name is that name back).
    pub fn link_present(
        &mut self,
        names: &mut LinkNames,
        index: i32,
        name: &str,
        now: Instant,
        wall: SystemTime,
    ) -> Vec<Outcome> {
        let mut out = Vec::new();
        if let Some(old) = names.0.insert(index, name.to_string())
            && old != name
        {
            out.extend(self.vanished(&old, now, wall));
        }
        out.extend(self.appeared(name, now));
        out
    }

    /// Link `index`, last called `name`, was deleted.
    pub fn link_gone(
        &mut self,
        names: &mut LinkNames,
        index: i32,
        name: &str,
        now: Instant,
        wall: SystemTime,
    ) -> Vec<Outcome> {
        let old = names.0.remove(&index);
        let mut out = Vec::new();
        // A rename missed (a lost notification) leaves the name known here: that one goes too.
        if let Some(old) = old.filter(|o| o != name) {
            out.extend(self.vanished(&old, now, wall));
        }
        out.extend(self.vanished(name, now, wall));
        out
    }

    /// [`NetWatch::resync`] with the links present now by index, which become the names known.
    pub fn links_resync(
        &mut self,
        names: &mut LinkNames,
        present: &[(i32, String)],
        now: Instant,
        wall: SystemTime,
    ) -> Vec<Outcome> {
        *names = LinkNames::new(present);
        let by_name: Vec<String> = present.iter().map(|(_, n)| n.clone()).collect();
        self.resync(&by_name, now, wall)
    }
}

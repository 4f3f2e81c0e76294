//! The one lowercase state vocabulary users see in logs, `status`, `--wait`, JSON and events.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A program's state as users see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Meant to run, but its dependencies do not hold yet.
    Waiting,
    /// Spawned, not yet ready (satisfies `started`); a oneshot while it runs.
    Starting,
    /// Up and ready (satisfies `ready`).
    Running,
    /// Ended; waiting out the restart delay.
    Backoff,
    /// Stop signal sent to its process group; waiting for the group to end.
    Stopping,
    /// Down on purpose: by hand, `autostart = false`, `on_exhausted = "stop"`, shutdown.
    Stopped,
    /// Ended and not restarted by policy.
    Exited,
    /// A oneshot that succeeded (satisfies `completed`).
    Completed,
    /// Its restart budget is spent: it stays down (and, with `on_exhausted = "exit"`, the
    /// container stops).
    Exhausted,
}

impl State {
    /// Every state, in lifecycle order.
    pub const ALL: [State; 9] = [
        State::Waiting,
        State::Starting,
        State::Running,
        State::Backoff,
        State::Stopping,
        State::Stopped,
        State::Exited,
        State::Completed,
        State::Exhausted,
    ];

    /// The lowercase name used everywhere a state is shown or parsed (logs, `status`,
    /// `--wait`, JSON, events).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Waiting => "waiting",
            State::Starting => "starting",
            State::Running => "running",
            State::Backoff => "backoff",
            State::Stopping => "stopping",
            State::Stopped => "stopped",
            State::Exited => "exited",
            State::Completed => "completed",
            State::Exhausted => "exhausted",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        State::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = State::ALL.iter().map(|s| s.as_str()).collect();
                format!("unknown state {s:?}; states are {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in State::ALL {
            assert_eq!(s.as_str().parse::<State>().unwrap(), s);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        assert!("FATAL".parse::<State>().is_err());
    }
}

//! One external dependency's record (`[external.NAME]`), as the core keeps it: its state, its
//! checks in a row, its last result. The decisions on it are in `core/external_rules.rs`.

use std::sync::Arc;
use std::time::Instant;

use crate::config::ExternalSpec;
use crate::model::protocol::ExternalStatus;

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Where an external stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExternalState {
    /// Not ready yet since ctrlinit started (or since a reload added it).
    Waiting,
    /// Its last `successes` checks passed.
    Ready,
    /// It was ready; its last `failures` checks failed.
    Down,
}

impl ExternalState {
    /// The word `status`, events and metrics use.
    pub fn as_str(self) -> &'static str {
        match self {
            ExternalState::Waiting => "waiting",
            ExternalState::Ready => "ready",
            ExternalState::Down => "down",
        }
    }
}

/// One external's record.
#[derive(Debug, Clone)]
pub struct External {
    /// Its settings.
    pub spec: Arc<ExternalSpec>,
    /// Where it stands.
    pub state: ExternalState,
    /// Passing checks in a row.
    pub passes: u32,
    /// Failing checks in a row.
    pub fails: u32,
    /// The last check's result, as `status` shows it: `tcp config:8082: connection refused`.
    pub last: Option<String>,
    /// When `state` last changed.
    pub since: Instant,
    /// When `start_timeout` runs out, while it has not been ready yet.
    pub give_up_at: Option<Instant>,
    /// A peer ctrlinit's boot id and program run, as last seen passing.
    pub peer_run: Option<String>,
    /// Checks made.
    pub checks: u64,
    /// Times it went down or its peer program restarted.
    pub restarts_caused: u64,
}

impl External {
    /// A record for `spec`, waiting.
    pub fn new(spec: Arc<ExternalSpec>, now: Instant) -> Self {
        External {
            spec,
            state: ExternalState::Waiting,
            passes: 0,
            fails: 0,
            last: None,
            since: now,
            give_up_at: None,
            peer_run: None,
            checks: 0,
            restarts_caused: 0,
        }
    }

    /// Its row of `status`: `dependents` are the programs that name it in `depends_on`.
    pub fn status(&self, dependents: Vec<String>, now: Instant) -> ExternalStatus {
        ExternalStatus {
            name: self.spec.name.clone(),
            check: self.spec.check.describe(),
            state: self.state.as_str().to_string(),
            last: self.last.clone(),
            since_ms: millis(now.saturating_duration_since(self.since)),
            checks: self.checks,
            restarts_caused: self.restarts_caused,
            dependents,
        }
    }

    /// What a dependent waiting for it is said to wait for.
    pub fn waiting_why(&self) -> String {
        let last = self.last.as_deref().unwrap_or("not checked yet");
        format!("{}: {last}", self.spec.name)
    }
}

//! One wait for every command that waits: `status --wait`, `start`, `stop` and `restart` all
//! wait until a set of [`Goal`]s holds at once, one fails, the deadline passes, or the init
//! exits. Each state change on the event stream is a cue to look again.

use std::io;
use std::time::Duration;

use super::handles::{Handles, closed};
use crate::model::State;
use crate::model::protocol::ProgramStatus;
use crate::supervisor::control::Goal;
use crate::supervisor::events::{Received, Subscription};

/// A goal not met yet, as it stands.
#[derive(Debug, Clone)]
pub(crate) struct Unmet {
    /// The program.
    pub(crate) name: String,
    /// The states it must reach.
    pub(crate) states: Vec<State>,
    /// Its state now.
    pub(crate) state: State,
}

/// How a wait ended.
pub(crate) enum Outcome {
    /// Every goal holds.
    Held,
    /// A program reached one of its goal's failing states: the error line.
    Failed(String),
    /// The deadline passed first, with these goals unmet.
    TimedOut(Vec<Unmet>),
    /// The init is exiting.
    Closing,
}

/// `a or b`.
pub(crate) fn states_text(states: &[State]) -> String {
    let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
    names.join(" or ")
}

/// Waits until every goal holds at once (programs not found are not waited for), one fails, or
/// `timeout` passes. `events` is subscribed before the change waited for was made, so no state
/// change is missed between the two.
pub(crate) async fn await_goals(
    h: &Handles,
    goals: &[Goal],
    timeout: Duration,
    mut events: Subscription,
) -> io::Result<Outcome> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut closing = h.closing.clone();
    loop {
        let programs = h.all_programs().await?;
        let mut unmet = Vec::new();
        for goal in goals {
            let Some(p) = programs.iter().find(|p| p.name == goal.name) else {
                continue;
            };
            match check(goal, p) {
                Check::Holds => {}
                Check::Fails => return Ok(Outcome::Failed(failed(goal, p))),
                Check::Pending => unmet.push(Unmet {
                    name: p.name.clone(),
                    states: goal.states.clone(),
                    state: p.state,
                }),
            }
        }
        if unmet.is_empty() {
            return Ok(Outcome::Held);
        }
        // Checked first: while events keep coming, the timeout alone would never win.
        if tokio::time::Instant::now() >= deadline {
            return Ok(Outcome::TimedOut(unmet));
        }
        tokio::select! {
            r = tokio::time::timeout_at(deadline, events.recv()) => match r {
                Err(_) => return Ok(Outcome::TimedOut(unmet)),
                Ok(Received::Closed) => return Ok(Outcome::Closing),
                // An event, or some missed: either way, look again.
                Ok(Received::Event(_) | Received::Missed(_)) => {}
            },
            _ = closed(&mut closing) => return Ok(Outcome::Closing),
        }
    }
}

enum Check {
    Holds,
    Fails,
    Pending,
}

fn check(goal: &Goal, p: &ProgramStatus) -> Check {
    let new_run = goal.after_run.is_none_or(|r| p.run > r);
    if goal.states.contains(&p.state) && new_run {
        Check::Holds
    } else if goal.fails.contains(&p.state) && new_run {
        Check::Fails
    } else {
        Check::Pending
    }
}

fn failed(goal: &Goal, p: &ProgramStatus) -> String {
    let exit = p
        .last_exit
        .as_ref()
        .map(|e| format!(" ({})", e.text))
        .unwrap_or_default();
    format!(
        "{} did not reach {}: it is {}{exit}",
        p.name,
        states_text(&goal.states),
        p.state
    )
}

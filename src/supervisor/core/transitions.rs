//! The lifecycle's allowed state changes, as data.
//!
//! [`ALLOWED`] lists every `(from, to)` pair of public states the core may announce. The core's
//! simulator fails on any announced change not in it, and a test checks the book's state
//! table says the same, so the documentation, the table and the code cannot drift apart.

use crate::model::State::{self, *};

/// Every change of public state the core may announce. A state passed through within one
/// decision is not announced, so some pairs skip one (`backoff -> starting`: the `waiting`
/// between them lasted no time).
pub const ALLOWED: &[(State, State)] = &[
    (Waiting, Starting),
    (Waiting, Stopped),
    (Starting, Running),
    (Starting, Stopping),
    (Starting, Backoff),
    (Starting, Waiting),
    (Starting, Completed),
    (Starting, Exited),
    (Starting, Exhausted),
    (Starting, Stopped),
    (Running, Stopping),
    (Running, Backoff),
    (Running, Waiting),
    (Running, Starting),
    (Running, Exited),
    (Running, Exhausted),
    (Running, Stopped),
    (Backoff, Starting),
    (Backoff, Waiting),
    (Backoff, Stopped),
    (Stopping, Stopped),
    (Stopping, Backoff),
    (Stopping, Waiting),
    (Stopping, Starting),
    (Stopping, Completed),
    (Stopping, Exited),
    (Stopping, Exhausted),
    (Stopped, Waiting),
    (Stopped, Starting),
    (Exited, Waiting),
    (Exited, Starting),
    (Exited, Stopped),
    (Completed, Waiting),
    (Completed, Starting),
    (Completed, Stopped),
    (Exhausted, Waiting),
    (Exhausted, Starting),
    (Exhausted, Stopped),
];

/// Whether the core may announce a change from `from` to `to`.
pub fn allowed(from: State, to: State) -> bool {
    ALLOWED.contains(&(from, to))
}

/// The states `from` may change to, in lifecycle order.
pub fn next_states(from: State) -> Vec<State> {
    State::ALL
        .into_iter()
        .filter(|&to| allowed(from, to))
        .collect()
}

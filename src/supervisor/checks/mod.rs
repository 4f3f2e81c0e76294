//! Every kind of check in one room: readiness (`readiness`: has a run become ready?), liveness
//! (`liveness` runs `[program.NAME.health]` checks; `health` turns their results into a status with
//! thresholds, as pure code), and what both share: the in-process attempts (`in_process`: tcp,
//! http, file freshness, heartbeat, silence), the HTTP client (`http_get`) and the events checks
//! send to the owner loop (`events`). External dependencies' checks (`external`) use the same
//! attempts, with names resolved; a peer ctrlinit's program is followed as a stream when the
//! peer can (`peer`, its stream bounded by `peer_stream`); names are resolved by `resolve`. Checks never touch program state: each runs as its own task
//! (one timer per check) and reports results as events; the owner loop decides.

pub(crate) mod events;
pub(crate) mod external_tasks;
pub(crate) mod http_get;
pub(crate) mod in_process;
pub(crate) mod liveness_tasks;
pub(crate) mod peer;
pub(crate) mod peer_stream;
pub(crate) mod readiness;
pub(crate) mod resolve;

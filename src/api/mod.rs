//! The control plane: the protocol's framing, the server inside the init (transport only: bind,
//! peer check, framing, one handler per request, one wait for goals), the client used by
//! `ctrlinit status` and friends, and the read-only probe endpoint ([`http`], [`metrics`]).

pub mod client;
mod connection;
mod goals;
mod handlers;
mod handles;
mod http;
mod http_lanes;
mod metrics;
mod peer;
mod peer_http;
pub mod protocol;
pub mod server;
mod slots;
mod socket_file;
mod warn_limit;

//! The control plane: the protocol shared by both ends, the server inside the init, and the
//! client used by `ctrlinit status` and friends.

pub mod client;
pub mod protocol;
pub mod server;

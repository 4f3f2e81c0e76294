//! sd_notify in both directions: the intake of programs' datagrams on ctrlinit's notify socket
//! (`intake`: receiving, attributing a sender to a program's run) with their parsing (`message`,
//! pure), and ctrlinit's own `READY=1` sent upward to whatever started it (`upward`).

pub(crate) mod intake;
pub(crate) mod upward;

//! A run's processes: starting them with their wiring (`launch`, `wiring`), telling which
//! processes belong to which run (`tracking`, from one listing of `/proc`: `listed`), and the
//! forking daemons' main processes ctrlinit did not start itself (`adopted`).

pub(crate) mod adopted;
pub(crate) mod launch;
pub(crate) mod listed;
pub(crate) mod tracking;
pub(crate) mod wiring;

//! The network watch's shell: the netlink socket registered in the owner loop, read a bounded
//! batch per turn (a flood of link messages waits for the next turn instead of starving
//! signals, exits and requests), and the grace deadline. The runner calls [`Links::wait`] in
//! its `select!` and [`Links::turn`] when it resolves.

use std::time::{Instant, SystemTime};

use tokio::io::unix::AsyncFd;
use tracing::{debug, warn};

use super::network_rules::{LinkNames, NetWatch, Outcome};
use crate::config::NetworkWatch;
use crate::model::printable::escape_controls;
use crate::sys::netlink::{LinkChange, LinkEvents, links_now};

/// Datagrams read per turn of the loop.
const BATCH: usize = 32;

/// The socket, the decisions, and the interface names by index (a rename names only the
/// index, so the old name's going is known from these).
pub struct Links {
    socket: AsyncFd<LinkEvents>,
    /// The decisions.
    pub watch: NetWatch,
    /// The last batch stopped at its size with datagrams still waiting.
    backlog: bool,
    names: LinkNames,
}

impl Links {
    /// Subscribes to link events, then lists the interfaces present (in that order, so no
    /// change between the two is missed); `Err` says why the network cannot be watched.
    pub fn open(settings: NetworkWatch) -> Result<(Links, Vec<Outcome>), String> {
        let events = LinkEvents::open()
            .map_err(|e| format!("failed to open a netlink route socket: {e}"))?;
        let socket = events
            .into_async()
            .map_err(|e| format!("failed to register the netlink socket: {e}"))?;
        let present =
            shown(links_now().map_err(|e| format!("failed to list the network interfaces: {e}"))?);
        let by_name: Vec<String> = present.iter().map(|(_, n)| n.clone()).collect();
        let (watch, outcomes) = NetWatch::new(settings, &by_name);
        Ok((
            Links {
                socket,
                watch,
                backlog: false,
                names: LinkNames::new(&present),
            },
            outcomes,
        ))
    }

    /// Resolves when link events may be waiting or the grace is over.
    pub async fn wait(&self) {
        if self.backlog {
            return;
        }
        let deadline = self.watch.deadline();
        tokio::select! {
            guard = self.socket.readable() => {
                if let Ok(mut g) = guard {
                    // Cleared before the drain: an event that arrives during it wakes the loop.
                    g.clear_ready();
                }
            }
            () = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    }

    /// Reads up to a batch of link events, decides on them and on the time.
    pub fn turn(&mut self) -> Vec<Outcome> {
        let mut changes = Vec::new();
        self.backlog = false;
        for i in 0..=BATCH {
            if i == BATCH {
                self.backlog = true;
                break;
            }
            match self.socket.get_mut().recv(&mut changes) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    warn!("network: failed to read link events: {e}");
                    break;
                }
            }
        }
        let (now, wall) = (Instant::now(), SystemTime::now());
        let mut out = Vec::new();
        for change in changes {
            out.extend(self.apply(change, now, wall));
        }
        out.extend(self.watch.tick(now));
        out
    }

    fn apply(&mut self, change: LinkChange, now: Instant, wall: SystemTime) -> Vec<Outcome> {
        match change {
            LinkChange::Present { index, name, up } => {
                let name = escape_controls(&name).into_owned();
                debug!("network: link {name} (index {index}) present, up: {up}");
                self.watch
                    .link_present(&mut self.names, index, &name, now, wall)
            }
            LinkChange::Gone { index, name } => {
                let name = escape_controls(&name).into_owned();
                debug!("network: link {name} (index {index}) deleted");
                self.watch
                    .link_gone(&mut self.names, index, &name, now, wall)
            }
            LinkChange::Resync => match links_now().map(shown) {
                Ok(present) => {
                    debug!("network: link events were lost; listed the interfaces again");
                    self.watch
                        .links_resync(&mut self.names, &present, now, wall)
                }
                Err(e) => {
                    warn!("network: failed to list the network interfaces: {e}");
                    vec![]
                }
            },
        }
    }
}

/// The links with their names as shown: the kernel takes any byte but `/`, `:` and white space
/// in a name, so whoever may name an interface in the namespace could put a terminal escape in
/// `status`, the console and `ctrlinit.log`. Escaped once, here, the name is the same everywhere
/// (and a configured name, validated, never needs it).
fn shown(links: Vec<(i32, String)>) -> Vec<(i32, String)> {
    links
        .into_iter()
        .map(|(i, n)| (i, escape_controls(&n).into_owned()))
        .collect()
}

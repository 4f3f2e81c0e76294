//! Who the probe endpoint serves at once, so that slow or many connections (a slowloris) from
//! anyone who can reach the port cannot make `/livez` fail and get a healthy container
//! restarted.
//!
//! Two lanes:
//! - the **full lane**: at most [`MAX_CONNECTIONS`] connections, at most [`PER_SOURCE`] from
//!   one address; any path, a request head within the deadlines of `http.rs`;
//! - the **probe lane**, for what the full lane refuses: at most [`PROBE_LANE`] connections
//!   that must send their whole head within a fraction of a second (a probe sends it in its
//!   first packet) and get only `/livez`, `/readyz` and a peer's `/v1/peer` answered (the rest
//!   `503 busy`).
//!
//! A peer's watch (`/v1/peer?…&watch=MS`, held open) moves to a **watch lane** of its own once
//! its request is read: at most [`MAX_WATCHES`], at most [`WATCHES_PER_SOURCE`] from one
//! address. It gives its full- or probe-lane slot back as it moves, so watches cannot take the
//! probes' room nor hold the full lane. A peer's one answer (`/v1/peer?program=…`) read in the
//! probe lane (the full lane being held, say by a slowloris) moves to a **peer lane** of
//! [`PEER_LANE`]: a dependent container must not read "busy" as a verdict on this one.
//!
//! A connection neither lane takes is told `busy` and closed at once. Every slot is given back
//! by its [`Ticket`]'s drop, however the connection ends.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

/// Connections served at once in the full lane.
pub(crate) const MAX_CONNECTIONS: usize = 32;

/// Of those, the most one source address may hold.
pub(crate) const PER_SOURCE: usize = 8;

/// Connections held at once in the probe lane.
pub(crate) const PROBE_LANE: usize = 64;

/// Peers' watches held at once.
pub(crate) const MAX_WATCHES: usize = 32;

/// Of those, the most one source address may hold (one per external it checks).
pub(crate) const WATCHES_PER_SOURCE: usize = 8;

/// Peers' one-answer requests served at once from the probe lane.
pub(crate) const PEER_LANE: usize = 16;

/// Which lane a connection got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    Full,
    Probes,
    Watch,
    Peer,
}

#[derive(Debug, Default)]
struct Counts {
    full: usize,
    probes: usize,
    peers: usize,
    by_source: HashMap<IpAddr, usize>,
    watches: usize,
    watches_by_source: HashMap<IpAddr, usize>,
}

/// One less for `source` in `map`, its entry gone at zero.
fn release(map: &mut HashMap<IpAddr, usize>, source: IpAddr) {
    if let Some(n) = map.get_mut(&source) {
        *n -= 1;
        if *n == 0 {
            map.remove(&source);
        }
    }
}

/// The lanes' counts, shared by the accept loop and the connections.
#[derive(Debug, Default)]
pub(crate) struct Lanes {
    counts: Mutex<Counts>,
}

/// A connection's place in a lane, given back on drop.
#[derive(Debug)]
pub(crate) struct Ticket {
    lanes: Arc<Lanes>,
    lane: Lane,
    source: IpAddr,
}

impl Ticket {
    /// The lane it holds.
    pub(crate) fn lane(&self) -> Lane {
        self.lane
    }

    /// Moves a full- or probe-lane connection to the watch lane, giving its slot back; false
    /// (and nothing changed) when the watch lane has no room for its source.
    pub(crate) fn move_to_watch(&mut self) -> bool {
        let mut c = self.lanes.lock();
        let mine = c.watches_by_source.get(&self.source).copied().unwrap_or(0);
        if !matches!(self.lane, Lane::Full | Lane::Probes)
            || c.watches >= MAX_WATCHES
            || mine >= WATCHES_PER_SOURCE
        {
            return false;
        }
        c.give_back(self.lane, self.source);
        c.watches += 1;
        *c.watches_by_source.entry(self.source).or_default() += 1;
        self.lane = Lane::Watch;
        true
    }

    /// Moves a probe-lane connection that asked a peer's question to the peer lane, giving its
    /// probe-lane slot back; false (nothing changed) when the peer lane is full. A full-lane
    /// connection stays where it is (true): it has its room already.
    pub(crate) fn move_to_peer(&mut self) -> bool {
        match self.lane {
            Lane::Full | Lane::Peer => return true,
            Lane::Watch => return false,
            Lane::Probes => {}
        }
        let mut c = self.lanes.lock();
        if c.peers >= PEER_LANE {
            return false;
        }
        c.give_back(Lane::Probes, self.source);
        c.peers += 1;
        self.lane = Lane::Peer;
        true
    }
}

impl Counts {
    /// The slot of a connection from `source` in `lane`, given back.
    fn give_back(&mut self, lane: Lane, source: IpAddr) {
        match lane {
            Lane::Probes => self.probes = self.probes.saturating_sub(1),
            Lane::Peer => self.peers = self.peers.saturating_sub(1),
            Lane::Full => {
                self.full = self.full.saturating_sub(1);
                release(&mut self.by_source, source);
            }
            Lane::Watch => {
                self.watches = self.watches.saturating_sub(1);
                release(&mut self.watches_by_source, source);
            }
        }
    }
}

impl Lanes {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a connection from `source`, or `None` (busy).
    pub(crate) fn admit(self: &Arc<Self>, source: IpAddr) -> Option<Ticket> {
        let mut c = self.lock();
        let mine = c.by_source.get(&source).copied().unwrap_or(0);
        let lane = if c.full < MAX_CONNECTIONS && mine < PER_SOURCE {
            c.full += 1;
            *c.by_source.entry(source).or_default() += 1;
            Lane::Full
        } else if c.probes < PROBE_LANE {
            c.probes += 1;
            Lane::Probes
        } else {
            return None;
        };
        Some(Ticket {
            lanes: Arc::clone(self),
            lane,
            source,
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.lanes.lock().give_back(self.lane, self.source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_source_cannot_take_the_full_lane_and_probes_keep_a_lane() {
        let lanes = Arc::new(Lanes::default());
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let held: Vec<Ticket> = (0..PER_SOURCE).map(|_| lanes.admit(a).unwrap()).collect();
        assert!(held.iter().all(|t| t.lane() == Lane::Full));
        // Its next goes to the probe lane; another source still gets the full lane.
        assert_eq!(lanes.admit(a).map(|t| t.lane()), Some(Lane::Probes));
        let b: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(lanes.admit(b).map(|t| t.lane()), Some(Lane::Full));
        // Many sources fill the full lane; then the probe lane; then busy.
        let mut more = Vec::new();
        for k in 0u8.. {
            let t = lanes.admit(IpAddr::from([10, 1, 0, k])).unwrap();
            let lane = t.lane();
            more.push(t);
            if lane == Lane::Probes {
                break;
            }
        }
        assert_eq!(more.len(), MAX_CONNECTIONS - PER_SOURCE + 1);
        let probes: Vec<Ticket> = (1..PROBE_LANE).map(|_| lanes.admit(b).unwrap()).collect();
        assert!(probes.iter().all(|t| t.lane() == Lane::Probes));
        assert!(lanes.admit(b).is_none());
        drop(probes);
        drop(held);
        assert_eq!(lanes.admit(a).map(|t| t.lane()), Some(Lane::Full));
    }

    #[test]
    fn watches_leave_the_full_lane_are_capped_and_never_take_the_probe_lane() {
        let lanes = Arc::new(Lanes::default());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let mut watches = Vec::new();
        for _ in 0..WATCHES_PER_SOURCE {
            let mut t = lanes.admit(a).unwrap();
            assert!(t.move_to_watch());
            assert_eq!(t.lane(), Lane::Watch);
            watches.push(t);
        }
        // Its full-lane slots were given back as they moved.
        assert_eq!(lanes.admit(a).map(|t| t.lane()), Some(Lane::Full));
        let mut one_more = lanes.admit(a).unwrap();
        assert!(!one_more.move_to_watch(), "past the per-source cap");
        assert_eq!(one_more.lane(), Lane::Full);
        drop(one_more);
        // Other sources fill the watch lane to its cap, then are refused.
        let mut k = 0u8;
        while watches.len() < MAX_WATCHES {
            let mut t = lanes.admit(IpAddr::from([10, 2, k / 4, k])).unwrap();
            assert!(t.move_to_watch());
            watches.push(t);
            k += 1;
        }
        let b: IpAddr = "10.9.9.9".parse().unwrap();
        let mut refused = lanes.admit(b).unwrap();
        assert!(!refused.move_to_watch(), "past the cap");
        drop(refused);
        // The watches hold none of the other lanes: all of the full lane, then all of the
        // probe lane, are still there; a probe-lane connection never becomes a watch.
        let source = |n: usize| IpAddr::from([10, 3, (n / 256) as u8, (n % 256) as u8]);
        let full: Vec<Ticket> = (0..MAX_CONNECTIONS)
            .map(|n| lanes.admit(source(n)).unwrap())
            .collect();
        assert!(full.iter().all(|t| t.lane() == Lane::Full));
        let probes: Vec<Ticket> = (0..PROBE_LANE)
            .map(|n| lanes.admit(source(1000 + n)).unwrap())
            .collect();
        assert!(probes.iter().all(|t| t.lane() == Lane::Probes));
        assert!(lanes.admit(b).is_none());
        drop(watches);
        drop(full);
        let mut again = lanes.admit(b).unwrap();
        assert!(again.move_to_watch());
    }

    #[test]
    fn a_peer_asking_in_the_probe_lane_gets_a_lane_of_its_own() {
        let lanes = Arc::new(Lanes::default());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let _full: Vec<Ticket> = (0..PER_SOURCE).map(|_| lanes.admit(a).unwrap()).collect();
        // The full lane has no room for `a`: its peer requests come in the probe lane, and
        // move out of it, to the peer lane (one-answer) or the watch lane.
        let mut watch = lanes.admit(a).unwrap();
        assert_eq!(watch.lane(), Lane::Probes);
        assert!(watch.move_to_watch());
        let mut peers = Vec::new();
        for _ in 0..PEER_LANE {
            let mut t = lanes.admit(a).unwrap();
            assert_eq!(t.lane(), Lane::Probes);
            assert!(t.move_to_peer());
            assert_eq!(t.lane(), Lane::Peer);
            peers.push(t);
        }
        let mut one_more = lanes.admit(a).unwrap();
        assert!(!one_more.move_to_peer(), "past the peer lane's cap");
        drop(one_more);
        // The probe lane is whole: peers hold none of it.
        let probes: Vec<Ticket> = (0..PROBE_LANE).map(|_| lanes.admit(a).unwrap()).collect();
        assert!(probes.iter().all(|t| t.lane() == Lane::Probes));
        assert!(lanes.admit(a).is_none());
        drop(peers);
        let mut again = lanes.admit(a);
        assert!(again.is_none(), "the probe lane is still full");
        drop(probes);
        again = lanes.admit(a);
        assert!(again.as_mut().is_some_and(|t| t.move_to_peer()));
    }
}

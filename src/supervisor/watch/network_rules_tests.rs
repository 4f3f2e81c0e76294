//! The network watch's decisions, with explicit instants.

use std::time::{Duration, Instant, SystemTime};

use super::network_rules::{NetWatch, Outcome, Phase};
use crate::config::{NetworkWatch, OnNetworkLost};

fn settings(on_lost: OnNetworkLost) -> NetworkWatch {
    NetworkWatch {
        on_lost,
        grace: Duration::from_secs(3),
        exit_code: 76,
        interfaces: None,
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn gave_up(out: &[Outcome]) -> Option<(u8, String)> {
    out.iter().find_map(|o| match o {
        Outcome::GiveUp { code, line } => Some((*code, line.clone())),
        Outcome::Note(..) => None,
    })
}

#[test]
fn every_interface_gone_for_the_grace_gives_up_once_with_the_exit_code() {
    let t0 = Instant::now();
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let (mut w, _) = NetWatch::new(
        settings(OnNetworkLost::Exit),
        &names(&["lo", "eth0", "eth1"]),
    );
    assert_eq!(w.phase(), Phase::Present);
    assert_eq!(w.watched().len(), 2, "lo is not watched");
    w.vanished("eth1", t0, wall);
    assert_eq!(w.phase(), Phase::Present, "eth0 is still there");
    assert_eq!(w.deadline(), None);
    w.vanished("eth0", t0, wall);
    assert_eq!(w.deadline(), Some(t0 + Duration::from_secs(3)));
    assert!(!w.usable());
    assert!(w.tick(t0 + Duration::from_millis(2999)).is_empty());
    let out = w.tick(t0 + Duration::from_secs(3));
    let (code, line) = gave_up(&out).expect("gives up at the end of the grace");
    assert_eq!(code, 76);
    assert!(
        line.contains("eth0 gone at 2027-01-15T08:00:00.000Z"),
        "{line}"
    );
    assert!(line.contains("eth1 gone at"), "{line}");
    assert_eq!(w.phase(), Phase::Lost { since: t0 });
    assert_eq!(w.deadline(), None, "no timer once lost");
    assert!(w.tick(t0 + Duration::from_secs(10)).is_empty(), "once");
}

#[test]
fn an_interface_back_within_the_grace_ends_the_loss() {
    let t0 = Instant::now();
    let wall = SystemTime::now();
    let (mut w, _) = NetWatch::new(settings(OnNetworkLost::Exit), &names(&["lo", "eth0"]));
    w.vanished("eth0", t0, wall);
    let out = w.appeared("eth0", t0 + Duration::from_secs(1));
    assert!(matches!(&out[0], Outcome::Note(_, m) if m.contains("eth0 is back after 1s")));
    assert_eq!(w.phase(), Phase::Present);
    assert_eq!(w.deadline(), None, "the deadline went with its phase");
    assert!(gave_up(&w.tick(t0 + Duration::from_secs(5))).is_none());
}

#[test]
fn warn_reports_the_loss_and_never_gives_up() {
    let t0 = Instant::now();
    let (mut w, _) = NetWatch::new(settings(OnNetworkLost::Warn), &names(&["lo", "eth0"]));
    w.vanished("eth0", t0, SystemTime::now());
    let out = w.tick(t0 + Duration::from_secs(3));
    assert!(gave_up(&out).is_none());
    assert!(matches!(&out[0], Outcome::Note(_, m) if m.contains("network lost: eth0")));
    assert!(!w.usable());
    assert_eq!(w.losses, 1);
}

#[test]
fn loopback_only_says_so_once_and_watches_nothing() {
    let (mut w, out) = NetWatch::new(settings(OnNetworkLost::Exit), &names(&["lo"]));
    assert!(matches!(&out[..], [Outcome::Note(_, m)] if m.contains("no interface but lo")));
    assert_eq!(w.phase(), Phase::Idle);
    assert!(w.usable());
    assert!(
        w.vanished("lo", Instant::now(), SystemTime::now())
            .is_empty()
    );
    assert!(w.appeared("eth0", Instant::now()).is_empty(), "not watched");
}

#[test]
fn a_named_interface_never_seen_cannot_be_lost() {
    let mut s = settings(OnNetworkLost::Exit);
    s.interfaces = Some(names(&["tun0"]));
    let t0 = Instant::now();
    let (mut w, out) = NetWatch::new(s, &names(&["lo", "eth0"]));
    assert!(matches!(&out[0], Outcome::Note(_, m) if m.contains("none of which is present yet")));
    assert_eq!(w.phase(), Phase::Idle);
    w.appeared("tun0", t0);
    assert_eq!(w.phase(), Phase::Present);
    assert!(
        w.vanished("eth0", t0, SystemTime::now()).is_empty(),
        "eth0 is not watched"
    );
    w.vanished("tun0", t0, SystemTime::now());
    assert!(gave_up(&w.tick(t0 + Duration::from_secs(3))).is_some());
}

#[test]
fn a_resync_after_lost_events_compares_every_watched_interface() {
    let t0 = Instant::now();
    let (mut w, _) = NetWatch::new(settings(OnNetworkLost::Exit), &names(&["lo", "eth0"]));
    w.resync(&names(&["lo"]), t0, SystemTime::now());
    assert!(matches!(w.phase(), Phase::Losing { .. }));
    w.resync(&names(&["lo", "eth0"]), t0, SystemTime::now());
    assert_eq!(w.phase(), Phase::Present);
}

#[test]
fn a_zero_grace_gives_up_at_once() {
    let mut s = settings(OnNetworkLost::Exit);
    s.grace = Duration::ZERO;
    let (mut w, _) = NetWatch::new(s, &names(&["lo", "eth0"]));
    let out = w.vanished("eth0", Instant::now(), SystemTime::now());
    assert!(gave_up(&out).is_some());
}

#[test]
fn a_watched_link_renamed_before_any_event_on_it_is_gone_and_one_renamed_to_it_is_back() {
    use super::network_rules::LinkNames;
    let t0 = Instant::now();
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let present = vec![(1, "lo".to_string()), (2, "eth0".to_string())];
    let (mut w, _) = NetWatch::new(settings(OnNetworkLost::Exit), &names(&["lo", "eth0"]));
    let mut known = LinkNames::new(&present);
    // The first event on index 2 is the rename: eth0, known only from start-up, is gone.
    w.link_present(&mut known, 2, "eth9", t0, wall);
    assert!(matches!(w.phase(), Phase::Losing { .. }), "{:?}", w.phase());
    // Renamed back to the watched name: it is there again.
    w.link_present(&mut known, 2, "eth0", t0 + Duration::from_secs(1), wall);
    assert_eq!(w.phase(), Phase::Present);
    // A deletion under a name the watch never heard of still takes the name it had.
    w.link_present(&mut known, 2, "eth0", t0, wall);
    w.link_gone(&mut known, 2, "eth5", t0 + Duration::from_secs(2), wall);
    assert!(matches!(w.phase(), Phase::Losing { .. }));
    // Listed again after lost events: the names known follow the list.
    w.links_resync(&mut known, &[(3, "eth0".to_string())], t0, wall);
    assert_eq!(w.phase(), Phase::Present);
    w.link_present(&mut known, 3, "eth1", t0 + Duration::from_secs(3), wall);
    assert!(matches!(w.phase(), Phase::Losing { .. }));
}

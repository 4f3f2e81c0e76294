//! The network watch's line under the `status` table.

use crate::model::protocol::{NetworkOnLost, NetworkStatus};

/// `network: present (eth0 present, eth1 gone at …); on_lost = "exit" after 3s, exit code 76`.
pub fn render(n: &NetworkStatus) -> String {
    if n.interfaces.is_empty() {
        return "network: nothing to watch (no interface but lo)".into();
    }
    let each: Vec<String> = n
        .interfaces
        .iter()
        .map(|i| match (&i.gone_at, i.present) {
            (_, true) => format!("{} present", i.name),
            (Some(t), false) => format!("{} gone at {t}", i.name),
            (None, false) => format!("{} absent", i.name),
        })
        .collect();
    let state = match n.lost_for_ms {
        Some(ms) => format!("{} for {:.1}s", n.state.as_str(), ms as f64 / 1000.0),
        None => n.state.as_str().to_string(),
    };
    let then = match n.on_lost {
        NetworkOnLost::Exit => format!(
            "on_lost = \"exit\" after {:.1}s, exit code {}",
            n.grace_ms as f64 / 1000.0,
            n.exit_code
        ),
        other => format!("on_lost = \"{}\"", other.as_str()),
    };
    format!("network: {state} ({}); {then}", each.join(", "))
}

/// Whether the network is as it should be (not every watched interface gone).
pub fn usable(n: &NetworkStatus) -> bool {
    n.state.usable()
}

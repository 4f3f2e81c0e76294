//! The `[init.network]` table: which network interfaces ctrlinit watches, and what it does
//! when they are gone (see `supervisor::watch`).

use super::reader::{Reader, Value, get};
use super::spec::{NetworkWatch, OnNetworkLost};

/// The keys of `[init.network]`.
pub(super) const NETWORK_KEYS: &[&str] = &["on_lost", "grace", "exit_code", "interfaces"];

/// The longest grace accepted: beyond an hour, a lost network is better left to `warn`.
const MAX_GRACE_SECS: u64 = 3600;

/// Reads `[init.network]`, recording every error; `None` when it is not a usable table.
pub(super) fn read_network(r: &mut Reader<'_>, v: &Value<'_>) -> Option<NetworkWatch> {
    let table = r.table(v, "init.network")?;
    r.reject_unknown_keys(table, "init.network", NETWORK_KEYS);
    let mut w = NetworkWatch::default();
    if let Some(v) = get(table, "on_lost") {
        let choices = [("exit", OnNetworkLost::Exit), ("warn", OnNetworkLost::Warn)];
        w.on_lost = r
            .choice(v, "init.network.on_lost", &choices)
            .unwrap_or(w.on_lost);
    }
    if let Some(v) = get(table, "grace")
        && let Some(d) = r.duration(v, "init.network.grace")
    {
        if d.as_secs() > MAX_GRACE_SECS {
            r.error(
                &v.span(),
                "init.network.grace",
                format!("{}s is longer than an hour", d.as_secs()),
                Some(r#"write a grace of an hour or less, such as "3s""#.into()),
            );
        } else {
            w.grace = d;
        }
    }
    if let Some(v) = get(table, "exit_code")
        && let Some(n) = r.integer(v, "init.network.exit_code", 1..256)
    {
        w.exit_code = n as u8;
    }
    if let Some(v) = get(table, "interfaces") {
        w.interfaces = read_interfaces(r, v);
    }
    Some(w)
}

/// `interfaces`: names as the kernel takes them (1 to 15 bytes, no `/`, blank or `:`), not
/// `lo`, at least one.
fn read_interfaces(r: &mut Reader<'_>, v: &Value<'_>) -> Option<Vec<String>> {
    let names = r.string_list(v, "init.network.interfaces")?;
    let fix = r#"name the container's interfaces as `ip link` shows them, such as ["eth0"], or leave the key out to watch every one"#;
    if names.is_empty() {
        let msg = "an empty list watches nothing".to_string();
        r.error(&v.span(), "init.network.interfaces", msg, Some(fix.into()));
        return None;
    }
    let mut ok = true;
    for name in &names {
        let why = if name.is_empty() || name.len() > 15 {
            Some("is not 1 to 15 bytes long")
        } else if name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace())
        {
            Some("holds a character no interface name has")
        } else if name == "lo" {
            Some("is the loopback interface, which every namespace has")
        } else {
            None
        };
        if let Some(why) = why {
            let msg = format!("{name:?} {why}");
            r.error(&v.span(), "init.network.interfaces", msg, Some(fix.into()));
            ok = false;
        }
    }
    ok.then_some(names)
}

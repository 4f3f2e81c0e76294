//! `[init.network]` (issue 22 §1) against the real binary as PID 1 in a network namespace of
//! the test's own: an interface is created there before ctrlinit starts and deleted while it
//! runs, as Docker and Podman delete a dependent container's `eth0` when the namespace's holder
//! dies. The `dummy` link type needs a kernel module that CI machines may lack, so a bridge
//! (a single interface, no module) stands in for `eth0` when dummy cannot be made.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use common::*;

/// A named network namespace (`ip netns`), deleted on drop.
struct Netns {
    name: String,
}

impl Netns {
    /// A new namespace with `lo` up and one interface called `iface`.
    fn with(iface: Option<&str>) -> Netns {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "h-netwatch-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name]);
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]);
        if let Some(i) = iface {
            ns.add(i);
        }
        ns
    }

    /// Creates interface `iface` (dummy, or a bridge where dummy is not available).
    fn add(&self, iface: &str) {
        let dummy = Command::new("ip")
            .args(["-n", &self.name, "link", "add", iface, "type", "dummy"])
            .output()
            .unwrap();
        if !dummy.status.success() {
            self.ip(&["link", "add", iface, "type", "bridge"]);
        }
    }

    fn ip(&self, args: &[&str]) {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all);
    }

    /// `nsenter` arguments that run a command in it.
    fn enter(&self) -> String {
        format!("--net=/run/netns/{}", self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn config(on_lost: &str, grace: &str, extra: &str) -> String {
    format!(
        r#"[init]
{extra}

[init.network]
on_lost = "{on_lost}"
grace = "{grace}"
exit_code = 76

[program.web]
command = ["sleep", "600"]
pre_stop = ["sh", "-c", "echo web pre_stop ran"]
finish = ["sh", "-c", "echo web finish ran"]
"#
    )
}

#[test]
fn every_interface_gone_for_the_grace_stops_the_container_with_exit_code() {
    let ns = Netns::with(Some("eth7"));
    let mut init = init()
        .under(&["nsenter", &ns.enter()])
        .file("a.toml", &config("exit", "1s", ""))
        .start();
    init.wait_for_line("network: watching eth7");
    init.wait_for_line("web: starting -> running");
    ns.ip(&["link", "del", "eth7"]);
    init.wait_for_line("network: eth7 is gone");
    // The normal way down: pre_stop, stop, finish, then the network's exit code.
    let code = init.wait_exit(DEADLINE);
    assert_eq!(code, 76, "{}", init.output());
    let out = init.output();
    let lost = out
        .lines()
        .find(|l| l.contains("network lost: eth7 gone at "))
        .unwrap_or_else(|| panic!("no line names the interface and when:\n{out}"));
    assert!(lost.contains("exit code 76"), "{lost}");
    assert!(out.contains("web pre_stop ran"), "{out}");
    assert!(out.contains("web finish ran"), "{out}");
}

#[test]
fn a_watched_interface_renamed_is_gone_and_one_renamed_to_its_name_is_back() {
    let ns = Netns::with(Some("eth7"));
    let mut init = init()
        .under(&["nsenter", &ns.enter()])
        .file("a.toml", &config("exit", "30s", ""))
        .start();
    init.wait_for_line("network: watching eth7");
    init.wait_for_line("web: starting -> running");
    // No event on eth7 before this one: ctrlinit knew it only from its start-up list.
    ns.ip(&["link", "set", "eth7", "name", "eth8"]);
    init.wait_for_line("network: eth7 is gone");
    ns.ip(&["link", "set", "eth8", "name", "eth7"]);
    init.wait_for_line("network: eth7 is back after");
    let (code, status) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{status}");
    assert!(
        status.contains("network: present (eth7 present)"),
        "{status}"
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0, "{}", init.output());
}

#[test]
fn an_interface_name_with_a_terminal_escape_is_shown_escaped() {
    let ns = Netns::with(Some("e\x1b[7mx"));
    let mut init = init()
        .under(&["nsenter", &ns.enter()])
        .file("a.toml", &config("warn", "30s", ""))
        .start();
    init.wait_for_line("network: watching e\\e[7mx");
    init.wait_for_line("web: starting -> running");
    let (_, status) = init.ctl(&["status"]);
    assert!(status.contains("e\\e[7mx present"), "{status}");
    assert!(!status.contains('\x1b'), "{status:?}");
    ns.ip(&["link", "del", "e\x1b[7mx"]);
    init.wait_for_line("network: e\\e[7mx is gone");
    assert!(!init.output().contains('\x1b'), "{:?}", init.output());
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0, "{}", init.output());
}

#[test]
fn an_interface_back_within_the_grace_stops_nothing() {
    let ns = Netns::with(Some("eth7"));
    let mut init = init()
        .under(&["nsenter", &ns.enter()])
        .file("a.toml", &config("exit", "30s", ""))
        .start();
    init.wait_for_line("web: starting -> running");
    ns.ip(&["link", "del", "eth7"]);
    init.wait_for_line("network: eth7 is gone");
    let (_, status) = init.ctl(&["status"]);
    assert!(status.contains("network: losing"), "{status}");
    ns.add("eth7");
    init.wait_for_line("network: eth7 is back after");
    let (code, status) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{status}");
    assert!(
        status.contains("network: present (eth7 present)"),
        "{status}"
    );
    assert!(!init.output().contains("shutting down"));
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0, "{}", init.output());
}

fn curl_in(ns: &Netns, port: u16, path: &str) -> (u16, String) {
    let out = Command::new("nsenter")
        .args([&ns.enter(), "curl", "-s", "-w", "\n%{http_code}"])
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

#[test]
fn warn_reports_the_loss_in_readyz_status_metrics_and_events_and_stops_nothing() {
    let ns = Netns::with(Some("eth7"));
    let port = free_port();
    let http = format!("http = \"127.0.0.1:{port}\"");
    let mut init = init()
        .under(&["nsenter", &ns.enter()])
        .file("a.toml", &config("warn", "0.5s", &http))
        .start();
    init.wait_for_line("web: starting -> running");
    wait_until("/readyz to answer 200", DEADLINE, || {
        (curl_in(&ns, port, "/readyz").0 == 200).then_some(())
    });
    let events = std::process::Command::new(bin())
        .args(["events"])
        .env("CTRLINIT_SOCKET", &init.socket)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    ns.ip(&["link", "del", "eth7"]);
    init.wait_for_line("network lost: eth7 gone at");
    let (code, body) = curl_in(&ns, port, "/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("the network is lost"), "{body}");
    let (code, status) = init.ctl(&["status"]);
    assert_ne!(code, 0, "status says the container is not as it should be");
    assert!(status.contains("network: lost"), "{status}");
    let (_, json) = init.ctl(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let net = v
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "network")
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(net["state"], "lost");
    assert_eq!(net["interfaces"][0]["name"], "eth7");
    assert_eq!(net["interfaces"][0]["present"], false);
    let (_, metrics) = curl_in(&ns, port, "/metrics");
    assert!(metrics.contains("ctrlinit_network_lost 1"), "{metrics}");
    assert!(
        metrics.contains("ctrlinit_network_losses_total 1"),
        "{metrics}"
    );
    // Nothing stopped.
    let (_, web) = init.ctl(&["status", "web"]);
    assert!(web.contains("running"), "{web}");
    assert!(!init.output().contains("shutting down"));
    init.signal("TERM");
    init.wait_exit(DEADLINE);
    let seen = events.wait_with_output().unwrap();
    let seen = String::from_utf8_lossy(&seen.stdout);
    assert!(seen.contains("network lost: eth7"), "events: {seen}");
}

#[test]
fn loopback_only_says_so_once_and_runs_normally() {
    let ns = Netns::with(None);
    let mut init = init()
        .under(&["nsenter", &ns.enter()])
        .file("a.toml", &config("exit", "0s", ""))
        .start();
    init.wait_for_line("web: starting -> running");
    assert_eq!(
        init.count_lines("no interface but lo"),
        1,
        "{}",
        init.output()
    );
    // An interface that comes and goes later is not watched (none was present at start).
    ns.add("eth7");
    ns.ip(&["link", "del", "eth7"]);
    let (code, status) = init.ctl(&["status"]);
    assert_eq!(code, 0, "{status}");
    assert!(status.contains("network: nothing to watch"), "{status}");
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0, "{}", init.output());
    assert_eq!(init.count_lines("no interface but lo"), 1);
}

#[test]
fn check_reports_every_error_of_the_table_with_file_and_line() {
    let text = r#"[init.network]
on_lost = "restart"
grace = "soon"
exit_code = 0
interfaces = ["lo", "this-name-is-far-too-long"]
intervals = "1s"

[program.web]
command = ["sleep", "600"]
"#;
    let (_dir, conf) = config_dir(&[("net.toml", text)]);
    let ran = check_config(&conf);
    assert_ne!(ran.code, 0, "{}", ran.all());
    let err = ran.all();
    for (line, key) in [
        (2, "init.network.on_lost"),
        (3, "init.network.grace"),
        (4, "init.network.exit_code"),
        (5, "init.network.interfaces"),
        (6, "init.network.intervals"),
    ] {
        assert!(
            err.contains(&format!("net.toml:{line}")) && err.contains(key),
            "{key} at line {line}:\n{err}"
        );
    }
    assert!(err.contains("did you mean `interfaces`?"), "{err}");
    assert!(err.contains("loopback"), "{err}");
    assert!(err.contains("not 1 to 15 bytes"), "{err}");
    // And a good table passes.
    let good = "[init.network]\non_lost = \"exit\"\ngrace = \"3s\"\nexit_code = 76\ninterfaces = [\"eth0\"]\n\n[program.web]\ncommand = [\"sleep\", \"600\"]\n";
    let (_dir, conf) = config_dir(&[("net.toml", good)]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 0, "{}", ran.all());
}

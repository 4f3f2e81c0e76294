//! Configuration errors of readiness and liveness checks: each names its file, line, key and
//! the fix, all at once, and nothing starts.

mod common;

use common::*;

const CONF: &str = r#"[program.a]
command = ["sleep", "1"]
ready = { http = "https://127.0.0.1/ready" }

[program.b]
command = ["sleep", "1"]
ready = { http = "http://api.internal:8080/ready" }

[program.c]
command = ["sleep", "1"]
ready = { log = "ready (to" }

[program.d]
command = ["sleep", "1"]
ready = { fd = 1 }

[program.e]
command = ["sleep", "1"]
ready = { notify = "upstart" }

[program.f]
command = ["sleep", "1"]
[program.f.health]
interval = "1s"

[program.g]
command = ["sleep", "1"]
[program.g.health]
check = { tcp = "127.0.0.1:80", max_age = "3s" }

[program.h]
command = ["sleep", "1"]
[program.h.health]
check = { heartbeat = "/run/h.beat" }

[program.i]
type = "oneshot"
command = ["true"]
[program.i.health]
check = { exec = ["true"] }

[program.j]
command = ["sleep", "1"]
[program.j.health]
check = { ping = "127.0.0.1" }
failures = 0
on_failure = "reboot"

[program.k]
command = ["sleep", "1"]
ready = { uptime = "0" }

[program.l]
command = ["sleep", "1"]
ready = { uptime = "90s" }

[program.m]
command = ["sleep", "1"]
ready = { uptime = "soon" }

[init]
http = "everywhere:9100"
"#;

#[test]
fn every_check_error_is_reported_at_once_with_its_line_and_fix() {
    let (_dir, conf) = config_dir(&[("10-checks.toml", CONF)]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{}", ran.all());
    let err = ran.stderr.clone();
    let line = |needle: &str| {
        CONF.lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} not in the config"))
            + 1
    };
    for (needle, says) in [
        ("https://", "https is not supported by checks"),
        ("api.internal", "would need a DNS lookup"),
        ("ready (to", "is not a regular expression"),
        ("fd = 1", "use a whole number from 3 to 1023"),
        ("upstart", "use one of \"systemd\""),
        (
            "[program.f.health]",
            "a health table needs a check or a watchdog",
        ),
        ("max_age = \"3s\"", "max_age belongs to a heartbeat check"),
        ("/run/h.beat", "a heartbeat check needs max_age"),
        ("[program.i.health]", "a oneshot has no liveness check"),
        ("ping =", "unknown key `ping`"),
        ("failures = 0", "use a whole number from 1 to 1000"),
        ("reboot", "use one of \"restart\", \"mark\""),
        ("everywhere:9100", "is not an address and port"),
        ("uptime = \"0\"", "an uptime of 0 is no check"),
        (
            "uptime = \"90s\"",
            "uptime 1m 30s is not shorter than ready_timeout (1m)",
        ),
        ("uptime = \"soon\"", "is not a duration"),
    ] {
        let at = format!("10-checks.toml:{}", line(needle));
        assert!(
            err.lines().any(|l| l.contains(&at)) && err.contains(says),
            "{needle:?}: expected an error at {at} saying {says:?}; got:\n{err}"
        );
    }
    assert!(err.contains("fix: "), "{err}");
    assert!(
        err.contains("set ready_timeout longer than the uptime (ready_timeout = \"1m 40s\")"),
        "{err}"
    );
}

//! `/metrics` in the OpenMetrics text format (also what Prometheus scrapes): one family per
//! quantity, labelled by program, ending with `# EOF`.

use std::fmt::Write;

use crate::model::State;
use crate::supervisor::telemetry::{LimitMetrics, Metrics};

/// The content type of the answer.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every state a program can be in, for the state set.
const STATES: &[State] = &[
    State::Waiting,
    State::Starting,
    State::Running,
    State::Backoff,
    State::Stopping,
    State::Stopped,
    State::Exited,
    State::Completed,
    State::Exhausted,
];

/// ctrlinit's own footprint.
pub(crate) struct Own {
    /// Resident memory in bytes.
    pub(crate) resident_bytes: Option<u64>,
    /// Open descriptors.
    pub(crate) open_fds: Option<u64>,
}

/// Renders the exposition: the programs' lifecycle, their history, their liveness, then
/// ctrlinit's own counters and footprint, ending with `# EOF`.
pub(crate) fn render(m: &Metrics, own: &Own) -> String {
    let mut out = String::with_capacity(256 + m.programs.len() * 1024);
    lifecycle(&mut out, m);
    history(&mut out, m);
    health(&mut out, m);
    limits(&mut out, m);
    supervisor(&mut out, m, own);
    externals(&mut out, m);
    syslog(&mut out, m);
    out.push_str("# EOF\n");
    out
}

/// The syslog intake's counters (`[init] syslog`), when it is on.
fn syslog(out: &mut String, m: &Metrics) {
    for &(name, help, value) in &m.syslog {
        let family_name = format!("ctrlinit_syslog_{name}");
        family(out, &family_name, "counter", help, None);
        let _ = writeln!(out, "{family_name}_total {value}");
    }
}

/// Each external dependency (`[external.NAME]`): ready or not, checks made, restarts caused.
fn externals(out: &mut String, m: &Metrics) {
    if m.externals.is_empty() {
        return;
    }
    family(
        out,
        "ctrlinit_external_ready",
        "gauge",
        "1 when the external dependency is ready.",
        None,
    );
    for (name, ready, _, _) in &m.externals {
        let _ = writeln!(
            out,
            "ctrlinit_external_ready{{external=\"{}\"}} {}",
            esc(name),
            u8::from(*ready)
        );
    }
    family(
        out,
        "ctrlinit_external_checks",
        "counter",
        "Checks of the external dependency made.",
        None,
    );
    for (name, _, checks, _) in &m.externals {
        let _ = writeln!(
            out,
            "ctrlinit_external_checks_total{{external=\"{}\"}} {checks}",
            esc(name)
        );
    }
    family(
        out,
        "ctrlinit_external_restarts_caused",
        "counter",
        "Times the external went down or its peer program restarted, restarting dependents.",
        None,
    );
    for (name, _, _, n) in &m.externals {
        let _ = writeln!(
            out,
            "ctrlinit_external_restarts_caused_total{{external=\"{}\"}} {n}",
            esc(name)
        );
    }
}

/// Where each program is now: its state (as a state set) and whether it is up.
fn lifecycle(out: &mut String, m: &Metrics) {
    family(
        out,
        "ctrlinit_program_state",
        "stateset",
        "The program's state.",
        None,
    );
    for p in &m.programs {
        for s in STATES {
            let on = u8::from(p.state == *s);
            let _ = writeln!(
                out,
                "ctrlinit_program_state{{program=\"{}\",ctrlinit_program_state=\"{s}\"}} {on}",
                esc(&p.name)
            );
        }
    }
    family(
        out,
        "ctrlinit_program_up",
        "gauge",
        "1 when the program is up (a service running, a oneshot completed).",
        None,
    );
    for p in &m.programs {
        let _ = writeln!(
            out,
            "ctrlinit_program_up{{program=\"{}\"}} {}",
            esc(&p.name),
            u8::from(p.up)
        );
    }
}

/// What happened to each program's runs: restarts by cause, how the last run ended, how long
/// the last start took to become ready (the last two only once known).
fn history(out: &mut String, m: &Metrics) {
    family(
        out,
        "ctrlinit_program_restarts",
        "counter",
        "Restarts by cause: exit, readiness, health and limit count against the budget; dependency and manual do not.",
        None,
    );
    for p in &m.programs {
        let r = p.restarts;
        for (cause, n) in [
            ("exit", r.exit),
            ("readiness", r.readiness),
            ("health", r.health),
            ("dependency", r.dependency),
            ("manual", r.manual),
            ("limit", r.limit),
        ] {
            let _ = writeln!(
                out,
                "ctrlinit_program_restarts_total{{program=\"{}\",cause=\"{cause}\"}} {n}",
                esc(&p.name)
            );
        }
    }
    family(
        out,
        "ctrlinit_program_last_exit_status",
        "gauge",
        "How the last run ended, as a shell status (128 + signal when killed).",
        None,
    );
    for p in &m.programs {
        if let Some(code) = p.last_exit_status {
            let _ = writeln!(
                out,
                "ctrlinit_program_last_exit_status{{program=\"{}\"}} {code}",
                esc(&p.name)
            );
        }
    }
    family(
        out,
        "ctrlinit_program_ready_seconds",
        "gauge",
        "How long the last start took to become ready.",
        Some("seconds"),
    );
    for p in &m.programs {
        if let Some(t) = p.ready_time {
            let _ = writeln!(
                out,
                "ctrlinit_program_ready_seconds{{program=\"{}\"}} {:.3}",
                esc(&p.name),
                t.as_secs_f64()
            );
        }
    }
}

/// ctrlinit's own families: the counters of processes and messages that belong to no
/// program, then its footprint (each only when it could be read).
fn supervisor(out: &mut String, m: &Metrics, own: &Own) {
    family(
        out,
        "ctrlinit_orphans_reaped",
        "counter",
        "Orphaned processes reaped that belonged to no program.",
        None,
    );
    let _ = writeln!(out, "ctrlinit_orphans_reaped_total {}", m.orphans_reaped);
    family(
        out,
        "ctrlinit_notify_foreign_messages",
        "counter",
        "sd_notify messages ignored because their sender belongs to no program speaking sd_notify.",
        None,
    );
    let _ = writeln!(
        out,
        "ctrlinit_notify_foreign_messages_total {}",
        m.notify_foreign
    );
    network(out, m);
    family(
        out,
        "ctrlinit_notify_rate_limited_messages",
        "counter",
        "sd_notify messages dropped unread because their sender's user sent more than 200 a second.",
        None,
    );
    let _ = writeln!(
        out,
        "ctrlinit_notify_rate_limited_messages_total {}",
        m.notify_rate_limited
    );
    if let Some(b) = own.resident_bytes {
        family(
            out,
            "ctrlinit_resident_memory_bytes",
            "gauge",
            "ctrlinit's resident memory.",
            Some("bytes"),
        );
        let _ = writeln!(out, "ctrlinit_resident_memory_bytes {b}");
    }
    if let Some(n) = own.open_fds {
        family(
            out,
            "ctrlinit_open_fds",
            "gauge",
            "ctrlinit's open file descriptors.",
            None,
        );
        let _ = writeln!(out, "ctrlinit_open_fds {n}");
    }
}

/// The network watch's families, when `[init.network]` is set.
fn network(out: &mut String, m: &Metrics) {
    let Some(n) = &m.network else { return };
    let gauges = [
        (
            "ctrlinit_network_interfaces_watched",
            "Network interfaces ctrlinit watches ([init.network]).",
            n.watched as u64,
        ),
        (
            "ctrlinit_network_interfaces_present",
            "Watched network interfaces present now.",
            n.present as u64,
        ),
        (
            "ctrlinit_network_lost",
            "1 while every watched network interface is gone.",
            u64::from(n.lost),
        ),
    ];
    for (name, help, value) in gauges {
        family(out, name, "gauge", help, None);
        let _ = writeln!(out, "{name} {value}");
    }
    family(
        out,
        "ctrlinit_network_losses",
        "counter",
        "Times every watched network interface stayed gone past the grace.",
        None,
    );
    let _ = writeln!(out, "ctrlinit_network_losses_total {}", n.losses);
}

/// A family's metadata lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str, unit: Option<&str>) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    if let Some(u) = unit {
        let _ = writeln!(out, "# UNIT {name} {u}");
    }
    let _ = writeln!(out, "# HELP {name} {help}");
}

/// The liveness families, for programs with a health table.
fn health(out: &mut String, m: &Metrics) {
    let with: Vec<_> = m
        .programs
        .iter()
        .filter_map(|p| Some((esc(&p.name), p.health.as_ref()?)))
        .collect();
    family(
        out,
        "ctrlinit_health_checks",
        "counter",
        "Liveness checks made.",
        None,
    );
    for (name, h) in &with {
        let _ = writeln!(
            out,
            "ctrlinit_health_checks_total{{program=\"{name}\"}} {}",
            h.checks_total
        );
    }
    family(
        out,
        "ctrlinit_health_check_failures",
        "counter",
        "Liveness checks that failed (start period included).",
        None,
    );
    for (name, h) in &with {
        let _ = writeln!(
            out,
            "ctrlinit_health_check_failures_total{{program=\"{name}\"}} {}",
            h.failures_total
        );
    }
    family(
        out,
        "ctrlinit_health_check_duration_seconds",
        "gauge",
        "How long the last liveness check took.",
        Some("seconds"),
    );
    for (name, h) in &with {
        if let Some(d) = h.last_duration {
            let _ = writeln!(
                out,
                "ctrlinit_health_check_duration_seconds{{program=\"{name}\"}} {:.6}",
                d.as_secs_f64()
            );
        }
    }
    family(
        out,
        "ctrlinit_program_healthy",
        "gauge",
        "0 while the program is past its liveness threshold, else 1.",
        None,
    );
    for (name, h) in &with {
        let _ = writeln!(
            out,
            "ctrlinit_program_healthy{{program=\"{name}\"}} {}",
            u8::from(!h.unhealthy)
        );
    }
}

/// The guards of `[program.NAME.limits]`: each limit, and the figure last read for it.
fn limits(out: &mut String, m: &Metrics) {
    type Pick = fn(&LimitMetrics) -> Option<(u64, Option<u64>)>;
    let families: [(&str, &str, Option<&str>, bool, Pick); 4] = [
        (
            "ctrlinit_program_memory_limit_bytes",
            "The memory limit (`limits.memory`).",
            Some("bytes"),
            false,
            |l| l.memory,
        ),
        (
            "ctrlinit_program_memory_resident_bytes",
            "Resident memory of the run's processes (or its cgroup's memory.current) when last read for its limit.",
            Some("bytes"),
            true,
            |l| l.memory,
        ),
        (
            "ctrlinit_program_fds_limit",
            "The open descriptor limit (`limits.fds`).",
            None,
            false,
            |l| l.fds,
        ),
        (
            "ctrlinit_program_fds_open",
            "Open descriptors across the run's processes when last counted for its limit.",
            None,
            true,
            |l| l.fds,
        ),
    ];
    for (name, help, unit, figure, pick) in families {
        family(out, name, "gauge", help, unit);
        for p in &m.programs {
            let Some((limit, used)) = p.limits.as_ref().and_then(pick) else {
                continue;
            };
            let value = if figure { used } else { Some(limit) };
            if let Some(v) = value {
                let _ = writeln!(out, "{name}{{program=\"{}\"}} {v}", esc(&p.name));
            }
        }
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::core::program::RestartCauses;
    use crate::supervisor::telemetry::{HealthMetrics, ProgramMetrics};
    use std::time::Duration;

    /// Metrics with every family present.
    fn sample() -> (Metrics, Own) {
        let m = Metrics {
            programs: vec![ProgramMetrics {
                name: "api".into(),
                state: State::Running,
                up: true,
                restarts: RestartCauses {
                    health: 2,
                    ..RestartCauses::default()
                },
                last_exit_status: Some(143),
                ready_time: Some(Duration::from_millis(250)),
                health: Some(HealthMetrics {
                    checks_total: 7,
                    failures_total: 3,
                    last_duration: Some(Duration::from_millis(4)),
                    unhealthy: false,
                }),
                limits: Some(LimitMetrics {
                    memory: Some((1 << 30, Some(1 << 29))),
                    fds: Some((20000, Some(42))),
                }),
            }],
            orphans_reaped: 5,
            network: Some(crate::supervisor::telemetry::NetworkMetrics {
                watched: 1,
                present: 0,
                lost: true,
                losses: 1,
            }),
            notify_foreign: 1,
            externals: vec![("config-api".into(), true, 7, 1)],
            notify_rate_limited: 2,
            syslog: crate::logs::syslog::SyslogCounters::default().figures(),
        };
        let own = Own {
            resident_bytes: Some(1 << 20),
            open_fds: Some(9),
        };
        (m, own)
    }

    #[test]
    fn families_are_declared_once_before_their_samples_and_the_text_ends_with_eof() {
        let (m, own) = sample();
        let text = render(&m, &own);
        assert!(text.ends_with("# EOF\n"));
        assert!(text.contains(
            "ctrlinit_program_state{program=\"api\",ctrlinit_program_state=\"running\"} 1"
        ));
        assert!(text.contains(
            "ctrlinit_program_state{program=\"api\",ctrlinit_program_state=\"backoff\"} 0"
        ));
        assert!(
            text.contains("ctrlinit_program_restarts_total{program=\"api\",cause=\"health\"} 2")
        );
        assert!(text.contains("ctrlinit_program_memory_resident_bytes{program=\"api\"} 536870912"));
        assert!(text.contains("ctrlinit_program_fds_limit{program=\"api\"} 20000"));
        assert!(text.contains("ctrlinit_program_ready_seconds{program=\"api\"} 0.250"));
        assert!(text.contains("ctrlinit_health_check_failures_total{program=\"api\"} 3"));
        assert!(text.contains("ctrlinit_orphans_reaped_total 5"));
        assert!(text.contains("ctrlinit_syslog_truncated_messages_total 0"));
        let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
        let names: std::collections::HashSet<_> =
            text.lines().filter(|l| l.starts_with("# TYPE ")).collect();
        assert_eq!(types, names.len(), "each family declared once");
        assert_eq!(esc("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    /// The label names of `sample`'s first line: `{program,cause}`, or nothing.
    fn labels(text: &str, sample: &str) -> String {
        let line = text
            .lines()
            .find(|l| {
                l.strip_prefix(sample)
                    .is_some_and(|rest| rest.starts_with(['{', ' ']))
            })
            .unwrap_or_else(|| panic!("no sample of {sample}"));
        let Some(inside) = line[sample.len()..]
            .strip_prefix('{')
            .and_then(|r| r.split_once('}'))
            .map(|(inside, _)| inside)
        else {
            return String::new();
        };
        let names: Vec<&str> = inside
            .split(',')
            .map(|kv| kv.split_once('=').unwrap().0)
            .collect();
        format!("{{{}}}", names.join(","))
    }

    #[test]
    fn the_metrics_page_lists_every_family_with_its_type_and_labels() {
        let (m, own) = sample();
        let text = render(&m, &own);
        let served: std::collections::BTreeSet<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .map(|l| {
                let (family, kind) = l.split_once(' ').unwrap();
                let sample = match kind {
                    "counter" => format!("{family}_total"),
                    _ => family.to_string(),
                };
                format!("`{sample}{}` | {kind}", labels(&text, &sample))
            })
            .collect();
        let page = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/src/reference/metrics.md"
        ))
        .unwrap();
        let start = page
            .find("<!-- metrics:")
            .expect("no metrics table in docs/src/reference/metrics.md");
        let end = page
            .find("<!-- /metrics -->")
            .expect("metrics table not closed");
        let listed: std::collections::BTreeSet<String> = page[start..end]
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                format!("{} | {}", cells[1], cells[2])
            })
            .collect();
        assert_eq!(
            listed, served,
            "the book's metrics table (docs/src/reference/metrics.md) and /metrics differ"
        );
    }
}

//! `ctrlinit check`: the start order of a valid configuration, as people read it.

use std::fmt::Write;

use crate::model::protocol::GraphNode;

/// Renders which programs start together and what each waits for, then the warnings.
pub fn render_start_order(levels: &[Vec<GraphNode>], warnings: &[String]) -> String {
    let mut out = String::new();
    let n: usize = levels.iter().map(Vec::len).sum();
    let _ = writeln!(
        out,
        "configuration OK: {n} program{}",
        if n == 1 { "" } else { "s" }
    );
    let _ = writeln!(out, "start order (programs of one step start together):");
    for (step, level) in levels.iter().enumerate() {
        for (k, p) in level.iter().enumerate() {
            let lead = if k == 0 {
                format!("{:>3}.", step + 1)
            } else {
                "    ".to_string()
            };
            let mut line = format!("{lead} {} ({}", p.name, p.kind);
            if let Some(probe) = &p.readiness {
                let _ = write!(line, ", ready: {probe}");
            }
            if !p.autostart {
                line.push_str(", autostart = false");
            }
            if p.main {
                line.push_str(", main");
            }
            line.push(')');
            if !p.depends_on.is_empty() {
                let waits: Vec<String> = p
                    .depends_on
                    .iter()
                    .map(|(name, condition, restart)| {
                        let restart = if *restart { ", restarts with it" } else { "" };
                        format!("{name} {condition}{restart}")
                    })
                    .collect();
                let _ = write!(line, "  waits for: {}", waits.join(", "));
            }
            if !p.after.is_empty() {
                let _ = write!(line, "  after: {}", p.after.join(", "));
            }
            let _ = writeln!(out, "{line}");
        }
    }
    for w in warnings {
        // A note (`check --build`'s unset variables) is said as one.
        if w.starts_with("note: ") {
            let _ = writeln!(out, "{w}");
        } else {
            let _ = writeln!(out, "warning: {w}");
        }
    }
    out
}

//! `ctrlinit graph`: the dependency graph as Graphviz dot or Mermaid, with states when the init
//! is running. Arrows go from a dependency to what waits for it (start order), labelled with the
//! condition; restart-propagating edges are bold (dot) or thick (Mermaid); ordering-only edges
//! (`after`) are dashed (dot) or dotted (Mermaid), labelled `after`.

use std::fmt::Write;

use crate::model::State;
use crate::model::protocol::GraphNode;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Graphviz dot.
    Dot,
    /// Mermaid flowchart.
    Mermaid,
}

fn color(state: Option<State>) -> &'static str {
    match state {
        Some(State::Running | State::Completed) => "palegreen",
        Some(State::Starting | State::Waiting | State::Stopping) => "lightyellow",
        Some(State::Backoff | State::Exhausted | State::Exited) => "lightpink",
        Some(State::Stopped) => "lightgrey",
        None => "white",
    }
}

/// An external's fill, by its state word.
fn external_color(state: Option<&str>) -> &'static str {
    match state {
        Some("ready") => "palegreen",
        Some("waiting") => "lightyellow",
        Some("down") => "lightpink",
        _ => "white",
    }
}

/// A node's label: `api (service, running)`; an external's with its check,
/// `config-api (external tcp config:8082, ready)`.
fn label(n: &GraphNode) -> String {
    let kind = match &n.readiness {
        Some(check) if n.kind == "external" => format!("external {check}"),
        _ => n.kind.clone(),
    };
    match (n.state, &n.external_state) {
        (Some(s), _) => format!("{} ({kind}, {s})", n.name),
        (None, Some(s)) => format!("{} ({kind}, {s})", n.name),
        (None, None) => format!("{} ({kind})", n.name),
    }
}

/// Renders the graph. Externals are nodes of their own kind: a hexagon in both formats.
pub fn render(nodes: &[GraphNode], format: Format) -> String {
    let mut out = String::new();
    match format {
        Format::Dot => {
            let _ = writeln!(
                out,
                "digraph ctrlinit {{\n  rankdir=LR;\n  node [shape=box, style=filled];"
            );
            for n in nodes {
                let (shape, fill) = if n.kind == "external" {
                    (
                        ", shape=hexagon",
                        external_color(n.external_state.as_deref()),
                    )
                } else {
                    ("", color(n.state))
                };
                let _ = writeln!(
                    out,
                    "  \"{}\" [label=\"{}\"{shape}, fillcolor={fill}];",
                    n.name,
                    label(n).replace('"', "\\\""),
                );
            }
            for n in nodes {
                for (dep, cond, restart) in &n.depends_on {
                    let style = if *restart { ", style=bold" } else { "" };
                    let extra = if *restart { ", restarts with it" } else { "" };
                    let _ = writeln!(
                        out,
                        "  \"{dep}\" -> \"{}\" [label=\"{cond}{extra}\"{style}];",
                        n.name
                    );
                }
                for on in &n.after {
                    let _ = writeln!(
                        out,
                        "  \"{on}\" -> \"{}\" [label=\"after\", style=dashed];",
                        n.name
                    );
                }
            }
            out.push_str("}\n");
        }
        Format::Mermaid => {
            out.push_str("flowchart LR\n");
            let id = |name: &str| name.replace(['.', '-'], "_");
            for n in nodes {
                // Mermaid's text may not hold a double quote: `#quot;` is its escape.
                let text = label(n).replace('"', "#quot;");
                if n.kind == "external" {
                    let _ = writeln!(out, "  {}{{{{\"{text}\"}}}}", id(&n.name));
                } else {
                    let _ = writeln!(out, "  {}[\"{text}\"]", id(&n.name));
                }
            }
            for n in nodes {
                for (dep, cond, restart) in &n.depends_on {
                    let arrow = if *restart { "==>" } else { "-->" };
                    let extra = if *restart { ", restarts with it" } else { "" };
                    let _ = writeln!(out, "  {} {arrow}|{cond}{extra}| {}", id(dep), id(&n.name));
                }
                for on in &n.after {
                    let _ = writeln!(out, "  {} -.->|after| {}", id(on), id(&n.name));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_and_mermaid_show_edges_and_states() {
        let nodes = vec![
            GraphNode {
                name: "netns".into(),
                kind: "service".into(),
                state: Some(State::Running),
                depends_on: vec![],
                after: vec![],
                readiness: None,
                autostart: true,
                main: false,
                external_state: None,
            },
            GraphNode {
                name: "app-1".into(),
                kind: "service".into(),
                state: Some(State::Backoff),
                depends_on: vec![
                    ("netns".into(), "ready".into(), true),
                    ("config-api".into(), "ready".into(), true),
                ],
                after: vec!["netns".into()],
                readiness: None,
                autostart: true,
                main: false,
                external_state: None,
            },
            GraphNode {
                name: "config-api".into(),
                kind: "external".into(),
                state: None,
                depends_on: vec![],
                after: vec![],
                readiness: Some("tcp config:8082".into()),
                autostart: true,
                main: false,
                external_state: Some("down".into()),
            },
        ];
        let dot = render(&nodes, Format::Dot);
        assert!(
            dot.contains("\"netns\" -> \"app-1\" [label=\"ready, restarts with it\", style=bold];"),
            "{dot}"
        );
        assert!(
            dot.contains("label=\"app-1 (service, backoff)\", fillcolor=lightpink"),
            "{dot}"
        );
        assert!(
            dot.contains("\"netns\" -> \"app-1\" [label=\"after\", style=dashed];"),
            "{dot}"
        );
        assert!(
            dot.contains("\"config-api\" [label=\"config-api (external tcp config:8082, down)\", shape=hexagon, fillcolor=lightpink];"),
            "{dot}"
        );
        assert!(
            dot.contains(
                "\"config-api\" -> \"app-1\" [label=\"ready, restarts with it\", style=bold];"
            ),
            "{dot}"
        );
        let mermaid = render(&nodes, Format::Mermaid);
        assert!(
            mermaid.contains("  config_api{{\"config-api (external tcp config:8082, down)\"}}"),
            "{mermaid}"
        );
        assert!(
            mermaid.contains("  app_1[\"app-1 (service, backoff)\"]"),
            "{mermaid}"
        );
        assert!(
            mermaid.contains("config_api ==>|ready, restarts with it| app_1"),
            "{mermaid}"
        );
        assert!(mermaid.contains("netns -.->|after| app_1"), "{mermaid}");
        assert!(
            mermaid.contains("netns ==>|ready, restarts with it| app_1"),
            "{mermaid}"
        );
    }
}

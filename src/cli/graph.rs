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

/// Renders the graph.
pub fn render(nodes: &[GraphNode], format: Format) -> String {
    let mut out = String::new();
    let label = |n: &GraphNode| match n.state {
        Some(s) => format!("{} ({}, {s})", n.name, n.kind),
        None => format!("{} ({})", n.name, n.kind),
    };
    match format {
        Format::Dot => {
            let _ = writeln!(
                out,
                "digraph ctrlinit {{\n  rankdir=LR;\n  node [shape=box, style=filled];"
            );
            for n in nodes {
                let _ = writeln!(
                    out,
                    "  \"{}\" [label=\"{}\", fillcolor={}];",
                    n.name,
                    label(n),
                    color(n.state)
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
                let _ = writeln!(out, "  {}[\"{}\"]", id(&n.name), label(n));
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
            },
            GraphNode {
                name: "app-1".into(),
                kind: "service".into(),
                state: Some(State::Backoff),
                depends_on: vec![("netns".into(), "ready".into(), true)],
                after: vec!["netns".into()],
                readiness: None,
                autostart: true,
                main: false,
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
        let mermaid = render(&nodes, Format::Mermaid);
        assert!(mermaid.contains("netns -.->|after| app_1"), "{mermaid}");
        assert!(
            mermaid.contains("netns ==>|ready, restarts with it| app_1"),
            "{mermaid}"
        );
    }
}

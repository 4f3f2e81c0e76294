//! A configuration described in the protocol's words, for `check`, `graph` and the live graph.

use super::ExternalSpec;
use super::graph::Graph;
use super::spec::{Config, Kind, ProgramSpec};
use crate::model::protocol::GraphNode;

/// One program as a graph node (no state: the caller adds it when the init runs).
pub fn graph_node(p: &ProgramSpec) -> GraphNode {
    GraphNode {
        name: p.name.clone(),
        kind: p.kind.as_str().to_string(),
        state: None,
        depends_on: p
            .depends_on
            .iter()
            .map(|d| (d.name.clone(), d.condition.as_str().to_string(), d.restart))
            .collect(),
        after: p.after.clone(),
        readiness: match p.kind {
            Kind::Service => p.ready.as_ref().map(|r| r.probe.describe()),
            Kind::Oneshot => None,
        },
        autostart: p.autostart,
        main: p.main,
        external_state: None,
    }
}

/// An external dependency as a graph node of its own kind (`external`), its check shown where
/// a program's readiness is.
pub fn external_node(e: &ExternalSpec) -> GraphNode {
    GraphNode {
        name: e.name.clone(),
        kind: "external".into(),
        state: None,
        depends_on: Vec::new(),
        after: Vec::new(),
        readiness: Some(e.check.describe()),
        autostart: true,
        main: false,
        external_state: None,
    }
}

/// Every program of `config`, in its order.
pub fn graph_nodes(config: &Config) -> Vec<GraphNode> {
    config.programs.iter().map(|p| graph_node(p)).collect()
}

/// The start order: programs of one step start together, each step waits for the one before.
pub fn start_levels(config: &Config) -> Vec<Vec<GraphNode>> {
    Graph::new(&config.programs)
        .levels()
        .into_iter()
        .map(|level| {
            level
                .into_iter()
                .map(|i| graph_node(&config.programs[i]))
                .collect()
        })
        .collect()
}

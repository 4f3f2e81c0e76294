//! Dependency cycles and bundles that hold themselves, refused as `s6-rc-compile` refuses them:
//! no order starts a service after itself, and writing one anyway gives ctrlinit a
//! configuration it refuses (or, where a bundle stood for its contents, an order that silently
//! lost the loop's edge). The graph is s6-rc's own: services and bundles by name, a service's
//! `dependencies` and a bundle's `contents` its edges (depending on a bundle is depending on
//! what it holds), so a loop through a bundle is a loop too. The walk is iterative: a long
//! chain cannot exhaust the stack.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::model::{Layout, Origin};
use crate::import::InputError;

/// The s6-rc graph: one node per service or bundle.
struct Graph<'a> {
    names: Vec<&'a str>,
    bundle: Vec<bool>,
    at: Vec<PathBuf>,
    edges: Vec<Vec<usize>>,
}

/// Refuses the first cycle of `layout`'s s6-rc definitions, if any; `rc_dir` is where the
/// `user` and `user2` bundles are said to be.
pub fn check(layout: &Layout, rc_dir: &Path, errors: &mut Vec<InputError>) {
    let g = graph(layout, rc_dir);
    let Some(cycle) = first_cycle(&g) else {
        return;
    };
    let path: Vec<&str> = cycle.iter().map(|&i| g.names[i]).collect();
    let shown = path.join(" -> ");
    let (first, last) = (path[0], path[path.len() - 2]);
    let error = if cycle.iter().all(|&i| g.bundle[i]) {
        InputError::file(
            &g.at[cycle[0]],
            format!("the bundle {first} contains itself ({shown}): s6-rc-compile refuses it"),
            &format!("take {first} out of the contents of {last}"),
        )
    } else {
        InputError::file(
            &g.at[cycle[0]],
            format!(
                "a dependency cycle ({shown}): no order starts a service after itself, and s6-rc-compile refuses it"
            ),
            &format!(
                "remove one of these dependencies (or contents), such as {first} from {last}'s dependencies.d or contents.d"
            ),
        )
    };
    errors.push(error);
}

/// The graph of `layout`'s s6-rc services and bundles; names that match nothing are no node.
fn graph<'a>(layout: &'a Layout, rc_dir: &Path) -> Graph<'a> {
    let mut g = Graph {
        names: Vec::new(),
        bundle: Vec::new(),
        at: Vec::new(),
        edges: Vec::new(),
    };
    let mut outgoing: Vec<&'a [String]> = Vec::new();
    for u in layout.units.iter().filter(|u| u.origin == Origin::Rc) {
        g.names.push(&u.name);
        g.bundle.push(false);
        g.at.push(u.at.clone());
        outgoing.push(&u.deps);
    }
    for (name, contents, at) in &layout.bundles {
        g.names.push(name);
        g.bundle.push(true);
        g.at.push(at.clone());
        outgoing.push(contents);
    }
    for (name, contents) in [
        ("user", layout.user.as_deref()),
        ("user2", Some(&layout.user2[..])),
    ] {
        if let Some(contents) = contents
            && !g.names.contains(&name)
        {
            g.names.push(name);
            g.bundle.push(true);
            g.at.push(rc_dir.join(name));
            outgoing.push(contents);
        }
    }
    let index: HashMap<&str, usize> = g.names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    g.edges = outgoing
        .iter()
        .map(|out| {
            out.iter()
                .filter_map(|n| index.get(n.as_str()).copied())
                .collect()
        })
        .collect();
    g
}

/// The first cycle met walking the nodes in order, as its nodes with the first repeated at the
/// end (`a -> b -> a`).
fn first_cycle(g: &Graph) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Seen {
        Not,
        OnPath,
        Done,
    }
    let mut seen = vec![Seen::Not; g.names.len()];
    for start in 0..g.names.len() {
        if seen[start] != Seen::Not {
            continue;
        }
        // The current path, each node with the index of its next edge to follow.
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        seen[start] = Seen::OnPath;
        while let Some(&(node, next)) = path.last() {
            let Some(&to) = g.edges[node].get(next) else {
                seen[node] = Seen::Done;
                path.pop();
                continue;
            };
            if let Some(top) = path.last_mut() {
                top.1 += 1;
            }
            match seen[to] {
                Seen::Done => {}
                Seen::OnPath => {
                    let from = path.iter().position(|&(n, _)| n == to).unwrap_or(0);
                    let mut cycle: Vec<usize> = path[from..].iter().map(|&(n, _)| n).collect();
                    cycle.push(to);
                    return Some(cycle);
                }
                Seen::Not => {
                    seen[to] = Seen::OnPath;
                    path.push((to, 0));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::s6::model::Unit;

    fn rc(name: &str, deps: &[&str]) -> Unit {
        let mut u = Unit::new(name, Origin::Rc, false, PathBuf::from(format!("rc/{name}")));
        u.deps = deps.iter().map(|d| d.to_string()).collect();
        u
    }

    fn refused(layout: &Layout) -> Vec<String> {
        let mut errors = Vec::new();
        check(layout, Path::new("rc"), &mut errors);
        errors
            .iter()
            .map(|e| format!("{}: {} / {}", e.file.display(), e.message, e.fix))
            .collect()
    }

    #[test]
    fn a_dependency_cycle_is_named_from_where_it_starts() {
        let layout = Layout {
            units: vec![
                rc("a", &["b"]),
                rc("b", &["c"]),
                rc("c", &["a"]),
                rc("d", &["a"]),
            ],
            ..Layout::default()
        };
        let got = refused(&layout);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("rc/a: a dependency cycle (a -> b -> c -> a)"),
            "{got:?}"
        );
        assert!(got[0].contains("a from c's dependencies.d"), "{got:?}");
    }

    #[test]
    fn a_service_on_itself_and_a_loop_through_a_bundle_are_cycles() {
        let own = Layout {
            units: vec![rc("a", &["a"])],
            ..Layout::default()
        };
        assert!(refused(&own)[0].contains("(a -> a)"), "{:?}", refused(&own));
        let through = Layout {
            units: vec![rc("a", &["grp"])],
            bundles: vec![("grp".into(), vec!["a".into()], PathBuf::from("rc/grp"))],
            ..Layout::default()
        };
        assert!(
            refused(&through)[0].contains("(a -> grp -> a)"),
            "{:?}",
            refused(&through)
        );
    }

    #[test]
    fn a_bundle_holding_itself_is_named_as_such() {
        let layout = Layout {
            bundles: vec![
                ("x".into(), vec!["y".into()], PathBuf::from("rc/x")),
                ("y".into(), vec!["x".into()], PathBuf::from("rc/y")),
            ],
            user: Some(vec!["user".into()]),
            ..Layout::default()
        };
        let got = refused(&layout);
        assert!(
            got[0].starts_with("rc/x: the bundle x contains itself (x -> y -> x)"),
            "{got:?}"
        );
        let user = Layout {
            user: Some(vec!["user".into()]),
            ..Layout::default()
        };
        assert!(refused(&user)[0].starts_with("rc/user: the bundle user contains itself"));
    }

    #[test]
    fn a_diamond_and_unknown_names_are_no_cycle() {
        let layout = Layout {
            units: vec![
                rc("a", &["b", "c", "base"]),
                rc("b", &["d"]),
                rc("c", &["d"]),
                rc("d", &[]),
            ],
            user: Some(vec!["a".into()]),
            ..Layout::default()
        };
        assert!(refused(&layout).is_empty());
    }
}

//! The dependency graph between programs: cycle detection, start levels, reverse order.
//!
//! Programs are identified by their position in the config's program list (the supervisor keeps
//! its programs in the same order, and translates to program ids at its edge). Edges point from a
//! dependent to what it depends on; `dependents` is the reverse map, used to stop programs before
//! what they require.
//!
//! `after` edges are ordering only: they take part in cycles and start levels (a program starts
//! after what it is ordered after, and stops before it), never in `deps`, `dependents` or the
//! closures, which are requirements (what a start pulls in, what a stop or restart takes along).

use super::spec::{Condition, ProgramSpec};

/// One dependency edge, seen from the dependent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// Index of the program depended on.
    pub on: usize,
    /// What must hold of `on` before the dependent may start.
    pub condition: Condition,
    /// Whether the dependent restarts when `on`'s run ends.
    pub restart: bool,
}

/// The dependency graph of one config.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    deps: Vec<Vec<Edge>>,
    dependents: Vec<Vec<usize>>,
    /// `after`: the programs each is ordered after.
    after: Vec<Vec<usize>>,
    /// The reverse of `after`: the programs ordered after each.
    before: Vec<Vec<usize>>,
}

impl Graph {
    /// Builds the graph; dependency names that match no program are skipped (validation reports
    /// them).
    pub fn new<P: AsRef<ProgramSpec>>(programs: &[P]) -> Self {
        let index = |name: &str| programs.iter().position(|p| p.as_ref().name == name);
        let mut deps = vec![Vec::new(); programs.len()];
        let mut dependents = vec![Vec::new(); programs.len()];
        let mut after = vec![Vec::new(); programs.len()];
        let mut before = vec![Vec::new(); programs.len()];
        for (i, p) in programs.iter().map(AsRef::as_ref).enumerate() {
            for on in p.after.iter().filter_map(|n| index(n)) {
                if !after[i].contains(&on) {
                    after[i].push(on);
                    before[on].push(i);
                }
            }
            for d in &p.depends_on {
                if let Some(on) = index(&d.name) {
                    deps[i].push(Edge {
                        on,
                        condition: d.condition,
                        restart: d.restart,
                    });
                    if !dependents[on].contains(&i) {
                        dependents[on].push(i);
                    }
                }
            }
        }
        Graph {
            deps,
            dependents,
            after,
            before,
        }
    }

    /// How many programs the graph has (the indices it takes are `0..len`).
    pub fn len(&self) -> usize {
        self.deps.len()
    }

    /// Whether there are no programs.
    pub fn is_empty(&self) -> bool {
        self.deps.is_empty()
    }

    /// What program `i` depends on.
    pub fn deps(&self, i: usize) -> &[Edge] {
        &self.deps[i]
    }

    /// Programs that depend on `i`.
    pub fn dependents(&self, i: usize) -> &[usize] {
        &self.dependents[i]
    }

    /// What program `i` is ordered after (`after`).
    pub fn after(&self, i: usize) -> &[usize] {
        &self.after[i]
    }

    /// Programs ordered after `i`: they stop before it.
    pub fn before(&self, i: usize) -> &[usize] {
        &self.before[i]
    }

    /// Everything `i` starts after: its dependencies, then what it is ordered after.
    fn order(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.deps[i]
            .iter()
            .map(|e| e.on)
            .chain(self.after[i].iter().copied())
    }

    /// `i` and everything that depends on it, transitively (`i` first).
    pub fn dependents_closure(&self, i: usize) -> Vec<usize> {
        self.closure(i, |g, n| g.dependents[n].to_vec())
    }

    /// `i` and everything it depends on, transitively (`i` first).
    pub fn deps_closure(&self, i: usize) -> Vec<usize> {
        self.closure(i, |g, n| g.deps[n].iter().map(|e| e.on).collect())
    }

    fn closure(&self, start: usize, next: impl Fn(&Self, usize) -> Vec<usize>) -> Vec<usize> {
        let mut seen = vec![false; self.len()];
        let mut out = vec![start];
        seen[start] = true;
        let mut i = 0;
        while i < out.len() {
            for n in next(self, out[i]) {
                if !seen[n] {
                    seen[n] = true;
                    out.push(n);
                }
            }
            i += 1;
        }
        out
    }

    /// Every dependency cycle, each as a path that returns to its start (`a -> b -> a`).
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            OnStack,
            Done,
        }
        let mut mark = vec![Mark::New; self.len()];
        let mut cycles = Vec::new();
        for root in 0..self.len() {
            if mark[root] != Mark::New {
                continue;
            }
            // Iterative DFS: (node, next edge to explore), over both kinds of edge.
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            mark[root] = Mark::OnStack;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                if let Some(on) = self.order(node).nth(*next) {
                    *next += 1;
                    match mark[on] {
                        Mark::New => {
                            mark[on] = Mark::OnStack;
                            stack.push((on, 0));
                        }
                        Mark::OnStack => {
                            let from = stack.iter().position(|&(n, _)| n == on).unwrap_or(0);
                            let mut cycle: Vec<usize> =
                                stack[from..].iter().map(|&(n, _)| n).collect();
                            cycle.push(on);
                            cycles.push(cycle);
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[node] = Mark::Done;
                    stack.pop();
                }
            }
        }
        cycles
    }

    /// Start levels: level 0 has no dependencies, level n depends on something at level n-1.
    /// Programs of one level start together. Requires an acyclic graph.
    pub fn levels(&self) -> Vec<Vec<usize>> {
        let mut level = vec![None; self.len()];
        fn depth(g: &Graph, i: usize, level: &mut Vec<Option<usize>>, guard: usize) -> usize {
            if let Some(l) = level[i] {
                return l;
            }
            if guard > g.len() {
                return 0; // a cycle; validation reports it
            }
            let ons: Vec<usize> = g.order(i).collect();
            let l = ons
                .into_iter()
                .map(|on| depth(g, on, level, guard + 1) + 1)
                .max()
                .unwrap_or(0);
            level[i] = Some(l);
            l
        }
        let mut out: Vec<Vec<usize>> = Vec::new();
        for i in 0..self.len() {
            let l = depth(self, i, &mut level, 0);
            if out.len() <= l {
                out.resize(l + 1, Vec::new());
            }
            out[l].push(i);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::spec::{Dependency, Kind};

    fn prog(name: &str, deps: &[&str]) -> ProgramSpec {
        let mut p = ProgramSpec::new(name, vec!["true".into()], Kind::Service);
        p.depends_on = deps
            .iter()
            .map(|d| Dependency {
                name: d.to_string(),
                condition: Condition::Ready,
                restart: false,
            })
            .collect();
        p
    }

    #[test]
    fn diamond_levels_and_closures() {
        // 0 prov; 1 db <- prov; 2 cache <- prov; 3 api <- db, cache
        let g = Graph::new(&[
            prog("prov", &[]),
            prog("db", &["prov"]),
            prog("cache", &["prov"]),
            prog("api", &["db", "cache"]),
        ]);
        assert!(g.cycles().is_empty());
        assert_eq!(g.levels(), vec![vec![0], vec![1, 2], vec![3]]);
        assert_eq!(g.dependents_closure(0), vec![0, 1, 2, 3]);
        assert_eq!(g.deps_closure(3), vec![3, 1, 2, 0]);
        assert_eq!(g.dependents(1), &[3]);
    }

    #[test]
    fn after_orders_without_requiring() {
        // 0 redis; 1 worker after redis; 2 cron after worker, and worker depends on nothing.
        let mut worker = prog("worker", &[]);
        worker.after = vec!["redis".into()];
        let mut cron = prog("cron", &[]);
        cron.after = vec!["worker".into()];
        let g = Graph::new(&[prog("redis", &[]), worker, cron]);
        assert!(g.cycles().is_empty());
        assert_eq!(g.levels(), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(g.after(1), &[0]);
        assert_eq!(g.before(0), &[1]);
        // Not a requirement: no closure takes it along.
        assert_eq!(g.dependents_closure(0), vec![0]);
        assert_eq!(g.deps_closure(2), vec![2]);
        assert!(g.deps(1).is_empty());
        // A cycle across depends_on and after.
        let mut a = prog("a", &["b"]);
        a.after = vec![];
        let mut b = prog("b", &[]);
        b.after = vec!["a".into()];
        let g = Graph::new(&[a, b]);
        assert_eq!(g.cycles(), vec![vec![0, 1, 0]]);
    }

    #[test]
    fn cycles_are_reported_as_paths() {
        let g = Graph::new(&[
            prog("a", &["b"]),
            prog("b", &["c"]),
            prog("c", &["a"]),
            prog("d", &["d"]),
        ]);
        let cycles = g.cycles();
        assert_eq!(cycles, vec![vec![0, 1, 2, 0], vec![3, 3]]);
    }
}

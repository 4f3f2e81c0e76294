//! s6-overlay's order as dependencies between units: cont-init.d scripts one after another;
//! s6-rc units by their `dependencies.d` (a bundle standing for its contents, s6-overlay's
//! `base` for the cont-init.d scripts, `legacy-services` for services.d); services.d after
//! cont-init.d and the `user` bundle; and what starts at boot (the `user` and `user2` bundles
//! and what they depend on). A oneshot whose `up` does nothing is not a program: whoever
//! depends on it depends on what it depends on. Resolution is bounded (nesting depth), so a
//! bundle cycle cannot loop.

use super::model::{Layout, Origin};

/// How deep bundles and skipped oneshots may nest.
const MAX_DEPTH: usize = 64;

/// The dependencies of every unit as unit indexes, and the names that matched nothing.
pub struct Order {
    /// Per unit: the units it waits for (programs only: no skipped oneshot), in order.
    pub deps: Vec<Vec<usize>>,
    /// Per unit: the names it depends on that the layout does not define.
    pub unknown: Vec<Vec<String>>,
    /// Per unit: whether it starts at boot.
    pub autostart: Vec<bool>,
}

/// Whether unit `i` is a program (a skipped oneshot is not).
pub fn is_program(layout: &Layout, i: usize) -> bool {
    layout.units[i].run.is_some()
}

/// Resolves the order of `layout`.
pub fn resolve(layout: &Layout) -> Order {
    let n = layout.units.len();
    let inits: Vec<usize> = (0..n)
        .filter(|&i| layout.units[i].origin == Origin::ContInit)
        .collect();
    let services: Vec<usize> = (0..n)
        .filter(|&i| layout.units[i].origin == Origin::Services)
        .collect();
    let mut order = Order {
        deps: vec![Vec::new(); n],
        unknown: vec![Vec::new(); n],
        autostart: vec![true; n],
    };
    let r = Resolver {
        layout,
        last_init: inits.last().copied(),
        services: &services,
    };
    for i in 0..n {
        let u = &layout.units[i];
        let (mut deps, mut unknown) = (Vec::new(), Vec::new());
        match u.origin {
            Origin::ContInit => {
                if let Some(pos) = inits.iter().position(|&x| x == i).filter(|&p| p > 0) {
                    deps.push(inits[pos - 1]);
                }
            }
            Origin::Services => {
                deps.extend(r.last_init);
                for name in layout.user.iter().flatten() {
                    r.add(name, 0, &mut deps, &mut unknown);
                }
            }
            Origin::Rc => {
                for d in &u.deps {
                    r.add(d, 0, &mut deps, &mut unknown);
                }
            }
        }
        deps.retain(|&d| d != i);
        let mut seen = Vec::new();
        deps.retain(|d| {
            let new = !seen.contains(d);
            seen.push(*d);
            new
        });
        order.deps[i] = deps;
        order.unknown[i] = unknown;
        order.autostart[i] = u.autostart;
    }
    reduce(&mut order.deps);
    if let Some(user) = &layout.user {
        let mut started = vec![false; n];
        let mut todo = Vec::new();
        for name in user.iter().chain(&layout.user2) {
            r.add_all(name, 0, &mut todo);
        }
        while let Some(i) = todo.pop() {
            if std::mem::replace(&mut started[i], true) {
                continue;
            }
            for d in &layout.units[i].deps {
                r.add_all(d, 0, &mut todo);
            }
        }
        for ((u, auto), started) in layout.units.iter().zip(&mut order.autostart).zip(started) {
            if u.origin == Origin::Rc {
                *auto = started;
            }
        }
    }
    order
}

/// Leaves out each dependency another dependency already waits for (directly or not), so a
/// chain reads as a chain: s6-overlay's `-end` markers expand to many names otherwise.
fn reduce(deps: &mut [Vec<usize>]) {
    let reach = |from: usize, deps: &[Vec<usize>]| -> Vec<bool> {
        let mut seen = vec![false; deps.len()];
        let mut todo = deps[from].clone();
        while let Some(i) = todo.pop() {
            if !std::mem::replace(&mut seen[i], true) {
                todo.extend(&deps[i]);
            }
        }
        seen
    };
    for i in 0..deps.len() {
        let through: Vec<Vec<bool>> = deps[i].iter().map(|&d| reach(d, deps)).collect();
        let keep: Vec<usize> = deps[i]
            .iter()
            .enumerate()
            .filter(|&(k, &d)| !through.iter().enumerate().any(|(j, r)| j != k && r[d]))
            .map(|(_, &d)| d)
            .collect();
        deps[i] = keep;
    }
}

struct Resolver<'a> {
    layout: &'a Layout,
    last_init: Option<usize>,
    services: &'a [usize],
}

impl Resolver<'_> {
    /// The programs `name` stands for, into `out`; names that match nothing into `unknown`.
    fn add(&self, name: &str, depth: usize, out: &mut Vec<usize>, unknown: &mut Vec<String>) {
        if depth > MAX_DEPTH {
            return;
        }
        match name {
            "base" | "legacy-cont-init" | "fix-attrs" => out.extend(self.last_init),
            // s6-overlay's legacy-services starts services.d once base and the user bundle are up.
            "legacy-services" => {
                out.extend(self.services);
                out.extend(self.last_init);
                for n in self.layout.user.iter().flatten() {
                    self.add(n, depth + 1, out, unknown);
                }
            }
            "user" => {
                for n in self.layout.user.iter().flatten() {
                    self.add(n, depth + 1, out, unknown);
                }
            }
            _ => {
                if let Some(i) = self
                    .layout
                    .units
                    .iter()
                    .position(|u| u.name == name && u.origin == Origin::Rc)
                {
                    if is_program(self.layout, i) {
                        out.push(i);
                    } else {
                        for d in &self.layout.units[i].deps {
                            self.add(d, depth + 1, out, unknown);
                        }
                    }
                } else if let Some((_, contents, _)) =
                    self.layout.bundles.iter().find(|b| b.0 == name)
                {
                    for c in contents {
                        self.add(c, depth + 1, out, unknown);
                    }
                } else if !unknown.iter().any(|u| u == name) {
                    unknown.push(name.to_string());
                }
            }
        }
    }

    /// Every unit `name` stands for, skipped oneshots included (for what starts at boot).
    fn add_all(&self, name: &str, depth: usize, out: &mut Vec<usize>) {
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(i) = self
            .layout
            .units
            .iter()
            .position(|u| u.name == name && u.origin == Origin::Rc)
        {
            out.push(i);
        } else if let Some((_, contents, _)) = self.layout.bundles.iter().find(|b| b.0 == name) {
            for c in contents {
                self.add_all(c, depth + 1, out);
            }
        }
    }
}

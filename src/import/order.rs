//! supervisord's `priority` as ordering. supervisord starts programs in priority order (lower
//! first; a group's priority before its programs'), without waiting for any, and stops them in
//! reverse, waiting for each priority's programs to be down before stopping the next. ctrlinit
//! says the same with `after` on the programs of the next lower priority: they are spawned first
//! and stopped last, nothing waits for readiness, and nothing is required, stopped or restarted
//! along with them.

/// One program's place in the order.
#[derive(Debug, Clone)]
pub struct Place {
    /// Its ctrlinit name.
    pub name: String,
    /// (its group's priority, its own), `None` when it comes from the environment.
    pub key: Option<(i64, i64)>,
    /// Programs not started at boot order nothing (a dependency on one would hold the
    /// dependent back until it is started by hand).
    pub autostart: bool,
}

/// For each program, the programs it starts after: the autostarted ones of the nearest lower
/// priority.
pub fn after(places: &[Place]) -> Vec<Vec<String>> {
    let mut keys: Vec<(i64, i64)> = places
        .iter()
        .filter(|p| p.autostart)
        .filter_map(|p| p.key)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    places
        .iter()
        .map(|p| {
            let Some(k) = p.key else { return Vec::new() };
            let Some(&below) = keys.iter().rev().find(|&&x| x < k) else {
                return Vec::new();
            };
            places
                .iter()
                .filter(|q| q.autostart && q.key == Some(below))
                .map(|q| q.name.clone())
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(name: &str, key: Option<(i64, i64)>, autostart: bool) -> Place {
        Place {
            name: name.into(),
            key,
            autostart,
        }
    }

    #[test]
    fn each_priority_starts_after_the_one_below() {
        let places = [
            place("php", Some((9, 9)), true),
            place("nginx", Some((10, 10)), true),
            place("queue", Some((11, 11)), true),
            place("cron", Some((11, 11)), true),
            place("manual", Some((5, 5)), false),
            place("env", None, true),
        ];
        let got = after(&places);
        assert_eq!(
            got[0],
            Vec::<String>::new(),
            "the lowest waits for nothing (manual is not started)"
        );
        assert_eq!(got[1], vec!["php"]);
        assert_eq!(got[2], vec!["nginx"]);
        assert_eq!(got[3], vec!["nginx"]);
        assert_eq!(got[4], Vec::<String>::new());
        assert_eq!(got[5], Vec::<String>::new());
    }

    #[test]
    fn one_priority_for_all_is_no_order() {
        let places = [
            place("a", Some((999, 999)), true),
            place("b", Some((999, 999)), true),
        ];
        assert!(after(&places).iter().all(Vec::is_empty));
    }
}

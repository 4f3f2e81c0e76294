//! The README and the code say the same (issue 12): the state table's "next states" column is
//! the lifecycle's transition table, state by state.

use std::collections::BTreeSet;

use ctrlinit::model::State;
use ctrlinit::supervisor::transitions;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The rows between the `states` markers: (state, next states).
fn readme_states() -> Vec<(String, BTreeSet<String>)> {
    let text = readme();
    let start = text
        .find("<!-- states:")
        .expect("no states table in README.md");
    let end = text
        .find("<!-- /states -->")
        .expect("states table not closed");
    text[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let state = cells[1].trim_matches('`').to_string();
            let next = cells[3]
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            (state, next)
        })
        .collect()
}

#[test]
fn the_readme_state_table_is_the_transition_table() {
    let rows = readme_states();
    let listed: Vec<&str> = rows.iter().map(|(s, _)| s.as_str()).collect();
    let all: Vec<&str> = State::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        listed, all,
        "the README lists every state, in lifecycle order"
    );
    for (state, next) in rows {
        let s: State = state.parse().unwrap();
        let code: BTreeSet<String> = transitions::next_states(s)
            .iter()
            .map(|t| t.as_str().to_string())
            .collect();
        assert_eq!(
            next, code,
            "README next states of `{state}` differ from the code's"
        );
    }
}

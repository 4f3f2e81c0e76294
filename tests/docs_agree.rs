//! The book's reference and the code say the same: the state table's "next states" column is
//! the lifecycle's transition table, state by state, and the configuration block shows every key
//! the loader accepts.

use std::collections::BTreeSet;

use ctrlinit::model::State;
use ctrlinit::supervisor::core::transitions;

/// The reference page of the program states (docs/src/reference/states.md).
fn states_page() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/reference/states.md"
    ))
    .unwrap()
}

/// The reference page of the configuration keys (docs/src/reference/config.md).
fn config_page() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/reference/config.md"
    ))
    .unwrap()
}

/// The rows between the `states` markers: (state, next states).
fn readme_states() -> Vec<(String, BTreeSet<String>)> {
    let text = states_page();
    let start = text
        .find("<!-- states:")
        .expect("no states table in docs/src/reference/states.md");
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
fn the_state_table_is_the_transition_table() {
    let rows = readme_states();
    let listed: Vec<&str> = rows.iter().map(|(s, _)| s.as_str()).collect();
    let all: Vec<&str> = State::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        listed, all,
        "the states page lists every state, in lifecycle order"
    );
    for (state, next) in rows {
        let s: State = state.parse().unwrap();
        let code: BTreeSet<String> = transitions::next_states(s)
            .iter()
            .map(|t| t.as_str().to_string())
            .collect();
        assert_eq!(
            next, code,
            "the states page's next states of `{state}` differ from the code's"
        );
    }
}

/// The lines of the configuration page's block under `[TABLE]`, up to the next table header.
fn config_table(table: &str) -> String {
    let text = config_page();
    let start = text
        .find("```toml\n[init]")
        .expect("docs/src/reference/config.md has a configuration block starting with [init]");
    let block = &text[start..start + text[start..].find("\n```\n").unwrap()];
    let header = format!("\n[{table}]");
    let from = block
        .find(&header)
        .map(|i| i + header.len())
        .or_else(|| block.starts_with(&header[1..]).then_some(header.len() - 1))
        .unwrap_or_else(|| {
            panic!("no [{table}] in docs/src/reference/config.md's configuration block")
        });
    let rest = &block[from..];
    let end = rest.find("\n[").unwrap_or(rest.len());
    rest[..end].to_string()
}

#[test]
fn the_configuration_block_shows_every_key() {
    let mut missing = Vec::new();
    for (table, keys) in ctrlinit::config::known_keys() {
        let shown = config_table(table);
        for key in keys {
            // `key = …` at a line's start, or inside a comment (`…; crash_mode = "0640" …`).
            let at_start = shown.lines().any(|l| l.starts_with(&format!("{key} =")));
            let in_comment = shown.contains(&format!(" {key} = "));
            // A key that is a table of its own (`[program.api.health]`) has its own header.
            let own_table = config_page().contains(&format!("\n[{table}.{key}]"));
            if !at_start && !in_comment && !own_table {
                missing.push(format!("[{table}] {key}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/src/reference/config.md's configuration block does not show: {missing:?}"
    );
}

//! The external dependencies (`[external.NAME]`) under the `status` table: one row each, with
//! its check, its state and for how long, and its last result.

use crate::model::protocol::ExternalStatus;

/// The headings, in the order [`row`] fills them.
const HEADER: [&str; 5] = ["EXTERNAL", "CHECK", "STATE", "DEPENDENTS", "LAST RESULT"];

/// The externals' table, columns padded to their widest cell (the last unpadded); empty when
/// there is none.
pub fn render(externals: &[ExternalStatus]) -> String {
    if externals.is_empty() {
        return String::new();
    }
    let rows: Vec<[String; 5]> = externals.iter().map(row).collect();
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let header = HEADER.map(String::from);
    for cells in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One external's cells: the last result without the check's words it repeats.
fn row(e: &ExternalStatus) -> [String; 5] {
    let last = e.last.as_deref().map_or("-".to_string(), |l| {
        l.strip_prefix(&e.check)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(l)
            .to_string()
    });
    let dependents = if e.dependents.is_empty() {
        "-".to_string()
    } else {
        e.dependents.join(",")
    };
    [
        e.name.clone(),
        e.check.clone(),
        format!(
            "{} ({})",
            e.state,
            super::durations::short_duration(e.since_ms)
        ),
        dependents,
        last,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_show_check_state_and_last_result() {
        let e = ExternalStatus {
            name: "config-api".into(),
            check: "tcp config:8082".into(),
            state: "waiting".into(),
            last: Some("tcp config:8082: connection refused".into()),
            since_ms: 35_000,
            checks: 4,
            restarts_caused: 0,
            dependents: vec!["control".into(), "web".into()],
        };
        let table = render(&[e]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2, "{table}");
        assert!(lines[0].starts_with("EXTERNAL    CHECK"), "{table}");
        assert!(
            lines[1].contains("tcp config:8082  waiting (35s)  control,web  connection refused"),
            "{table}"
        );
        assert_eq!(render(&[]), "");
    }
}

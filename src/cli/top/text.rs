//! One frame as plain text (`ctrlinit top --once`, or `top` without a terminal): the header
//! lines, a blank line, the table with its columns padded to their widest cell, as `status`
//! prints its table.

use super::model::{COLUMNS, Model};

/// The frame's text, each line ending in a newline, none ending in spaces.
pub fn frame(model: &Model) -> String {
    let mut out = String::new();
    for line in model.header_lines() {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
    let rows = model.rows();
    let mut widths: Vec<usize> = COLUMNS.iter().map(|c| c.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(&r.cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (c, w) in cells.iter().zip(&widths) {
            l.push_str(&format!("{c:<w$}  "));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&COLUMNS);
    for r in &rows {
        line(&r.cells.each_ref().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::top::model::tests::program;
    use crate::model::State;

    #[test]
    fn a_frame_has_the_header_then_an_aligned_table() {
        let mut m = Model::new();
        let mut api = program("api", State::Running);
        api.pids = vec![7];
        m.apply_status(
            1,
            vec![api, program("a-long-name", State::Backoff)],
            None,
            Default::default(),
            Some(5_000),
        );
        let text = frame(&m);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "ctrlinit up 5s · 2 programs: 1 running, 1 backoff"
        );
        assert_eq!(lines[1], "");
        assert!(lines[2].starts_with("NAME         STATE    HEALTH  PIDS  CPU%"));
        assert!(lines[3].starts_with("api          running  -       7     -"));
        assert!(lines[4].starts_with("a-long-name  backoff"));
        assert!(text.lines().all(|l| !l.ends_with(' ')));
    }
}

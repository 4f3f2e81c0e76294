//! Names: a supervisord program or group name made a ctrlinit program name (`[a-z0-9_.-]`, at
//! most 64 characters, room left for an instance suffix), and output file names kept apart.

use crate::config::names::{MAX_NAME, name_problem};

/// `name` as a ctrlinit program name: lowercased, each run of other characters made one `-`,
/// no `-` at either end, cut to leave `reserve` characters (an instance suffix). A name left
/// with nothing valid becomes `program`.
pub fn program_name(name: &str, reserve: usize) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c) {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    let mut out = out.trim_matches('-').to_string();
    let max = MAX_NAME.saturating_sub(reserve).max(1);
    if out.len() > max {
        out.truncate(max);
        out = out.trim_end_matches('-').to_string();
    }
    if out.is_empty() || out.chars().all(|c| c == '.') {
        out = "program".into();
    }
    if name_problem(&out).is_some() {
        // The only other rule: a reserved name (ctrlinit's own).
        out = format!(
            "{}-program",
            &out[..out.len().min(max.saturating_sub(8).max(1))]
        );
    }
    out
}

/// Hands out names no one else has: `base`, else `base-2`, `base-3` …
#[derive(Debug, Default)]
pub struct Unique {
    taken: Vec<String>,
}

impl Unique {
    /// `base`, or the first of `base-2`, `base-3` … not taken yet.
    pub fn take(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        self.taken.push(name.clone());
        name
    }

    /// Marks `name` as taken.
    pub fn reserve(&mut self, name: &str) {
        self.taken.push(name.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::names::valid_name;

    #[test]
    fn names_become_valid_program_names() {
        assert_eq!(program_name("web", 0), "web");
        assert_eq!(program_name("Laravel Worker", 0), "laravel-worker");
        assert_eq!(program_name("test_öäü", 0), "test_");
        assert_eq!(
            program_name("celery_worker_${worker_number}", 0),
            "celery_worker_-worker_number"
        );
        assert_eq!(program_name("中文", 0), "program");
        assert_eq!(program_name("ctrlinit", 0), "ctrlinit-program");
        let long = "x".repeat(80);
        assert_eq!(program_name(&long, 4).len(), 60);
        for n in ["web", "Laravel Worker", "..", "ctrlinit", &long, "a/b:c"] {
            assert!(valid_name(&program_name(n, 3)), "{n}");
        }
    }

    #[test]
    fn unique_names() {
        let mut u = Unique::default();
        assert_eq!(u.take("web"), "web");
        assert_eq!(u.take("web"), "web-2");
        assert_eq!(u.take("web"), "web-3");
    }
}

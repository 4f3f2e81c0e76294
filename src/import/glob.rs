//! `[include] files =` patterns, matched as Python's `glob.glob` does: `*`, `?` and `[…]` within
//! one path component, names starting with `.` only matched by a pattern starting with `.`,
//! the matches sorted.

use std::path::{Component, Path, PathBuf};

/// Whether `name` matches the one-component `pattern` (Python's `fnmatch`, case-sensitive).
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    let n: Vec<char> = name.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    matches_from(&n, &p)
}

fn matches_from(n: &[char], p: &[char]) -> bool {
    let (mut ni, mut pi) = (0, 0);
    // Where the last `*` was, to backtrack to.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                '?' => {
                    ni += 1;
                    pi += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class(&p[pi..], n[ni]) {
                        if matched {
                            ni += 1;
                            pi += next;
                            continue;
                        }
                    } else if n[ni] == '[' {
                        // An unclosed `[` is a literal.
                        ni += 1;
                        pi += 1;
                        continue;
                    }
                }
                c if c == n[ni] => {
                    ni += 1;
                    pi += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A `[…]` class at the start of `p`: whether `c` is in it, and the class's length; `None`
/// when it is never closed.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(i), Some('!'));
    if negate {
        i += 1;
    }
    // A `]` first in the class is a member.
    let start = i;
    let mut matched = false;
    while i < p.len() {
        if p[i] == ']' && i > start {
            return Some((matched != negate, i + 1));
        }
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|&e| e != ']') {
            if p[i] <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The paths matching `pattern` (absolute, or joined to `base`), sorted.
pub fn glob(base: &Path, pattern: &str) -> Vec<PathBuf> {
    let full = base.join(pattern);
    let mut found: Vec<PathBuf> = vec![PathBuf::new()];
    for comp in full.components() {
        let part = match comp {
            Component::Normal(s) => s.to_string_lossy().into_owned(),
            other => {
                for f in &mut found {
                    f.push(other.as_os_str());
                }
                continue;
            }
        };
        let mut next = Vec::new();
        for dir in &found {
            if !has_magic(&part) {
                let p = dir.join(&part);
                if std::fs::symlink_metadata(&p).is_ok() {
                    next.push(p);
                }
                continue;
            }
            let listing = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir.as_path()
            };
            let Ok(entries) = std::fs::read_dir(listing) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.') || part.starts_with('.'))
                .filter(|n| fnmatch(n, &part))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|n| dir.join(n)));
        }
        found = next;
        if found.is_empty() {
            break;
        }
    }
    found.retain(|p| !p.as_os_str().is_empty());
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_as_python() {
        assert!(fnmatch("a.conf", "*.conf"));
        assert!(!fnmatch("a.conf.bak", "*.conf"));
        assert!(fnmatch("config12.conf", "config??.conf"));
        assert!(fnmatch("b.ini", "[ab].ini"));
        assert!(!fnmatch("c.ini", "[ab].ini"));
        assert!(fnmatch("c.ini", "[!ab].ini"));
        assert!(fnmatch("x5", "x[0-9]"));
        assert!(fnmatch("[x", "[x"));
        assert!(fnmatch("", "*"));
        assert!(fnmatch("abc", "a*b*c"));
        assert!(!fnmatch("abd", "a*c"));
    }

    #[test]
    fn globs_relative_to_a_base_sorted_without_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("conf.d");
        std::fs::create_dir(&d).unwrap();
        for f in ["b.conf", "a.conf", ".hidden.conf", "c.ini"] {
            std::fs::write(d.join(f), "").unwrap();
        }
        let found = glob(dir.path(), "conf.d/*.conf");
        assert_eq!(found, vec![d.join("a.conf"), d.join("b.conf")]);
        assert_eq!(glob(dir.path(), "conf.d/c.ini"), vec![d.join("c.ini")]);
        assert!(glob(dir.path(), "nowhere/*.conf").is_empty());
        let abs = format!("{}/*.ini", d.display());
        assert_eq!(glob(Path::new("/elsewhere"), &abs), vec![d.join("c.ini")]);
    }
}

//! Shell-style name patterns (`*`, `?`, `[…]`, `[!…]`), matched as Python's `fnmatch` does,
//! case-sensitive: the import's `[include] files =` components and the names a control
//! command is given (`ctrlinit status 'svc-*'`).

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

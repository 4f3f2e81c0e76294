//! `[include] files =` patterns, matched as Python's `glob.glob` does: `*`, `?` and `[…]` within
//! one path component, names starting with `.` only matched by a pattern starting with `.`,
//! the matches sorted.

use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

pub use crate::model::pattern::fnmatch;

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// How far one pattern's walk may go: the directory entries it reads, the paths it holds
/// between components, and how long it takes. `/*/*/*/*/*/*/*/*` would otherwise walk the whole
/// file system before the file cap is ever looked at.
#[derive(Debug, Clone, Copy)]
pub struct WalkLimits {
    /// Directory entries read, over every listing.
    pub entries: usize,
    /// Paths matched so far at any one component (the candidates the next one lists).
    pub paths: usize,
    /// Path components of the pattern (each one is one level of the walk).
    pub depth: usize,
    /// Time spent walking.
    pub time: Duration,
}

/// The limits `[include] files` is read with.
pub const WALK_LIMITS: WalkLimits = WalkLimits {
    entries: 100_000,
    paths: 10_000,
    depth: 32,
    time: Duration::from_secs(10),
};

/// Why a walk stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    /// The pattern has more components than [`WalkLimits::depth`].
    #[error("{pattern:?} is {depth} levels deep, over the limit of {limit}")]
    TooDeep {
        /// The pattern.
        pattern: String,
        /// Its components.
        depth: usize,
        /// The most allowed.
        limit: usize,
    },
    /// The walk read too many entries, held too many paths or took too long.
    #[error("matching {pattern:?} stopped after {what}, over the limit of {limit}")]
    TooMuch {
        /// The pattern.
        pattern: String,
        /// What was spent when it stopped.
        what: String,
        /// The limit passed.
        limit: String,
    },
}

/// The paths matching `pattern` (absolute, or joined to `base`), sorted; an error when the
/// walk goes past `limits`.
pub fn glob(base: &Path, pattern: &str, limits: WalkLimits) -> Result<Vec<PathBuf>, WalkError> {
    let full = base.join(pattern);
    let depth = full.components().count();
    if depth > limits.depth {
        return Err(WalkError::TooDeep {
            pattern: pattern.to_string(),
            depth,
            limit: limits.depth,
        });
    }
    let mut walk = Walk {
        pattern,
        limits,
        began: Instant::now(),
        entries: 0,
    };
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
            walk.step(&part, dir, &mut next)?;
        }
        found = next;
        if found.is_empty() {
            break;
        }
    }
    found.retain(|p| !p.as_os_str().is_empty());
    found.sort();
    Ok(found)
}

/// One pattern's walk in progress: what it has spent.
struct Walk<'a> {
    pattern: &'a str,
    limits: WalkLimits,
    began: Instant,
    entries: usize,
}

impl Walk<'_> {
    /// The entries of `dir` matching the component `part`, added to `next`.
    fn step(&mut self, part: &str, dir: &Path, next: &mut Vec<PathBuf>) -> Result<(), WalkError> {
        self.in_time()?;
        if !has_magic(part) {
            let p = dir.join(part);
            if std::fs::symlink_metadata(&p).is_ok() {
                next.push(p);
            }
            return self.holding(next.len());
        }
        let listing = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let Ok(entries) = std::fs::read_dir(listing) else {
            return Ok(());
        };
        let mut names = Vec::new();
        for entry in entries {
            self.entries += 1;
            if self.entries > self.limits.entries {
                return Err(self.too_much(
                    format!("reading {} directory entries", self.entries),
                    self.limits.entries.to_string(),
                ));
            }
            if self.entries.is_multiple_of(1024) {
                self.in_time()?;
            }
            let Ok(entry) = entry else { continue };
            let n = entry.file_name().to_string_lossy().into_owned();
            if (!n.starts_with('.') || part.starts_with('.')) && fnmatch(&n, part) {
                names.push(n);
            }
        }
        names.sort();
        next.extend(names.into_iter().map(|n| dir.join(n)));
        self.holding(next.len())
    }

    fn holding(&self, paths: usize) -> Result<(), WalkError> {
        if paths > self.limits.paths {
            return Err(self.too_much(
                format!("{paths} matching paths"),
                self.limits.paths.to_string(),
            ));
        }
        Ok(())
    }

    fn in_time(&self) -> Result<(), WalkError> {
        let spent = self.began.elapsed();
        if spent > self.limits.time {
            return Err(self.too_much(
                format!("{}ms", spent.as_millis()),
                humantime::format_duration(self.limits.time).to_string(),
            ));
        }
        Ok(())
    }

    fn too_much(&self, what: String, limit: String) -> WalkError {
        WalkError::TooMuch {
            pattern: self.pattern.to_string(),
            what,
            limit,
        }
    }
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
        let found = glob(dir.path(), "conf.d/*.conf", WALK_LIMITS).unwrap();
        assert_eq!(found, vec![d.join("a.conf"), d.join("b.conf")]);
        assert_eq!(
            glob(dir.path(), "conf.d/c.ini", WALK_LIMITS).unwrap(),
            vec![d.join("c.ini")]
        );
        assert!(
            glob(dir.path(), "nowhere/*.conf", WALK_LIMITS)
                .unwrap()
                .is_empty()
        );
        let abs = format!("{}/*.ini", d.display());
        assert_eq!(
            glob(Path::new("/elsewhere"), &abs, WALK_LIMITS).unwrap(),
            vec![d.join("c.ini")]
        );
    }

    #[test]
    fn a_walk_stops_at_its_limits_with_what_it_spent() {
        let dir = tempfile::tempdir().unwrap();
        for a in 0..4 {
            for b in 0..4 {
                std::fs::create_dir_all(dir.path().join(format!("{a}/{b}"))).unwrap();
            }
        }
        let tight = WalkLimits {
            entries: 10,
            ..WALK_LIMITS
        };
        let e = glob(dir.path(), "*/*/x.conf", tight).unwrap_err();
        assert!(
            e.to_string()
                .contains("directory entries, over the limit of 10"),
            "{e}"
        );
        let few = WalkLimits {
            paths: 3,
            ..WALK_LIMITS
        };
        let e = glob(dir.path(), "*/*", few).unwrap_err();
        assert!(
            e.to_string()
                .contains("matching paths, over the limit of 3"),
            "{e}"
        );
        let shallow = WalkLimits {
            depth: 3,
            ..WALK_LIMITS
        };
        let e = glob(Path::new("/"), "/*/*/*/*/*/*/*/*", shallow).unwrap_err();
        assert!(e.to_string().contains("levels deep"), "{e}");
        let no_time = WalkLimits {
            time: Duration::ZERO,
            ..WALK_LIMITS
        };
        let e = glob(dir.path(), "*/*", no_time).unwrap_err();
        assert!(e.to_string().contains("ms, over the limit of 0s"), "{e}");
        assert_eq!(glob(dir.path(), "*/*", WALK_LIMITS).unwrap().len(), 16);
    }
}

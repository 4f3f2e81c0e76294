//! Where the kernel writes core dumps (`/proc/sys/kernel/core_pattern`), and claiming the core a
//! crashed process just dumped before its restart can overwrite it.

use std::path::{Path, PathBuf};

use crate::sys::files::read_regular;

/// A kernel setting is one short line; more than this is not one.
const SETTING_CAP: u64 = 4096;

/// A `/proc/sys/kernel` setting, read with the cap every read has.
fn kernel_setting(name: &str) -> Option<String> {
    let bytes = read_regular(&Path::new("/proc/sys/kernel").join(name), SETTING_CAP).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Whether ctrlinit can compute a core's file name from `pattern`: only the pid (`%p`, `%P`,
/// `%i`, `%I`), the executable's name (`%e`) and `%%` are known to it.
fn names_predictable(pattern: &str) -> bool {
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '%' && !matches!(chars.next(), Some('p' | 'P' | 'i' | 'I' | 'e' | '%')) {
            return false;
        }
    }
    true
}

/// Where the kernel sends core dumps, from `/proc/sys/kernel/core_pattern`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorePattern {
    /// Relative: cores land in the program's working directory.
    Relative(String),
    /// An absolute path pattern.
    Absolute(String),
    /// Piped to a handler on the host (`|/usr/lib/systemd/systemd-coredump …`): ctrlinit cannot
    /// see the core, it only writes the report.
    Pipe(String),
}

impl CorePattern {
    /// Reads the kernel's pattern.
    pub fn read() -> Self {
        let raw = kernel_setting("core_pattern").unwrap_or_else(|| "core".into());
        Self::parse(raw.trim())
    }

    /// Classifies a pattern.
    pub fn parse(raw: &str) -> Self {
        if let Some(cmd) = raw.strip_prefix('|') {
            CorePattern::Pipe(cmd.to_string())
        } else if raw.starts_with('/') {
            CorePattern::Absolute(raw.to_string())
        } else {
            CorePattern::Relative(raw.to_string())
        }
    }

    /// One line for ctrlinit's start-up log.
    pub fn describe(&self) -> String {
        match self {
            CorePattern::Relative(p) => format!(
                "core_pattern {p:?} is relative: cores land in the program's working directory; ctrlinit moves them to crash_dir"
            ),
            CorePattern::Absolute(p) if !names_predictable(p) => format!(
                "core_pattern {p:?} is an absolute path whose file names ctrlinit cannot predict (time, host, uid …): cores stay there; crash reports say one was dumped"
            ),
            CorePattern::Absolute(p) => format!(
                "core_pattern {p:?} is an absolute path: ctrlinit collects cores found there into crash_dir"
            ),
            CorePattern::Pipe(cmd) => format!(
                "core_pattern pipes cores to a host handler ({cmd}): cores go to the host; ctrlinit writes crash reports only"
            ),
        }
    }

    /// Where a core of `pid` (executable `comm`, working directory `cwd`) would be, if visible.
    pub fn core_path(&self, pid: i32, comm: &str, cwd: &Path, uses_pid: bool) -> Option<PathBuf> {
        let (pattern, base) = match self {
            CorePattern::Pipe(_) => return None,
            CorePattern::Relative(p) => (p.as_str(), Some(cwd)),
            CorePattern::Absolute(p) => (p.as_str(), None),
        };
        let mut name = String::new();
        let mut chars = pattern.chars();
        let mut has_pid = false;
        while let Some(c) = chars.next() {
            if c != '%' {
                name.push(c);
                continue;
            }
            match chars.next() {
                Some('p') | Some('P') | Some('i') | Some('I') => {
                    name.push_str(&pid.to_string());
                    has_pid = true;
                }
                Some('e') => name.push_str(comm),
                Some('%') => name.push('%'),
                // Time, host name, uid … cannot be predicted exactly: give up on this pattern.
                _ => return None,
            }
        }
        if uses_pid && !has_pid {
            name.push_str(&format!(".{pid}"));
        }
        Some(match base {
            Some(dir) => dir.join(name),
            None => PathBuf::from(name),
        })
    }
}

/// Whether the kernel appends `.PID` to core file names.
pub fn core_uses_pid() -> bool {
    kernel_setting("core_uses_pid").is_some_and(|s| s.trim() == "1")
}

/// Renames the core a crashed process just dumped to a name of its own, at reap time, before
/// the program is restarted: with a pattern like `core`, the next crash would overwrite it
/// before the crash report (written off the restart path) collects it. One rename, cheap.
pub fn claim_core(
    pattern: &CorePattern,
    pid: i32,
    command: &[String],
    cwd: &Path,
) -> Option<(PathBuf, PathBuf)> {
    let comm = comm_of(command);
    let candidates = [core_uses_pid(), true, false]
        .into_iter()
        .filter_map(|uses_pid| pattern.core_path(pid, &comm, cwd, uses_pid));
    for src in candidates {
        if !src.is_file() {
            continue;
        }
        let mut held = src.clone().into_os_string();
        held.push(format!(".ctrlinit-{pid}"));
        let held = PathBuf::from(held);
        if std::fs::rename(&src, &held).is_ok() {
            return Some((held, src));
        }
    }
    None
}

/// The kernel's `comm` of a process started as `command` (its file name, 15 bytes at most).
fn comm_of(command: &[String]) -> String {
    command
        .first()
        .and_then(|c| Path::new(c).file_name())
        .map(|n| n.to_string_lossy().chars().take(15).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_classified_and_expanded() {
        assert_eq!(
            CorePattern::parse("core"),
            CorePattern::Relative("core".into())
        );
        assert!(matches!(
            CorePattern::parse("|/usr/lib/systemd/systemd-coredump %P"),
            CorePattern::Pipe(_)
        ));
        let cwd = Path::new("/srv");
        let rel = CorePattern::parse("core");
        assert_eq!(
            rel.core_path(42, "api", cwd, false).unwrap(),
            Path::new("/srv/core")
        );
        assert_eq!(
            rel.core_path(42, "api", cwd, true).unwrap(),
            Path::new("/srv/core.42")
        );
        let abs = CorePattern::parse("/cores/core.%e.%p");
        assert_eq!(
            abs.core_path(42, "api", cwd, true).unwrap(),
            Path::new("/cores/core.api.42")
        );
        assert!(
            CorePattern::parse("/cores/%t")
                .core_path(1, "x", cwd, false)
                .is_none()
        );
        assert!(
            CorePattern::parse("|x")
                .core_path(1, "x", cwd, false)
                .is_none()
        );
    }
}

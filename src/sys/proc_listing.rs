//! Which processes exist, from one listing of `/proc`, and which cgroup one is in.
//!
//! Looking at thousands of programs' processes one program at a time costs a few system calls
//! a program (open, read and close its group's `cgroup.procs`, or each process's `stat`): at
//! 3,000 programs that was most of a `status`. A listing of `/proc` costs
//! a handful of `getdents64` calls for the whole container, and the processes ctrlinit already
//! knows (each program's main process, ctrlinit's own children) need no read at all: only the
//! others are read one by one.

use std::collections::HashSet;

/// Most processes one listing takes (a container has tens; a host thousands).
const LISTING_CAP: usize = 100_000;

/// The longest `/proc/PID/cgroup` read: one line per hierarchy, each a path (a hybrid host has
/// a dozen).
const CGROUP_FILE_CAP: u64 = 16 << 10;

/// Every process (thread group) `/proc` lists, when this `/proc` numbers processes as ctrlinit
/// does: `None` when it belongs to another PID namespace (ctrlinit started by `unshare --pid`
/// without a `/proc` of its own), where its numbers would name other processes.
pub fn listing() -> Option<HashSet<i32>> {
    let own: i32 = std::fs::read_link("/proc/self")
        .ok()?
        .to_str()?
        .parse()
        .ok()?;
    if own != std::process::id() as i32 {
        return None;
    }
    let entries = std::fs::read_dir("/proc").ok()?;
    Some(
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .take(LISTING_CAP)
            .collect(),
    )
}

/// The cgroup v2 path of `pid` (`/proc/PID/cgroup`'s `0::` line), relative to ctrlinit's
/// cgroup namespace; `None` when the process is gone or has none.
pub fn cgroup_path(pid: i32) -> Option<String> {
    let path = format!("/proc/{pid}/cgroup");
    let bytes = super::files::read_regular(std::path::Path::new(&path), CGROUP_FILE_CAP).ok()?;
    unified_line(&String::from_utf8_lossy(&bytes)).map(str::to_string)
}

/// The path of the unified (v2) hierarchy's line, `0::PATH`.
fn unified_line(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// The name of the group right below `top` in `path` (a program's group, for a process in it
/// or in a group below it), when `path` passes through a group named `top`.
pub fn group_below<'a>(path: &'a str, top: &str) -> Option<&'a str> {
    let mut parts = path.split('/');
    parts.find(|p| *p == top)?;
    parts.next().filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unified_line_is_found_among_v1_lines() {
        let text = "12:pids:/docker/abc\n1:name=systemd:/x\n0::/ctrlinit-n1/web/sub\n";
        assert_eq!(unified_line(text), Some("/ctrlinit-n1/web/sub"));
        assert_eq!(unified_line("3:cpu:/a\n"), None);
    }

    #[test]
    fn the_group_below_the_top_names_the_program_at_any_depth() {
        assert_eq!(
            group_below("/a/ctrlinit-n1/web", "ctrlinit-n1"),
            Some("web")
        );
        assert_eq!(
            group_below("/ctrlinit-n1/web/inner/deeper", "ctrlinit-n1"),
            Some("web")
        );
        // The top itself, another ctrlinit's sub-tree, or none: no program.
        assert_eq!(group_below("/a/ctrlinit-n1", "ctrlinit-n1"), None);
        assert_eq!(group_below("/a/ctrlinit-n1/", "ctrlinit-n1"), None);
        assert_eq!(group_below("/a/ctrlinit-n2/web", "ctrlinit-n1"), None);
        assert_eq!(group_below("/", "ctrlinit-n1"), None);
    }

    #[test]
    fn this_process_is_listed_and_its_cgroup_read() {
        // Test binaries do not run in a PID namespace of their own with a foreign /proc.
        let listed = listing().expect("the test's /proc is its own");
        assert!(listed.contains(&(std::process::id() as i32)));
        assert!(cgroup_path(std::process::id() as i32).is_some_and(|p| p.starts_with('/')));
    }
}

//! What a program's processes use, for its `[program.NAME.limits]` guards: resident memory and
//! open descriptors from `/proc` (one small read and one directory listing per process), and the
//! cgroup v2 files that give or bound the same where a program has a group with the controller
//! (`memory.current`, `pids.current`; `memory.max`, `pids.max`). Every read is bounded.

use std::io::Read;
use std::path::Path;

/// Most descriptors counted for one process: past this the figure is only "at least", which is
/// over every limit the config accepts ([`crate::config`] stops `fds` at 2^30).
const FD_COUNT_CAP: u64 = (1 << 30) + 1;

/// A process's resident memory in bytes (`/proc/PID/statm`'s second field, in pages), or
/// `None` when it is gone.
pub fn rss_bytes(pid: i32) -> Option<u64> {
    let mut f = std::fs::File::open(format!("/proc/{pid}/statm")).ok()?;
    // Seven numbers of at most 20 digits each.
    let mut buf = [0u8; 256];
    let n = f.read(&mut buf).ok()?;
    parse_statm(&buf[..n], page_size())
}

/// `size resident shared text lib data dt`, in pages: the resident figure in bytes.
pub fn parse_statm(text: &[u8], page: u64) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    let resident: u64 = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    resident.checked_mul(page)
}

/// The system's page size.
fn page_size() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map_or(4096, |n| n as u64)
}

/// How many descriptors a process has open (its `/proc/PID/fd` entries), or `None` when it is
/// gone or not ctrlinit's to look at.
pub fn fd_count(pid: i32) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    // The listing is the kernel's: no lookup per entry, and bounded by the process's table.
    Some(dir.take(FD_COUNT_CAP as usize).count() as u64)
}

/// A cgroup's single-number file (`memory.current`, `pids.current`), or `None` without it.
pub fn cgroup_number(dir: &Path, file: &str) -> Option<u64> {
    let mut f = std::fs::File::open(dir.join(file)).ok()?;
    let mut buf = [0u8; 64];
    let n = f.read(&mut buf).ok()?;
    parse_cgroup_number(&buf[..n])
}

/// `1234\n` (or `max`, which is no figure).
pub fn parse_cgroup_number(text: &[u8]) -> Option<u64> {
    std::str::from_utf8(text).ok()?.trim().parse().ok()
}

/// Writes a hard limit (`memory.max`, `pids.max`) into a cgroup. Fails where the controller is
/// not enabled for the group (the file does not exist) or the hierarchy is read-only.
pub fn set_cgroup_max(dir: &Path, file: &str, value: u64) -> std::io::Result<()> {
    let path = dir.join(file);
    // Never create: only the kernel's file of a group that has the controller is written.
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    std::io::Write::write_all(&mut f, value.to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statm_gives_resident_bytes() {
        assert_eq!(
            parse_statm(b"5421 1234 567 12 0 890 0\n", 4096),
            Some(1234 * 4096)
        );
        assert_eq!(parse_statm(b"5421\n", 4096), None);
        assert_eq!(parse_statm(b"", 4096), None);
        assert_eq!(parse_statm(b"1 x 2", 4096), None);
        assert_eq!(parse_statm(b"1 18446744073709551615 2", 4096), None);
    }

    #[test]
    fn cgroup_numbers() {
        assert_eq!(parse_cgroup_number(b"1073741824\n"), Some(1 << 30));
        assert_eq!(parse_cgroup_number(b"max\n"), None);
        assert_eq!(parse_cgroup_number(b"\xff"), None);
    }

    #[test]
    fn cgroup_files_by_path() {
        let dir = std::env::temp_dir().join(format!("ctrlinit-usage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("memory.current"), "4096\n").unwrap();
        std::fs::write(dir.join("pids.current"), "7\n").unwrap();
        assert_eq!(cgroup_number(&dir, "memory.current"), Some(4096));
        assert_eq!(cgroup_number(&dir, "pids.current"), Some(7));
        assert_eq!(cgroup_number(&dir, "memory.max"), None);
        // A limit is written only into a file the kernel made (the controller's).
        assert!(set_cgroup_max(&dir, "memory.max", 1 << 20).is_err());
        std::fs::write(dir.join("memory.max"), "max\n").unwrap();
        set_cgroup_max(&dir, "memory.max", 1 << 20).unwrap();
        assert_eq!(cgroup_number(&dir, "memory.max"), Some(1 << 20));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn own_process_figures() {
        let me = std::process::id() as i32;
        assert!(rss_bytes(me).is_some_and(|b| b > 0));
        let fds = fd_count(me).unwrap();
        let _extra = std::fs::File::open("/proc/self/stat").unwrap();
        assert!(fd_count(me).unwrap() > fds);
        assert_eq!(rss_bytes(i32::MAX), None);
        assert_eq!(fd_count(i32::MAX), None);
    }
}

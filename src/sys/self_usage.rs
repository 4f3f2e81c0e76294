//! ctrlinit's own footprint, for `/metrics`: resident memory and open descriptors.

use std::io::Read;

/// Resident set size in bytes (`/proc/self/statm`'s second field × the page size).
pub fn resident_bytes() -> Option<u64> {
    let mut f = std::fs::File::open("/proc/self/statm").ok()?;
    let mut buf = [0u8; 256];
    let n = f.read(&mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let pages: u64 = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// Open descriptors (entries of `/proc/self/fd`, less the one listing them).
pub fn open_fds() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(entries.count().saturating_sub(1) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_memory_and_descriptors() {
        assert!(resident_bytes().unwrap() > 100_000);
        // At least stdin, stdout and stderr (tests run in threads: nothing exact holds).
        assert!(open_fds().unwrap() >= 3);
    }
}

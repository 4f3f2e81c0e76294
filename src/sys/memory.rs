//! Handing back the memory an idle init does not use.
//!
//! An init runs in bursts (start-up, a restart, a control request) and idles in between. The
//! kernel maps code in 64 KiB windows (fault-around), so after start-up, or after a single
//! restart and `status`, nearly all of the binary's text is in ctrlinit's page tables and counts
//! in its RSS and PSS, although none of it runs while the container idles. Likewise the heap
//! keeps the pages the configuration was parsed in.
//!
//! [`release_cold_memory`] drops the page-table entries of ctrlinit's read-only file mappings
//! (its own text and the shared libraries') and trims the heap. Nothing is lost: the pages stay in
//! the page cache (shared with every container running the same image), and the few that the next
//! burst needs come back by minor fault. What changes is that the idle working set is what idling
//! uses, and the cold pages become unmapped page cache that the kernel may reclaim (and that
//! Kubernetes' working-set figure, which leaves out inactive file pages, stops counting).

use std::ffi::c_void;
use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::mman::{MmapAdvise, madvise};

/// What a release did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// Read-only file mappings whose page-table entries were dropped.
    pub mappings: usize,
    /// Their resident size before, in KiB.
    pub resident_kib: u64,
}

/// A mapping of `/proc/self/smaps` that may be dropped and refaulted without losing data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ColdCandidate {
    start: usize,
    end: usize,
    rss_kib: u64,
}

/// How long the release thread waits after a request before it drops anything: long enough for
/// the owner loop to finish its turn and park. Code that runs after a release faults back in,
/// 64 KiB at a time; the loop's own turn would bring back most of the binary's hot windows.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

/// A thread of its own that performs releases, so that the thread asking for one is parked in
/// `epoll_wait` when the pages are dropped, and nothing touches them again until real work
/// comes. After the last `madvise` the release thread runs only the end of a loop and a
/// blocking `read(2)`: everything it has to say is said before it drops anything.
pub struct Releaser {
    /// The write end of the pipe the release thread waits on (non-blocking: a request while
    /// one is pending changes nothing). Shared with [`AT_PARK`] while a release waits for the
    /// owner loop to park.
    requests: Arc<OwnedFd>,
}

/// The pipe of a release that waits for the owner loop to park (see [`at_park`]).
static AT_PARK: Mutex<Option<Arc<OwnedFd>>> = Mutex::new(None);

impl Releaser {
    /// Starts the release thread; each release is reported to `done` (for the log) just before
    /// it happens. `None` when no thread or pipe can be had (then nothing is released).
    pub fn start(done: impl Fn(Released) + Send + 'static) -> Option<Releaser> {
        let (rx, tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).ok()?;
        std::thread::Builder::new()
            .name("ctrlinit-idle".into())
            .stack_size(64 << 10)
            .spawn(move || {
                while let Some(asked) = wait_for_requests(&rx) {
                    if !asked.release {
                        trim_heap();
                        continue;
                    }
                    if !asked.parked {
                        std::thread::sleep(SETTLE);
                    }
                    let cold = cold_mappings();
                    // Requests that came while the mappings were read are served by this
                    // release: two checks in one wake-up cost one release, not two.
                    let _ = take_requests(&rx);
                    done(summary(&cold));
                    drop_mappings(&cold);
                }
            })
            .ok()?;
        Some(Releaser {
            requests: Arc::new(tx),
        })
    }

    /// Asks for a release soon (see [`SETTLE`]); never waits.
    pub fn request(&self) {
        let _ = nix::unistd::write(&*self.requests, &[RELEASE]);
    }

    /// Asks for a release the moment the owner loop next parks, with no timer of its own and
    /// no settling sleep: the runtime's park hook ([`at_park`]) passes it on. For the turns
    /// that only ran a routine check, so that each costs the release thread one wake-up and
    /// the loop none (an idle container's bound on wake-ups). Work before the park withdraws it
    /// ([`Releaser::withdraw_at_park`]).
    pub fn request_at_park(&self) {
        if let Ok(mut pending) = AT_PARK.lock() {
            *pending = Some(Arc::clone(&self.requests));
        }
    }

    /// Withdraws a release asked for at the next park: real work came, and its own quiet
    /// decides when to release.
    pub fn withdraw_at_park(&self) {
        if let Ok(mut pending) = AT_PARK.lock() {
            *pending = None;
        }
    }

    /// Asks for the heap alone to be trimmed, at once (amid work: code pages stay mapped);
    /// never waits.
    pub fn trim(&self) {
        let _ = nix::unistd::write(&*self.requests, &[TRIM]);
    }
}

/// Called by the owner loop's runtime just before its thread parks (tokio's
/// `on_thread_park`): passes on a release asked for with [`Releaser::request_at_park`]. The
/// release thread then finds the loop's thread blocked in `epoll_wait`, so nothing faults the
/// dropped pages back in before real work comes. Costs one uncontended lock when none waits.
pub fn at_park() {
    let pending = AT_PARK.lock().ok().and_then(|mut p| p.take());
    if let Some(requests) = pending {
        let _ = nix::unistd::write(&*requests, &[RELEASE_PARKED]);
    }
}

/// What the release thread was asked for since it last looked.
#[derive(Debug, Clone, Copy)]
struct Asked {
    release: bool,
    /// Every release asked for came from [`at_park`]: the loop is parked, no settling needed.
    parked: bool,
    trim: bool,
}

/// Blocks until a request comes, then takes every request waiting. `None` once the pipe is
/// closed or broken (the thread ends).
fn wait_for_requests(rx: &OwnedFd) -> Option<Asked> {
    loop {
        let mut fds = [PollFd::new(rx.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return None,
        }
        match take_requests(rx) {
            Ok(asked) if asked.release || asked.trim => return Some(asked),
            Ok(_) => continue,
            Err(()) => return None,
        }
    }
}

/// Reads every request waiting in the (non-blocking) pipe. `Err` when it is closed or broken.
fn take_requests(rx: &OwnedFd) -> Result<Asked, ()> {
    let mut asked = Asked {
        release: false,
        parked: true,
        trim: false,
    };
    let mut bytes = [0u8; 64];
    loop {
        match nix::unistd::read(rx, &mut bytes) {
            Ok(0) => return Err(()),
            Ok(n) => {
                for &b in &bytes[..n] {
                    match b {
                        RELEASE => (asked.release, asked.parked) = (true, false),
                        RELEASE_PARKED => asked.release = true,
                        _ => asked.trim = true,
                    }
                }
            }
            Err(nix::errno::Errno::EAGAIN) => return Ok(asked),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return Err(()),
        }
    }
}

/// A request for a whole release.
const RELEASE: u8 = b'r';
/// A request for a whole release, sent while the owner loop parks (no settling needed).
const RELEASE_PARKED: u8 = b'p';
/// A request for a trim of the heap only.
const TRIM: u8 = b't';

/// Returns the free pages of every malloc arena (each thread's, not only the main heap) to the
/// kernel.
fn trim_heap() {
    // SAFETY: malloc_trim only returns free heap pages to the kernel (in glibc, of every
    // arena, with each arena's lock held); it is safe beside other threads allocating.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Lists the mappings whose page-table entries may be dropped, and trims the heap.
fn cold_mappings() -> Vec<ColdCandidate> {
    let cold = read_smaps()
        .map(|smaps| droppable_mappings(&smaps))
        .unwrap_or_default();
    // After the smaps text is freed: it is large, and trimming before reading it left its
    // pages resident.
    trim_heap();
    cold
}

/// What dropping `cold` releases.
fn summary(cold: &[ColdCandidate]) -> Released {
    Released {
        mappings: cold.len(),
        resident_kib: cold.iter().map(|m| m.rss_kib).sum(),
    }
}

/// Drops the page-table entries of `cold` (see [`release_cold_memory`] for why it is sound).
fn drop_mappings(cold: &[ColdCandidate]) {
    for m in cold {
        let Some(addr) = NonNull::new(m.start as *mut c_void) else {
            continue;
        };
        // SAFETY: the range is a private file mapping that is not writable and holds no
        // anonymous (copy-on-write) page, so every resident page is an unmodified page-cache
        // page: MADV_DONTNEED only unmaps it, and the next access faults in the same bytes
        // from the file. No Rust object lives in it (it is code and read-only data), and a
        // thread executing in it merely takes a minor fault. RELRO data and relocated pages
        // are anonymous copies and are excluded by `droppable_mappings`.
        let _ = unsafe { madvise(addr, m.end - m.start, MmapAdvise::MADV_DONTNEED) };
    }
}

/// Drops the page-table entries of every read-only, unmodified file mapping and returns freed
/// heap to the kernel, as the release thread does after a quiet spell: the same steps, at once.
pub fn release_cold_memory() -> Released {
    let cold = cold_mappings();
    drop_mappings(&cold);
    summary(&cold)
}

/// The text of `/proc/self/smaps`, read as every file is (bounded: a few hundred mappings are
/// tens of KiB; past the cap nothing is released rather than the read growing unbounded).
fn read_smaps() -> Option<String> {
    let bytes =
        super::files::read_regular(std::path::Path::new("/proc/self/smaps"), 8 << 20).ok()?;
    String::from_utf8(bytes).ok()
}

/// The mappings in `smaps` text that are file-backed, private, not writable, resident, and hold
/// no anonymous page: the ones whose pages are exactly the file's.
fn droppable_mappings(smaps: &str) -> Vec<ColdCandidate> {
    let mut out = Vec::new();
    let mut current: Option<(ColdCandidate, bool)> = None;
    // `None` until the mapping's `Anonymous:` line is seen: one whose anonymous size cannot be
    // read is never dropped.
    let mut anonymous_kib: Option<u64> = None;
    let mut finish = |current: &mut Option<(ColdCandidate, bool)>, anonymous_kib: Option<u64>| {
        if let Some((m, eligible)) = current.take()
            && eligible
            && anonymous_kib == Some(0)
            && m.rss_kib > 0
        {
            out.push(m);
        }
    };
    for line in smaps.lines() {
        if let Some((range, eligible)) = mapping_header(line) {
            finish(&mut current, anonymous_kib);
            anonymous_kib = None;
            current = Some((
                ColdCandidate {
                    start: range.0,
                    end: range.1,
                    rss_kib: 0,
                },
                eligible,
            ));
        } else if let Some((key, kib)) = size_field(line) {
            match (key, current.as_mut()) {
                ("Rss", Some((m, _))) => m.rss_kib = kib,
                ("Anonymous", Some(_)) => anonymous_kib = Some(kib),
                _ => {}
            }
        }
    }
    finish(&mut current, anonymous_kib);
    out
}

/// `start-end perms offset dev inode path`: the range, and whether the mapping is a private,
/// non-writable mapping of a file by path.
fn mapping_header(line: &str) -> Option<((usize, usize), bool)> {
    let mut fields = line.split_ascii_whitespace();
    let range = fields.next()?;
    let perms = fields.next()?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = perms.as_bytes();
    if perms.len() != 4 || end <= start {
        return None;
    }
    let path = fields.nth(3);
    let eligible = perms[1] == b'-'
        && perms[3] == b'p'
        && path.is_some_and(|p| p.starts_with('/') && !line.ends_with(" (deleted)"));
    Some(((start, end), eligible))
}

/// `Key:   123 kB`.
fn size_field(line: &str) -> Option<(&str, u64)> {
    let (key, rest) = line.split_once(':')?;
    let kib = rest.trim().strip_suffix(" kB")?.trim().parse().ok()?;
    Some((key, kib))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
56485006f000-5648500d2000 r--p 00000000 fe:00 5308894                    /usr/bin/ctrlinit
Size:                396 kB
Rss:                 196 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
5648500d2000-56485020c000 r-xp 00062000 fe:00 5308894                    /usr/bin/ctrlinit
Size:               1256 kB
Rss:                1256 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
56485020c000-564850218000 r--p 0019c000 fe:00 5308894                    /usr/bin/ctrlinit
Size:                 48 kB
Rss:                  48 kB
Anonymous:            48 kB
VmFlags: rd mr mw me dw ac sd
564850218000-56485021a000 rw-p 001a7000 fe:00 5308894                    /usr/bin/ctrlinit
Size:                  8 kB
Rss:                   8 kB
Anonymous:             8 kB
VmFlags: rd wr mr mw me dw ac sd
56485021a000-56485023c000 rw-p 00000000 00:00 0                          [heap]
Size:                136 kB
Rss:                  40 kB
Anonymous:            40 kB
VmFlags: rd wr mr mw me ac sd
7f4fa66c0000-7f4fa6816000 r-xp 00026000 fe:00 326279                     /usr/lib/x86_64-linux-gnu/libc.so.6
Size:               1368 kB
Rss:                 960 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
7f4fa6900000-7f4fa6901000 r--s 00000000 00:05 12                         /dev/shm/x
Size:                  4 kB
Rss:                   4 kB
Anonymous:             0 kB
VmFlags: rd sh mr mw me ms sd
7f4fa6902000-7f4fa6904000 r--p 00000000 fe:00 99                         /tmp/gone (deleted)
Size:                  8 kB
Rss:                   8 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
7f4fa6905000-7f4fa6906000 r--p 00000000 fe:00 98                         /tmp/cold
Size:                  4 kB
Rss:                   0 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
7ffe88e8d000-7ffe88e8f000 r-xp 00000000 00:00 0                          [vdso]
Size:                  8 kB
Rss:                   4 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me de sd
";

    #[test]
    fn only_unmodified_read_only_private_file_mappings_are_dropped() {
        let got = droppable_mappings(SMAPS);
        let starts: Vec<usize> = got.iter().map(|m| m.start).collect();
        assert_eq!(
            starts,
            vec![0x56485006f000, 0x5648500d2000, 0x7f4fa66c0000],
            "{got:#x?}"
        );
        assert_eq!(got[1].end, 0x56485020c000);
        assert_eq!(got[1].rss_kib, 1256);
    }

    #[test]
    fn a_mapping_without_an_anonymous_line_is_kept() {
        let smaps = "\
00400000-00500000 r-xp 00000000 fe:00 1 /bin/x
Rss:  1024 kB
";
        // Without an `Anonymous:` line nothing proves the pages are the file's.
        assert!(droppable_mappings(smaps).is_empty());
    }

    #[test]
    fn releasing_keeps_the_process_working() {
        let before = std::hint::black_box(vec![1u8; 1 << 20]);
        let released = release_cold_memory();
        assert!(released.mappings > 0, "{released:?}");
        // Code and read-only data fault back in: formatting, allocation and the data survive.
        let after = format!("{}", before.iter().map(|&b| b as u64).sum::<u64>());
        assert_eq!(after, "1048576");
    }
}

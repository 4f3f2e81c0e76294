//! benchhelper: the workload programs of `benches/compare.py`, in one small static binary so that
//! no shell or interpreter start-up hides what the supervisors cost.
//!
//! Built by compare.py with plain `rustc` (std only, no crates): `rustc -O benchhelper.rs`.
//!
//! Subcommands:
//!   stamp FILE [--exit] [--on-term MARKER] [--ignore-term] [--notify FD]
//!       append the CLOCK_REALTIME nanoseconds to FILE (one line), then: exit (--exit), or wait
//!       forever; with --on-term, SIGTERM appends to MARKER and exits 0; with --ignore-term,
//!       SIGTERM is ignored; --notify FD writes "\n" to FD after the stamp (s6 readiness).
//!   lines N GOFILE STAMPFILE [--exit]
//!       wait until GOFILE exists, append the start time to STAMPFILE, write N numbered 100-byte
//!       lines to stdout in large writes, append the end time, then wait forever (or exit).
//!   orphans N READYFILE GOFILE
//!       leave N orphans (a child forks them and exits) that block on a pipe; append "N" to
//!       READYFILE; once GOFILE exists, append the time to READYFILE and close the pipe, so every
//!       orphan exits at once; then wait forever.
//!   floor N FILE
//!       N times: fork + exec `benchhelper stamp FILE --exit`, recording the time before the fork;
//!       prints the start latencies (ns) as one JSON list.
//!   execstamp FILE CMD ARGS...
//!       append the time to FILE, then exec CMD (marks "the init's exec" for the start workload).
//!   verify N FILE...
//!       check the files, concatenated, hold lines 0..N exactly once, in order, 100 bytes each;
//!       prints a JSON summary and exits 0 only when it is all there.
//!
//! Invoked as `run` (a symlink in an s6 or runit service directory), it reads its arguments from
//! `./bench-args`, one per line, so those supervisors exec it as directly as the others do.

use std::ffi::{CString, c_char, c_int, c_void};
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SIGTERM: c_int = 15;
const SIG_IGN: usize = 1;
const SIG_BLOCK: c_int = 0;
const PR_SET_NAME: c_int = 15;

unsafe extern "C" {
    fn fork() -> c_int;
    fn execv(path: *const c_char, argv: *const *const c_char) -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn pipe(fds: *mut c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn read(fd: c_int, buf: *mut c_void, n: usize) -> isize;
    fn write(fd: c_int, buf: *const c_void, n: usize) -> isize;
    fn _exit(code: c_int) -> !;
    fn pause() -> c_int;
    fn signal(sig: c_int, handler: usize) -> usize;
    fn sigemptyset(set: *mut SigSet) -> c_int;
    fn sigaddset(set: *mut SigSet, sig: c_int) -> c_int;
    fn sigprocmask(how: c_int, set: *const SigSet, old: *mut SigSet) -> c_int;
    fn sigwait(set: *const SigSet, sig: *mut c_int) -> c_int;
    fn prctl(option: c_int, arg2: usize, arg3: usize, arg4: usize, arg5: usize) -> c_int;
}

#[repr(C)]
struct SigSet([u64; 16]);

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn append(path: &str, text: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| die(&format!("cannot open {path}: {e}")));
    f.write_all(text.as_bytes())
        .unwrap_or_else(|e| die(&format!("cannot write {path}: {e}")));
}

fn die(msg: &str) -> ! {
    eprintln!("benchhelper: {msg}");
    std::process::exit(111)
}

fn wait_forever() -> ! {
    loop {
        unsafe { pause() };
    }
}

fn wait_for_file(path: &str) {
    while !std::path::Path::new(path).exists() {
        std::thread::sleep(Duration::from_micros(500));
    }
}

fn stamp(args: &[String]) {
    let file = args.first().unwrap_or_else(|| die("stamp FILE"));
    let mut exit = false;
    let mut on_term: Option<String> = None;
    let mut ignore = false;
    let mut notify: Option<c_int> = None;
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--exit" => exit = true,
            "--on-term" => on_term = it.next().cloned(),
            "--ignore-term" => ignore = true,
            "--notify" => notify = it.next().and_then(|s| s.parse().ok()),
            other => die(&format!("unknown stamp option {other}")),
        }
    }
    // Signal set-up first, so a TERM right after the stamp is never lost.
    let mut set = SigSet([0; 16]);
    if on_term.is_some() {
        unsafe {
            sigemptyset(&mut set);
            sigaddset(&mut set, SIGTERM);
            sigprocmask(SIG_BLOCK, &set, std::ptr::null_mut());
        }
    }
    if ignore {
        unsafe { signal(SIGTERM, SIG_IGN) };
    }
    append(file, &format!("{}\n", now_ns()));
    if let Some(fd) = notify {
        unsafe {
            write(fd, b"\n".as_ptr().cast(), 1);
            close(fd);
        }
    }
    if exit {
        std::process::exit(0);
    }
    if let Some(marker) = on_term {
        let mut sig: c_int = 0;
        unsafe { sigwait(&set, &mut sig) };
        append(&marker, &format!("{} {}\n", std::process::id(), now_ns()));
        std::process::exit(0);
    }
    wait_forever();
}

/// The payload after "NNNNNNNNNN " (10 digits and a space); 88 bytes plus '\n' make 100.
const PAYLOAD: &[u8; 88] =
    b"the quick brown fox jumps over the lazy dog; THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG";
const LINE: usize = 100;

fn lines(args: &[String]) {
    if args.len() < 3 {
        die("lines N GOFILE STAMPFILE [--exit]");
    }
    let n: u64 = args[0].parse().unwrap_or_else(|_| die("bad N"));
    let (go, stampfile) = (&args[1], &args[2]);
    let exit = args.get(3).is_some_and(|a| a == "--exit");
    wait_for_file(go);
    append(stampfile, &format!("start {}\n", now_ns()));

    const PER_CHUNK: usize = 1310; // 131,000 bytes per write
    let mut buf = vec![0u8; PER_CHUNK * LINE];
    for line in buf.chunks_exact_mut(LINE) {
        line[10] = b' ';
        line[11..99].copy_from_slice(PAYLOAD);
        line[99] = b'\n';
    }
    let mut digits = *b"0000000000";
    let mut i = 0u64;
    while i < n {
        let count = (n - i).min(PER_CHUNK as u64) as usize;
        for line in buf[..count * LINE].chunks_exact_mut(LINE) {
            line[..10].copy_from_slice(&digits);
            // Increment the decimal counter in place.
            for d in digits.iter_mut().rev() {
                if *d == b'9' {
                    *d = b'0';
                } else {
                    *d += 1;
                    break;
                }
            }
        }
        let mut out = &buf[..count * LINE];
        while !out.is_empty() {
            let w = unsafe { write(1, out.as_ptr().cast(), out.len()) };
            if w < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                die(&format!("write: {e}"));
            }
            out = &out[w as usize..];
        }
        i += count as u64;
    }
    append(stampfile, &format!("end {}\n", now_ns()));
    if exit {
        std::process::exit(0);
    }
    wait_forever();
}

fn orphans(args: &[String]) {
    if args.len() < 3 {
        die("orphans N READYFILE GOFILE");
    }
    let n: u64 = args[0].parse().unwrap_or_else(|_| die("bad N"));
    let (ready, go) = (&args[1], &args[2]);
    let mut fds = [0 as c_int; 2];
    if unsafe { pipe(fds.as_mut_ptr()) } != 0 {
        die("pipe failed");
    }
    let name = b"bh-orphan\0";
    let middle = unsafe { fork() };
    if middle < 0 {
        die("fork failed");
    }
    if middle == 0 {
        let mut made = 0u64;
        for _ in 0..n {
            let c = unsafe { fork() };
            if c < 0 {
                break;
            }
            if c == 0 {
                unsafe {
                    close(fds[1]);
                    prctl(PR_SET_NAME, name.as_ptr() as usize, 0, 0, 0);
                    let mut b = 0u8;
                    // Blocks until every write end is closed: then all exit together.
                    while read(fds[0], (&mut b as *mut u8).cast(), 1) > 0 {}
                    _exit(0);
                }
            }
            made += 1;
        }
        unsafe { _exit(if made == n { 0 } else { 1 }) };
    }
    let mut status: c_int = 0;
    unsafe { waitpid(middle, &mut status, 0) };
    unsafe { close(fds[0]) };
    append(ready, &format!("made {} status {}\n", n, status));
    wait_for_file(go);
    append(ready, &format!("go {}\n", now_ns()));
    unsafe { close(fds[1]) };
    wait_forever();
}

fn floor(args: &[String]) {
    if args.len() < 2 {
        die("floor N FILE");
    }
    let n: usize = args[0].parse().unwrap_or_else(|_| die("bad N"));
    let file = &args[1];
    let _ = std::fs::remove_file(file);
    let exe = std::env::current_exe().unwrap_or_else(|e| die(&format!("current_exe: {e}")));
    let exe_c = CString::new(exe.as_os_str().as_bytes()).unwrap();
    let argv_c: Vec<CString> = ["benchhelper", "stamp", file.as_str(), "--exit"]
        .iter()
        .map(|s| CString::new(*s).unwrap())
        .collect();
    let mut argv: Vec<*const c_char> = argv_c.iter().map(|c| c.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut starts = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = now_ns();
        let pid = unsafe { fork() };
        if pid == 0 {
            unsafe {
                execv(exe_c.as_ptr(), argv.as_ptr());
                _exit(127);
            }
        }
        let mut status = 0;
        unsafe { waitpid(pid, &mut status, 0) };
        starts.push(t0);
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let stamps: Vec<u128> = text.lines().filter_map(|l| l.parse().ok()).collect();
    let lat: Vec<String> = starts
        .iter()
        .zip(&stamps)
        .map(|(t0, s)| (s.saturating_sub(*t0)).to_string())
        .collect();
    println!("[{}]", lat.join(","));
}

fn verify(args: &[String]) {
    if args.is_empty() {
        die("verify N FILE...");
    }
    let n: u64 = args[0].parse().unwrap_or_else(|_| die("bad N"));
    let mut expected = 0u64;
    let (mut ok, mut missing, mut dups, mut malformed, mut total, mut bytes) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut line = Vec::with_capacity(256);
    for path in &args[1..] {
        let f = std::fs::File::open(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
        let mut r = BufReader::with_capacity(1 << 20, f);
        loop {
            line.clear();
            let got = r.read_until(b'\n', &mut line).unwrap_or(0);
            if got == 0 {
                break;
            }
            total += 1;
            bytes += got as u64;
            let num = if line.len() == LINE
                && line[99] == b'\n'
                && line[10] == b' '
                && &line[11..99] == PAYLOAD
                && line[..10].iter().all(u8::is_ascii_digit)
            {
                Some(
                    line[..10]
                        .iter()
                        .fold(0u64, |a, d| a * 10 + u64::from(d - b'0')),
                )
            } else {
                None
            };
            match num {
                None => malformed += 1,
                Some(k) if k == expected => {
                    ok += 1;
                    expected += 1;
                }
                Some(k) if k < expected => dups += 1,
                Some(k) => {
                    missing += k - expected;
                    ok += 1;
                    expected = k + 1;
                }
            }
        }
        let mut rest = Vec::new();
        let _ = r.read_to_end(&mut rest);
    }
    if expected < n {
        missing += n - expected;
    }
    let extra = expected.saturating_sub(n);
    let good = ok == n && missing == 0 && dups == 0 && malformed == 0 && extra == 0;
    println!(
        "{{\"expected\": {n}, \"lines\": {total}, \"bytes\": {bytes}, \"in_order\": {ok}, \"missing\": {missing}, \"duplicates_or_reordered\": {dups}, \"malformed\": {malformed}, \"extra\": {extra}, \"ok\": {good}}}"
    );
    std::process::exit(if good { 0 } else { 1 });
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let argv0 = std::path::Path::new(&args[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if argv0 == "run" {
        let text = std::fs::read_to_string("bench-args")
            .unwrap_or_else(|e| die(&format!("./bench-args: {e}")));
        args = std::iter::once(argv0)
            .chain(text.lines().map(str::to_string))
            .collect();
    }
    let Some(cmd) = args.get(1).cloned() else {
        die("usage: benchhelper stamp|lines|orphans|floor|verify|execstamp ...");
    };
    let rest = &args[2..];
    match cmd.as_str() {
        "stamp" => stamp(rest),
        "lines" => lines(rest),
        "orphans" => orphans(rest),
        "floor" => floor(rest),
        "verify" => verify(rest),
        "execstamp" => {
            use std::os::unix::process::CommandExt;
            if rest.len() < 2 {
                die("execstamp FILE CMD ARGS...");
            }
            append(&rest[0], &format!("{}\n", now_ns()));
            let e = std::process::Command::new(&rest[1]).args(&rest[2..]).exec();
            die(&format!("exec {}: {e}", rest[1]));
        }
        other => die(&format!("unknown subcommand {other}")),
    }
}

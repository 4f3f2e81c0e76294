//! What `top` reads of processes itself, from `/proc`: each listed pid's CPU time and resident
//! memory, the init's start time, and whether the init's pids are this client's. Read by the
//! client on its own thread, never by the init: `top` costs PID 1 one `status` a second.

use std::path::Path;

use super::figures::{ProcSample, Samples};
use crate::model::protocol::ProgramStatus;
use crate::sys::files::read_regular;

/// `/proc/PID/stat` and `statm` are a line each; a `comm` is at most 16 bytes.
const PROC_FILE_CAP: u64 = 4096;

/// Clock ticks per second (`USER_HZ`), the unit of `/proc/PID/stat`'s times.
pub fn clock_hz() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|v| *v > 0)
        .map_or(100, |v| v as u64)
}

fn page_size() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .filter(|v| *v > 0)
        .map_or(4096, |v| v as u64)
}

fn read_text(path: &str) -> Option<String> {
    let bytes = read_regular(Path::new(path), PROC_FILE_CAP).ok()?;
    String::from_utf8(bytes).ok()
}

/// Seconds since the machine booted, in ticks (`/proc/uptime`).
fn now_ticks(hz: u64) -> Option<u64> {
    uptime_ticks(read_text("/proc/uptime")?.split_whitespace().next()?, hz)
}

/// `/proc/uptime`'s `SECONDS.CC` in ticks, in integers: through a float, `9000.05` is
/// `900004.99…` ticks, one tick before a process started in that same hundredth of a second.
fn uptime_ticks(text: &str, hz: u64) -> Option<u64> {
    let (secs, frac) = text.split_once('.').unwrap_or((text, "0"));
    let secs: u64 = secs.parse().ok()?;
    let digits = frac.len().min(9) as u32;
    let frac: u64 = frac.get(..digits as usize)?.parse().ok()?;
    Some(secs * hz + frac * hz / 10u64.pow(digits))
}

/// The fields of a `/proc/PID/stat` line after the command name (which may hold spaces and
/// parentheses, so the line is cut at its last `)`): index 0 is field 3, the state.
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().collect())
}

/// One process's sample: `utime + stime` and `starttime` from stat, resident pages from statm.
pub fn parse_sample(stat: &str, statm: &str, page: u64) -> Option<ProcSample> {
    let f = stat_fields(stat)?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let start: u64 = f.get(19)?.parse().ok()?;
    let resident: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(ProcSample {
        start,
        ticks: utime + stime,
        rss: resident * page,
    })
}

fn read_sample(pid: i32, page: u64) -> Option<ProcSample> {
    let stat = read_text(&format!("/proc/{pid}/stat"))?;
    let statm = read_text(&format!("/proc/{pid}/statm"))?;
    parse_sample(&stat, &statm, page)
}

/// Whether the process `pid` (as this client sees it) lives in this client's PID namespace:
/// its `NSpid` line has one number. Otherwise the pids it reports are not this client's.
pub fn same_namespace(pid: i32) -> bool {
    read_text(&format!("/proc/{pid}/status")).is_some_and(|s| nspid_is_one(&s))
}

/// Whether a `/proc/PID/status` text's `NSpid:` line has exactly one pid.
pub fn nspid_is_one(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .is_some_and(|v| v.split_whitespace().count() == 1)
}

/// What a refresh reads: every listed pid's sample (when the init's pids are this client's),
/// and how long the init (`init_pid`, as this client sees it) has run, in milliseconds.
pub fn sample(
    programs: &[ProgramStatus],
    init_pid: Option<i32>,
    hz: u64,
) -> (Samples, Option<u64>) {
    let now = now_ticks(hz).unwrap_or(0);
    let init_uptime = init_pid.and_then(|pid| {
        let stat = read_text(&format!("/proc/{pid}/stat"))?;
        let start: u64 = stat_fields(&stat)?.get(19)?.parse().ok()?;
        Some(now.saturating_sub(start) * 1000 / hz)
    });
    let usable = init_pid.is_some_and(same_namespace);
    let mut samples = Samples {
        now_ticks: now,
        usable,
        ..Samples::default()
    };
    if usable {
        let page = page_size();
        for pid in programs.iter().flat_map(|p| p.pids.iter()) {
            if let Some(s) = read_sample(*pid, page) {
                samples.by_pid.insert(*pid, s);
            }
        }
    }
    (samples, init_uptime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let stat = "42 (my (odd) prog) S 1 42 42 0 -1 4194560 100 0 0 0 \
                    7 3 0 0 20 0 1 0 5000 12345678 300 18446744073709551615";
        let s = parse_sample(stat, "3000 300 100 1 0 200 0", 4096).unwrap();
        assert_eq!(
            s,
            ProcSample {
                start: 5000,
                ticks: 10,
                rss: 300 * 4096
            }
        );
        assert_eq!(parse_sample("42 (x) S 1", "1 2", 4096), None);
    }

    #[test]
    fn uptime_is_read_in_whole_ticks() {
        assert_eq!(uptime_ticks("9000.05", 100), Some(900_005));
        assert_eq!(uptime_ticks("12.5", 100), Some(1_250));
        assert_eq!(uptime_ticks("7", 100), Some(700));
        assert_eq!(uptime_ticks("x.1", 100), None);
    }

    #[test]
    fn this_process_is_sampled_and_in_its_own_namespace() {
        let me = std::process::id() as i32;
        assert!(same_namespace(me));
        assert!(nspid_is_one("Name:\tx\nNSpid:\t42\n"));
        assert!(!nspid_is_one("Name:\tx\nNSpid:\t4242\t1\n"));
        let hz = clock_hz();
        let s = read_sample(me, page_size()).unwrap();
        assert!(s.rss > 0);
        assert!(s.start <= now_ticks(hz).unwrap());
    }
}

//! CPU % and memory per program, computed on the client from samples of its processes (what
//! `/proc/PID/stat` and `/proc/PID/statm` say of each pid `status` lists), so the init does no
//! per-process reading for `top`. Pure: the samples and the clock are given, which makes the
//! arithmetic testable with made-up numbers.

use std::collections::HashMap;

use crate::model::protocol::ProgramStatus;

/// One process as sampled: its start time and CPU time in clock ticks, its resident memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcSample {
    /// When it started, in ticks since the machine booted (`starttime`): with the pid, tells a
    /// process from a later one that got the same pid.
    pub start: u64,
    /// User and system CPU time, in ticks (`utime + stime`).
    pub ticks: u64,
    /// Resident memory in bytes (`statm`'s resident pages times the page size).
    pub rss: u64,
}

/// One refresh's samples: every process read, and the clock, in ticks since boot.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    /// By pid (as `status` gives them); a pid that could not be read is absent.
    pub by_pid: HashMap<i32, ProcSample>,
    /// The time of the sampling, in ticks since the machine booted.
    pub now_ticks: u64,
    /// Whether the pids are this client's: false when the init lives in another PID
    /// namespace (a client on the host), where `/proc/PID` would be some other process.
    pub usable: bool,
}

/// What a row shows of a program's use.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    /// Percent of one CPU (200 for two busy cores), `None` when it cannot be told.
    pub cpu_percent: Option<f64>,
    /// Resident bytes, `None` when it cannot be told.
    pub memory_bytes: Option<u64>,
}

/// What the previous refresh saw, for the deltas.
#[derive(Debug, Default)]
pub struct Sampler {
    /// Each process's CPU ticks at the previous refresh, by (pid, start).
    prev: HashMap<(i32, u64), u64>,
    /// The previous refresh's clock, in ticks; `None` before the first.
    prev_now: Option<u64>,
    /// Each program's cgroup CPU time at the previous refresh (`cpu_usec`), by name.
    prev_cgroup: HashMap<String, u64>,
}

impl Sampler {
    /// Each program's figures from this refresh's `samples`. CPU % is the CPU time used since
    /// the previous refresh over the time between them; at the first refresh (and for `--once`)
    /// it is each process's CPU time over its lifetime, as `ps` shows it. Memory is the sum of
    /// its processes' resident sets. Where the processes cannot be read (another PID namespace,
    /// or none listed), the status's cgroup figures (`memory_bytes`, `cpu_usec`) are used when
    /// present.
    pub fn figures(
        &mut self,
        programs: &[ProgramStatus],
        samples: &Samples,
        hz: u64,
    ) -> HashMap<String, Figures> {
        let elapsed = self.prev_now.map(|p| samples.now_ticks.saturating_sub(p));
        let mut out = HashMap::new();
        let mut next = HashMap::new();
        for p in programs {
            let mut f = Figures::default();
            if samples.usable {
                f = self.of_processes(p, samples, elapsed, &mut next);
            }
            if f.memory_bytes.is_none() {
                f.memory_bytes = p.memory_bytes;
            }
            if f.cpu_percent.is_none()
                && let (Some(usec), Some(elapsed)) = (p.cpu_usec, elapsed)
                && let Some(prev) = self.prev_cgroup.get(&p.name)
                && elapsed > 0
            {
                let secs = elapsed as f64 / hz as f64;
                f.cpu_percent = Some(usec.saturating_sub(*prev) as f64 / 1e6 / secs * 100.0);
            }
            out.insert(p.name.clone(), f);
        }
        self.prev = next;
        self.prev_now = Some(samples.now_ticks);
        self.prev_cgroup = programs
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.cpu_usec?)))
            .collect();
        out
    }

    /// A program's figures from its processes' samples; records them in `next` for the next
    /// delta.
    fn of_processes(
        &self,
        p: &ProgramStatus,
        samples: &Samples,
        elapsed: Option<u64>,
        next: &mut HashMap<(i32, u64), u64>,
    ) -> Figures {
        let seen: Vec<(i32, ProcSample)> = p
            .pids
            .iter()
            .filter_map(|pid| Some((*pid, *samples.by_pid.get(pid)?)))
            .collect();
        if seen.is_empty() {
            return Figures::default();
        }
        let mut used = 0.0;
        let mut rss = 0;
        for (pid, s) in &seen {
            next.insert((*pid, s.start), s.ticks);
            rss += s.rss;
            used += match elapsed {
                // A process not seen last time started since: all its time is in the interval.
                Some(e) if e > 0 => {
                    let before = self.prev.get(&(*pid, s.start)).copied().unwrap_or(0);
                    s.ticks.saturating_sub(before) as f64 / e as f64
                }
                _ => {
                    let lifetime = samples.now_ticks.saturating_sub(s.start).max(1);
                    s.ticks as f64 / lifetime as f64
                }
            };
        }
        Figures {
            cpu_percent: Some(used * 100.0),
            memory_bytes: Some(rss),
        }
    }
}

/// `12.5` for a CPU percentage (`-` when unknown).
pub fn cpu_text(f: &Figures) -> String {
    f.cpu_percent.map_or("-".into(), |c| format!("{c:.1}"))
}

/// `812K`, `14.2M`, `1.3G` for a byte count (`-` when unknown).
pub fn memory_text(f: &Figures) -> String {
    let Some(b) = f.memory_bytes else {
        return "-".into();
    };
    const K: f64 = 1024.0;
    let b = b as f64;
    if b < K * K {
        format!("{:.0}K", b / K)
    } else if b < K * K * K {
        format!("{:.1}M", b / K / K)
    } else {
        format!("{:.1}G", b / K / K / K)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::top::model::tests::program;

    fn samples(now: u64, procs: &[(i32, u64, u64, u64)]) -> Samples {
        Samples {
            by_pid: procs
                .iter()
                .map(|&(pid, start, ticks, rss)| (pid, ProcSample { start, ticks, rss }))
                .collect(),
            now_ticks: now,
            usable: true,
        }
    }

    #[test]
    fn cpu_is_the_delta_over_the_interval_summed_over_a_programs_processes() {
        let mut api = program("api", crate::model::State::Running);
        api.pids = vec![10, 11];
        let mut s = Sampler::default();
        // First refresh: lifetime averages (ps-style): 50 ticks over 100, 10 over 100.
        let f = s.figures(
            &[api.clone()],
            &samples(1000, &[(10, 900, 50, 4096), (11, 900, 10, 8192)]),
            100,
        );
        assert_eq!(f["api"].memory_bytes, Some(12288));
        assert!((f["api"].cpu_percent.unwrap() - 60.0).abs() < 1e-9);
        // 100 ticks later: pid 10 used 100 (a whole CPU), pid 11 nothing.
        let f = s.figures(
            &[api.clone()],
            &samples(1100, &[(10, 900, 150, 4096), (11, 900, 10, 8192)]),
            100,
        );
        assert!((f["api"].cpu_percent.unwrap() - 100.0).abs() < 1e-9);
        // pid 11 is a new process now (same pid, later start): all its ticks are new.
        let f = s.figures(
            &[api],
            &samples(1200, &[(10, 900, 150, 4096), (11, 1150, 20, 8192)]),
            100,
        );
        assert!((f["api"].cpu_percent.unwrap() - 20.0).abs() < 1e-9);
    }

    #[test]
    fn without_readable_processes_the_cgroup_figures_are_used() {
        let mut db = program("db", crate::model::State::Running);
        db.pids = vec![7];
        db.memory_bytes = Some(3 << 20);
        db.cpu_usec = Some(1_000_000);
        let mut s = Sampler::default();
        let mut foreign = samples(1000, &[(7, 1, 1, 1)]);
        foreign.usable = false;
        let f = s.figures(&[db.clone()], &foreign, 100);
        assert_eq!(f["db"].memory_bytes, Some(3 << 20));
        assert_eq!(f["db"].cpu_percent, None, "no delta yet");
        db.cpu_usec = Some(1_500_000);
        foreign.now_ticks = 1100; // one second later
        let f = s.figures(&[db], &foreign, 100);
        assert!((f["db"].cpu_percent.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(memory_text(&f["db"]), "3.0M");
    }

    #[test]
    fn a_program_without_processes_shows_no_figures() {
        let stopped = program("w", crate::model::State::Stopped);
        let f = Sampler::default().figures(&[stopped], &samples(10, &[]), 100);
        assert_eq!(cpu_text(&f["w"]), "-");
        assert_eq!(memory_text(&f["w"]), "-");
    }
}

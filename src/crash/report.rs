//! Crash reports: `<crash_dir>/<program>/<UTC time>-<pid>-<SIGNAME>.json` with the last lines of
//! output, and the core moved next to it when the kernel wrote one where ctrlinit can see it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::pattern::{CorePattern, claim_core};
use super::retention::{cap_total, retain};
use crate::config::names::valid_name;
use crate::model::Exit;
use crate::model::signals::signal_name;
use crate::sys::files::{create_dir_with_mode, create_private_new, dir_mode};

/// How long a report waits for the crashed run's pipes to drain (a grandchild may hold them).
pub const DRAIN_WAIT: Duration = Duration::from_millis(500);

/// How long a report waits before doing its file work, so it never competes with the restart.
pub const REPORT_DELAY: Duration = Duration::from_millis(20);

/// Lines of output a report carries.
pub const REPORT_LINES: usize = 50;

/// What the supervisor knows of a crash.
#[derive(Debug, Clone)]
pub struct CrashInfo {
    /// Program name.
    pub program: String,
    /// The crashed main process.
    pub pid: i32,
    /// Its run (to wait for its pipes).
    pub run: u64,
    /// The command it ran (argv).
    pub command: Vec<String>,
    /// How it ended.
    pub exit: Exit,
    /// How long it ran.
    pub uptime: Duration,
    /// Restarts made by policy so far.
    pub restarts: u64,
    /// Working directory it ran in.
    pub cwd: PathBuf,
    /// Whether cores were enabled for it.
    pub core_dumps: bool,
    /// Cores kept for the program.
    pub max_cores: u32,
    /// Reports kept for the program.
    pub max_reports: u32,
    /// The OOM killer took it (its SIGKILL came with a kill in the cgroup's count).
    pub oom_killed: bool,
    /// ctrlinit stopped it for going past a limit: `memory 1.21 GiB over 1 GiB`.
    pub limit: Option<String>,
    /// When it ended.
    pub at: SystemTime,
    /// The core, set aside at reap time: (where it is now, where the kernel wrote it).
    pub claimed_core: Option<(PathBuf, PathBuf)>,
}

/// Where a report and its core went.
#[derive(Debug, Clone)]
pub struct Written {
    /// The JSON report.
    pub report: PathBuf,
    /// The core file, when one was collected.
    pub core: Option<PathBuf>,
}

#[derive(Serialize)]
struct Report<'a> {
    program: &'a str,
    pid: i32,
    command: &'a [String],
    time: String,
    signal: Option<String>,
    signal_number: Option<i32>,
    exit_status: i32,
    core_dumped: bool,
    oom_killed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<&'a str>,
    cause: String,
    uptime_ms: u128,
    restarts: u64,
    core: Option<String>,
    core_note: String,
    last_lines: &'a [String],
}

/// Writes the report, collects the core, applies retention.
pub fn write_report(
    crash_dir: &Path,
    info: &CrashInfo,
    last_lines: &[String],
    max_total: u64,
    mode: u32,
) -> io::Result<Written> {
    // The name becomes a directory: never `..`, never a path (the config checks it; so does
    // this, which writes and deletes files).
    if !valid_name(&info.program) {
        return Err(io::Error::other("not a valid program name for a directory"));
    }
    let dir = crash_dir.join(&info.program);
    create_dir_with_mode(&dir, dir_mode(mode))?;
    if !std::fs::symlink_metadata(&dir)?.file_type().is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory (a symbolic link?); nothing is written through it",
            dir.display()
        )));
    }
    let time = humantime::format_rfc3339_millis(info.at).to_string();
    // Colons are awkward in file names (and on some host file systems): 20261130T142329.123Z.
    let stamp = time.replace([':', '-'], "");
    let sig = info
        .exit
        .signal()
        .map_or_else(|| "EXIT".into(), signal_name);
    let base = format!("{stamp}-{}-{sig}", info.pid);
    let core_dumped = matches!(
        info.exit,
        Exit::Signal {
            core_dumped: true,
            ..
        }
    );
    let pattern = CorePattern::read();
    let (core, core_note) = collect_core(
        &pattern,
        info,
        core_dumped,
        &dir.join(format!("{base}.core")),
    );
    if let Some(core) = &core {
        // A core is the process's memory (secrets included): as private as the report.
        private_mode(core, mode)?;
    }
    let (core, core_note) = keep_core(&dir, crash_dir, info, max_total, core, core_note);
    let report = Report {
        program: &info.program,
        pid: info.pid,
        command: &info.command,
        time,
        signal: info.exit.signal().map(signal_name),
        signal_number: info.exit.signal(),
        exit_status: info.exit.shell_code(),
        core_dumped,
        oom_killed: info.oom_killed,
        limit: info.limit.as_deref(),
        cause: cause_of(info),
        uptime_ms: info.uptime.as_millis(),
        restarts: info.restarts,
        core: core.as_ref().map(|p| p.display().to_string()),
        core_note,
        last_lines,
    };
    let path = dir.join(format!("{base}.json"));
    let json = serde_json::to_vec_pretty(&report).map_err(io::Error::other)?;
    publish(&dir, &base, &path, &json, mode)?;
    retain(&dir, "json", info.max_reports as usize);
    cap_total(crash_dir, max_total);
    Ok(Written { report: path, core })
}

/// Writes a report under a hidden name, then links it into place: whoever watches the crash
/// directory (a collector on the host, `tail`, a test) sees no report or a whole one, never a
/// half-written one (seen under load). The link, unlike a rename, fails rather than replace a
/// report that already has the name, as creating it in place did.
fn publish(dir: &Path, base: &str, path: &Path, json: &[u8], mode: u32) -> io::Result<()> {
    let partial = &dir.join(format!(".{base}.json.partial"));
    // A leftover of a ctrlinit killed mid-write: never a report, safe to drop.
    let _ = std::fs::remove_file(partial);
    let written = create_private_new(partial, mode).and_then(|mut f| f.write_all(json));
    let linked = written.and_then(|()| std::fs::hard_link(partial, path));
    let _ = std::fs::remove_file(partial);
    linked
}

/// What ended the run, in words: its exit, the OOM killer, or ctrlinit for a limit.
fn cause_of(info: &CrashInfo) -> String {
    if let Some(limit) = &info.limit {
        format!(
            "over its limit: {limit}; stopped by ctrlinit ({})",
            info.exit
        )
    } else if info.oom_killed {
        format!("{}: killed by the OOM killer", info.exit)
    } else {
        info.exit.to_string()
    }
}

/// Applies the core limits before the report is written, so that the report never points at a
/// core that retention removed at once (`max_cores = 0`, or a core over the total size cap).
fn keep_core(
    dir: &Path,
    crash_dir: &Path,
    info: &CrashInfo,
    max_total: u64,
    core: Option<PathBuf>,
    note: String,
) -> (Option<PathBuf>, String) {
    let Some(path) = core else {
        return (None, note);
    };
    retain(dir, "core", info.max_cores as usize);
    cap_total(crash_dir, max_total);
    if path.exists() {
        (Some(path), note)
    } else {
        let why = "removed at once to respect max_cores / crash_max_size";
        (None, format!("{note}; {why}"))
    }
}

fn collect_core(
    pattern: &CorePattern,
    info: &CrashInfo,
    dumped: bool,
    dest: &Path,
) -> (Option<PathBuf>, String) {
    if !dumped {
        let why = if info.core_dumps {
            "no core was dumped"
        } else {
            "core dumps are off for this program (core_dumps = false)"
        };
        return (None, why.into());
    }
    if let CorePattern::Pipe(cmd) = pattern {
        return (None, format!("the core went to the host's handler: {cmd}"));
    }
    let claimed = info
        .claimed_core
        .clone()
        .or_else(|| claim_core(pattern, info.pid, &info.command, &info.cwd));
    if let Some((held, original)) = claimed
        && move_file(&held, dest).is_ok()
    {
        return (
            Some(dest.to_path_buf()),
            format!("moved from {}", original.display()),
        );
    }
    (
        None,
        "a core was dumped but not found where core_pattern says".into(),
    )
}

/// Sets `mode` on the file at `path` through a descriptor that did not follow a link.
fn private_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// Renames, or copies and removes across file systems.
fn move_file(src: &Path, dest: &Path) -> io::Result<()> {
    if std::fs::rename(src, dest).is_ok() {
        return Ok(());
    }
    std::fs::copy(src, dest)?;
    std::fs::remove_file(src)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::retention::files_with_ext;

    fn info(dir: &Path, pid: i32, secs: u64) -> CrashInfo {
        CrashInfo {
            program: "api".into(),
            pid,
            run: 1,
            command: vec!["/bin/api".into()],
            exit: Exit::Signal {
                sig: 11,
                core_dumped: false,
            },
            uptime: Duration::from_millis(1500),
            restarts: 2,
            cwd: dir.to_path_buf(),
            core_dumps: false,
            max_cores: 3,
            max_reports: 2,
            oom_killed: false,
            limit: None,
            claimed_core: None,
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs + 2_000_000),
        }
    }

    #[test]
    fn reports_are_written_and_retention_holds() {
        let dir = tempfile::tempdir().unwrap();
        let lines = vec!["| last words".to_string()];
        for i in 0..4 {
            write_report(
                dir.path(),
                &info(dir.path(), 100 + i, i as u64),
                &lines,
                u64::MAX,
                0o640,
            )
            .unwrap();
        }
        let mut reports = files_with_ext(&dir.path().join("api"), "json");
        reports.sort();
        assert_eq!(reports.len(), 2, "max_reports = 2");
        let name = reports[1]
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        assert!(name.ends_with("-103-SIGSEGV.json"), "{name}");
        assert_eq!(&name[8..9], "T", "{name}");
        assert!(name[..20].ends_with(".000Z"), "{name}");
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&reports[1]).unwrap()).unwrap();
        assert_eq!(v["signal"], "SIGSEGV");
        assert_eq!(v["exit_status"], 139);
        assert_eq!(v["last_lines"][0], "| last words");
        assert_eq!(v["core"], serde_json::Value::Null);
    }

    #[test]
    fn the_total_size_cap_removes_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let big = vec!["x".repeat(2000)];
        for i in 0..5 {
            let mut inf = info(dir.path(), 200 + i, i as u64);
            inf.max_reports = 100;
            write_report(dir.path(), &inf, &big, 5000, 0o640).unwrap();
        }
        let total: u64 = files_with_ext(&dir.path().join("api"), "json")
            .iter()
            .map(|p| p.metadata().unwrap().len())
            .sum();
        assert!(total <= 5000, "total {total}");
        assert!(!files_with_ext(&dir.path().join("api"), "json").is_empty());
    }
}

//! A program's output: supervisord's `stdout_logfile`/`stderr_logfile` (and their sizes,
//! backups, syslog flags, `redirect_stderr`) as ctrlinit's `[program.NAME.log]` table. ctrlinit
//! has one console switch and one file switch for both streams, writes its files in `log_dir`
//! under the program's name, and always rotates them; whatever that changes is said.

use std::path::{Path, PathBuf};

use super::datatypes::LogTarget;
use super::report::Note;
use super::toml_out::{Table, Val};

/// supervisord's defaults for `*_logfile_maxbytes` and `*_logfile_backups`.
pub const DEFAULT_MAX_BYTES: u64 = 50 << 20;
/// See [`DEFAULT_MAX_BYTES`].
pub const DEFAULT_BACKUPS: i64 = 10;

/// ctrlinit's smallest `max_size`.
const MIN_SIZE: u64 = 4096;

/// One stream's settings as supervisord read them.
#[derive(Debug, Clone)]
pub struct Stream {
    /// `stdout` or `stderr`.
    pub name: &'static str,
    /// Where its lines go.
    pub target: LogTarget,
    /// Where `*_logfile` was set, if it was.
    pub at: Option<(PathBuf, usize)>,
    /// `*_logfile_maxbytes`.
    pub max_bytes: u64,
    /// `*_logfile_backups`.
    pub backups: i64,
    /// `*_syslog = true`, and where.
    pub syslog: Option<(PathBuf, usize)>,
}

impl Stream {
    fn to_file(&self) -> bool {
        matches!(self.target, LogTarget::Auto | LogTarget::File(_))
    }
    fn to_console(&self) -> bool {
        self.target == LogTarget::Console
    }
}

/// The `[program.NAME.log]` table for `stdout` and `stderr`, and what it does not carry.
///
/// `log_dir` is `[init] log_dir` when known: a file supervisord wrote where ctrlinit writes
/// (`<log_dir>/NAME.log`) needs no note.
pub fn log_table(
    label: &str,
    name: &str,
    stdout: &Stream,
    stderr: &Stream,
    redirect: bool,
    section_at: &(PathBuf, usize),
    log_dir: Option<&str>,
) -> (Table, Vec<Note>) {
    // Both streams into one file is what ctrlinit's merge does.
    let same_file = matches!((&stdout.target, &stderr.target), (LogTarget::File(a), LogTarget::File(b)) if a == b);
    let redirect = redirect || same_file;
    let out = Output {
        label,
        name,
        stdout,
        stderr,
        redirect,
        separate: !redirect && stdout.to_file() && stderr.to_file(),
        section_at,
    };
    let mut notes = Vec::new();
    let mut t = Table::new(&["program", name, "log"]);
    let file = out.switches(&mut t);
    out.note_places(log_dir, &mut notes);
    out.note_split_streams(&mut notes);
    if file {
        out.rotation(&mut t, &mut notes);
    }
    (t, notes)
}

/// A program's two streams, as ctrlinit will write them.
struct Output<'a> {
    label: &'a str,
    name: &'a str,
    stdout: &'a Stream,
    stderr: &'a Stream,
    /// stderr goes with stdout (`redirect_stderr`, or both in one file).
    redirect: bool,
    /// Both streams in files of their own.
    separate: bool,
    section_at: &'a (PathBuf, usize),
}

impl Output<'_> {
    /// Where a note about `s` points: its `*_logfile`, else the section.
    fn note_at(&self, s: &Stream) -> (PathBuf, usize) {
        s.at.clone().unwrap_or_else(|| self.section_at.clone())
    }

    /// `console`, `file` and `stderr`; whether anything goes to a file.
    fn switches(&self, t: &mut Table) -> bool {
        let (stdout, stderr, redirect) = (self.stdout, self.stderr, self.redirect);
        let console = stdout.to_console() || (!redirect && stderr.to_console());
        let file = stdout.to_file() || (!redirect && stderr.to_file());
        let console_why = match (redirect, stdout.to_console(), stderr.to_console()) {
            (true, true, _) => "stdout_logfile (with redirect_stderr) is the container's output",
            (_, true, true) => "stdout_logfile and stderr_logfile are the container's output",
            (_, true, false) => "stdout_logfile is the container's output",
            (_, false, true) => "stderr_logfile is the container's output",
            _ => "supervisord did not send its lines to its own output",
        };
        t.set_with("console", Val::Bool(console), console_why);
        t.set("file", Val::Bool(file));
        if self.separate {
            t.set_with(
                "stderr",
                Val::Str("separate".into()),
                &format!("stderr to a file of its own: {}.err.log", self.name),
            );
        }
        file
    }

    /// Files supervisord wrote elsewhere than ctrlinit will (said once for the program), and
    /// lines it sent to syslog.
    fn note_places(&self, log_dir: Option<&str>, notes: &mut Vec<Note>) {
        let label = self.label;
        let mut moved: Vec<String> = Vec::new();
        let mut moved_at = None;
        for s in [self.stdout, self.stderr] {
            if self.redirect && s.name == "stderr" {
                continue;
            }
            if let LogTarget::File(path) = &s.target {
                let ours = if s.name == "stderr" && self.separate {
                    format!("{}.err.log", self.name)
                } else {
                    format!("{}.log", self.name)
                };
                let same = log_dir.is_some_and(|d| Path::new(d).join(&ours) == Path::new(path));
                if !same {
                    moved.push(format!("{path} is <log_dir>/{ours}"));
                    moved_at.get_or_insert_with(|| self.note_at(s));
                }
            }
            if let Some((f, l)) = &s.syslog {
                notes.push(Note::at(
                    f,
                    *l,
                    format!("{label} {}_syslog", s.name),
                    "ctrlinit writes no syslog: the lines go to the console and files as set here",
                    "collect them from the container's output (docker logs) or from log_dir",
                ));
            }
            if s.target == LogTarget::Syslog {
                let (f, l) = self.note_at(s);
                notes.push(Note::at(
                    &f,
                    l,
                    format!("{label} {}_logfile", s.name),
                    "syslog: ctrlinit writes no syslog, so these lines are not kept",
                    "send them to the console: stdout_logfile=/dev/stdout, or keep files (log.file = true)",
                ));
            }
        }
        if let Some((f, l)) = moved_at {
            notes.push(Note::at(
                &f,
                l,
                format!("{label} stdout_logfile/stderr_logfile"),
                format!(
                    "ctrlinit names its log files after the program: {}",
                    moved.join(", ")
                ),
                "set [init] log_dir (or CTRLINIT_LOG_DIR) to the directory they should be in",
            ));
        }
    }

    /// Streams supervisord sent to different places: ctrlinit sends both to the same ones.
    fn note_split_streams(&self, notes: &mut Vec<Note>) {
        let (stdout, stderr) = (self.stdout, self.stderr);
        if self.redirect {
            return;
        }
        let (out_to, err_to) = (destination(stdout), destination(stderr));
        if out_to == err_to {
            return;
        }
        let (f, l) = self.note_at(if stderr.at.is_some() { stderr } else { stdout });
        let lost = if out_to == "nowhere" || err_to == "nowhere" {
            "the stream supervisord dropped is kept with the other".to_string()
        } else {
            format!(
                "ctrlinit sends both streams to the same places (stdout went to {out_to}, stderr to {err_to})"
            )
        };
        notes.push(Note::at(
            &f,
            l,
            format!("{} stdout_logfile/stderr_logfile", self.label),
            lost,
            "choose log.console and log.file for both; log.stderr = \"separate\" keeps stderr in a file of its own",
        ));
    }

    /// `max_size` and `keep`, from the stream that has a file (stdout's when both do).
    fn rotation(&self, t: &mut Table, notes: &mut Vec<Note>) {
        let (stdout, stderr, label) = (self.stdout, self.stderr, self.label);
        let main = if stdout.to_file() { stdout } else { stderr };
        let size = main.max_bytes;
        if size == 0 {
            let (f, l) = self.note_at(main);
            notes.push(Note::at(
                &f,
                l,
                format!("{label} {}_logfile_maxbytes", main.name),
                "0 (never rotate): ctrlinit always rotates, at max_size (10MiB unless set)",
                "set log.max_size to the size a file may reach",
            ));
        } else {
            let written = size.max(MIN_SIZE);
            if written != size {
                let (f, l) = self.note_at(main);
                notes.push(Note::at(
                    &f,
                    l,
                    format!("{label} {}_logfile_maxbytes", main.name),
                    format!("{size} bytes is below ctrlinit's smallest max_size; written as 4KiB"),
                    "",
                ));
            }
            t.set_with(
                "max_size",
                Val::Str(size_text(written)),
                &format!("{}_logfile_maxbytes (supervisord's MB are MiB)", main.name),
            );
        }
        t.set_with(
            "keep",
            Val::Int(main.backups.clamp(0, 999)),
            &format!("{}_logfile_backups", main.name),
        );
        if self.separate
            && (stdout.max_bytes != stderr.max_bytes || stdout.backups != stderr.backups)
        {
            let (f, l) = self.note_at(stderr);
            notes.push(Note::at(
                &f,
                l,
                format!("{label} stderr_logfile_maxbytes/backups"),
                "ctrlinit rotates both files with one max_size and keep: stdout's are used",
                "",
            ));
        }
    }
}

fn destination(s: &Stream) -> &'static str {
    match s.target {
        LogTarget::Console => "the console",
        LogTarget::Auto | LogTarget::File(_) => "a file",
        LogTarget::Nowhere | LogTarget::Syslog => "nowhere",
    }
}

/// A size as ctrlinit reads it: `50MiB`, `512KiB`, or bytes.
pub fn size_text(n: u64) -> String {
    if n.is_multiple_of(1 << 30) {
        format!("{}GiB", n >> 30)
    } else if n.is_multiple_of(1 << 20) {
        format!("{}MiB", n >> 20)
    } else if n.is_multiple_of(1 << 10) {
        format!("{}KiB", n >> 10)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_size;

    #[test]
    fn sizes_read_back_as_the_same_bytes() {
        for n in [50u64 << 20, 1 << 30, 10 << 10, 4096, 5000, 123_456_789] {
            assert_eq!(parse_size(&size_text(n)).unwrap(), n, "{}", size_text(n));
        }
    }
}

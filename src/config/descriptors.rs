//! What a configuration costs in open descriptors, and whether it fits under the descriptor
//! limit (`RLIMIT_NOFILE`) before anything starts: a config that cannot fit is refused with the
//! count, the limit and the fix, at start (exit 2) and at reload, instead of programs failing by
//! the hundred with `EMFILE` once most of them run.
//!
//! The count is an upper bound of what ctrlinit holds open at once for each program while it
//! runs (see [`program_cost`]), plus [`OWN`] for ctrlinit itself. Descriptors held only for the
//! moment of a spawn, a reload or a crash report come out of [`OWN`], since one happens at a time
//! on each thread. Control connections beyond [`OWN`]'s share are served while the limit has
//! room and refused (not fatal) when it has none.

use std::path::Path;

use super::spec::{Config, HealthProbe, ProgramSpec, ReadyProbe, StderrMode, StdioMode};
use super::{ConfigError, ConfigErrors};

/// What ctrlinit keeps for itself: its standard streams, own log file, event loops (an epoll
/// and a waker each), signalfd, the control and sd_notify sockets, cgroup handles, the
/// descriptors of one spawn, reload and crash report at a time (64); the control connections
/// kept for root and ctrlinit's user (64, as `api::slots::RESERVED`); the probe endpoint's
/// connections (32, as `api::http::MAX_CONNECTIONS`).
pub const OWN: u64 = 64 + 64 + 32;

/// One program's descriptors, by what holds them (for the error's explanation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Read ends of its output pipes (2; 1 with `stderr = "stdout"`; 0 with `stdio = "inherit"`).
    pub pipes: u64,
    /// Its open log files.
    pub files: u64,
    /// What its checks, hooks and adopted main process may hold while it runs.
    pub other: u64,
}

impl Cost {
    /// The total.
    pub fn total(&self) -> u64 {
        self.pipes + self.files + self.other
    }
}

/// The most descriptors ctrlinit holds open for `spec` while it runs: its output pipes' read
/// ends, its log files, the pipe of `ready = { fd }`,
/// a check's socket or pipe (readiness and liveness do not run at once), the output pipes of a
/// `pre_stop` or `finish` hook, and a pidfd for an adopted main process (`pidfile`, sd_notify's
/// `MAINPID=`). Its cgroup's `cgroup.events` is open only from its main process's exit until
/// the group is empty (see `sys::cgroup2::Group`), one at a time on a restart and out of
/// [`OWN`]'s share; at a container stop the output pipes of the programs that have ended are
/// closing as their groups are asked.
pub fn program_cost(spec: &ProgramSpec) -> Cost {
    let one_pipe = spec.log.stderr == StderrMode::Stdout;
    let pipes_per_process = if one_pipe { 1 } else { 2 };
    let pipes = match spec.stdio {
        StdioMode::Inherit => 0,
        StdioMode::Pipe => pipes_per_process,
    };
    let files = match (spec.log.file, spec.log.stderr) {
        (false, _) => 0,
        (true, StderrMode::Separate) => 2,
        (true, _) => 1,
    };
    let probe = spec.ready.as_ref().map(|r| &r.probe);
    let ready_fd = u64::from(matches!(probe, Some(ReadyProbe::Fd(_))));
    let ready_check = matches!(
        probe,
        Some(ReadyProbe::Tcp(_) | ReadyProbe::Http(_) | ReadyProbe::Exec(_))
    );
    let health_check = matches!(
        spec.health.as_ref().and_then(|h| h.check.as_ref()),
        Some(HealthProbe::Tcp(_) | HealthProbe::Http(_) | HealthProbe::Exec(_))
    );
    let check = u64::from(ready_check || health_check);
    let hooks = if spec.pre_stop.is_some() || spec.finish.is_some() {
        pipes_per_process
    } else {
        0
    };
    let adopted = u64::from(spec.pidfile.is_some() || spec.speaks_notify());
    Cost {
        pipes,
        files,
        other: ready_fd + check + hooks + adopted,
    }
}

/// Descriptors `config` needs at most: every program's cost and [`OWN`].
pub fn needed(config: &Config) -> u64 {
    OWN + config
        .programs
        .iter()
        .map(|p| program_cost(p).total())
        .sum::<u64>()
}

/// Checks that `config` fits under ctrlinit's descriptor limit (its soft limit, which it raised
/// to the hard one at start); `dir` is the config directory (where the error is said to be).
/// The error says how many are needed, the limit, and the fixes.
pub fn fit(config: &Config, dir: &Path) -> Result<(), ConfigErrors> {
    let need = needed(config);
    let (soft, hard) = crate::sys::nofile::limits();
    if need <= soft {
        return Ok(());
    }
    Err(ConfigErrors {
        errors: vec![too_many(config, need, (soft, hard), dir)],
        warnings: Vec::new(),
    })
}

/// The error for `config` needing `need` descriptors under the limits `(soft, hard)`.
fn too_many(config: &Config, need: u64, (soft, hard): (u64, u64), dir: &Path) -> ConfigError {
    let n = config.programs.len();
    let mut pipes = 0;
    let mut files = 0;
    let mut other = 0;
    for p in &config.programs {
        let c = program_cost(p);
        pipes += c.pipes;
        files += c.files;
        other += c.other;
    }
    let mut parts = vec![
        format!("{pipes} output pipes"),
        format!("{files} log files"),
    ];
    if other > 0 {
        parts.push(format!("{other} for checks, hooks and adopted processes"));
    }
    parts.push(format!("{OWN} for ctrlinit itself"));
    ConfigError {
        file: dir.to_path_buf(),
        line: None,
        key: String::new(),
        message: format!(
            "{n} program{} need up to {need} open descriptors ({}), but the descriptor limit (RLIMIT_NOFILE) is {soft} (hard limit {hard})",
            if n == 1 { "" } else { "s" },
            parts.join(", ")
        ),
        fix: Some(format!(
            "raise the limit to at least {need}: `docker run --ulimit nofile={need}` (compose: `ulimits: {{ nofile: {need} }}`), `ulimit -Hn {need}` in the shell that starts ctrlinit; or need fewer: `stderr = \"stdout\"` in a program's [program.NAME.log] gives it one pipe instead of two, `file = false` no log file"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::spec::Kind;

    fn spec() -> ProgramSpec {
        ProgramSpec::new("p", vec!["sleep".into(), "1".into()], Kind::Service)
    }

    #[test]
    fn a_default_program_costs_two_pipes_and_a_file() {
        let c = program_cost(&spec());
        assert_eq!((c.pipes, c.files, c.other), (2, 1, 0));
        assert_eq!(c.total(), 3);
    }

    #[test]
    fn stderr_on_stdout_costs_one_pipe_and_inherit_none() {
        let mut s = spec();
        s.log.stderr = StderrMode::Stdout;
        assert_eq!(program_cost(&s).pipes, 1);
        s.stdio = StdioMode::Inherit;
        s.log.file = false;
        assert_eq!(program_cost(&s).total(), 0);
    }

    #[test]
    fn separate_files_hooks_and_pid_files_count() {
        let mut s = spec();
        s.log.stderr = StderrMode::Separate;
        s.pre_stop = Some(vec!["true".into()]);
        s.pidfile = Some("/run/x.pid".into());
        let c = program_cost(&s);
        assert_eq!((c.pipes, c.files, c.other), (2, 2, 3));
    }
}

//! Starting processes for the supervisor: a program's run, its hooks, an exec check. Each gets
//! the program's environment, identity and limits; runs and hooks get their stdout and stderr
//! piped to the log thread, or a program with `stdio = "inherit"` gets ctrlinit's own streams
//! (and, with a terminal, its foreground). An exec that fails is a [`SpawnError`] at once (see
//! `process::spawn`), never a process that seemed to start.

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::OwnedFd;

use tokio::sync::mpsc::UnboundedSender;

use super::tracking::{RunTag, Tagger, own_marker};
use super::wiring::Wiring;

use crate::config::{ProgramSpec, StderrMode, StdioMode};
use crate::logs::{Command as LogCommand, Taps};
use crate::model::signals::signal_name;
use crate::model::{Exit, ProgramId};
use crate::process::{self, Grouping, Launch, Output, SpawnError};

/// Starts processes; owned by the runner, borrowed by the checks.
pub(crate) struct Launcher {
    logs: UnboundedSender<LogCommand>,
    /// Ties exec checks to their run's tracking.
    tagger: Tagger,
    /// Each live check's and hook's own marker, by its pid: what it leaves is ended with it.
    /// An entry goes when its process is reaped (see [`Launcher::ended`]).
    own: RefCell<HashMap<i32, String>>,
}

impl Launcher {
    /// A launcher whose piped output goes to the log thread behind `logs`, and whose exec
    /// checks join their run's tracking through `tagger`.
    pub(crate) fn new(logs: UnboundedSender<LogCommand>, tagger: Tagger) -> Self {
        Launcher {
            logs,
            tagger,
            own: RefCell::new(HashMap::new()),
        }
    }

    /// The own marker of check or hook `pid`, which was reaped (forgotten here).
    pub(crate) fn ended(&self, pid: i32) -> Option<String> {
        self.own.borrow_mut().remove(&pid)
    }

    /// `marker` made the own marker of the check or hook about to start; `start` starts it
    /// with that marker, which is kept by its pid.
    fn owned(
        &self,
        marker: (&'static str, String),
        start: impl FnOnce((&'static str, String)) -> Result<i32, SpawnError>,
    ) -> Result<i32, SpawnError> {
        let own = own_marker(&marker.1);
        let pid = start((marker.0, own.clone()))?;
        self.own.borrow_mut().insert(pid, own);
        Ok(pid)
    }

    /// Run `run` of `spec`'s program, with what `wiring` adds.
    pub(crate) fn program(
        &self,
        spec: &ProgramSpec,
        run: u64,
        wiring: Wiring,
    ) -> Result<i32, SpawnError> {
        let streams = Streams {
            core_dumps: Some(spec.core_dumps),
            fds: wiring.fds,
            signals_as_started: spec.passthrough,
            cgroup: wiring.cgroup,
            // The `--` command is a job of ctrlinit's session, as tini's child is.
            grouping: if spec.passthrough {
                Grouping::Group
            } else {
                Grouping::Session
            },
            ..Streams::default()
        };
        if spec.stdio == StdioMode::Inherit {
            let terminal = crate::sys::tty::stdin_is_terminal();
            let streams = Streams {
                outputs: (Output::Inherit, Output::Inherit),
                stdin_inherit: true,
                grouping: if terminal {
                    Grouping::Foreground
                } else {
                    streams.grouping
                },
                ..streams
            };
            return start(spec, &spec.command, &wiring.env, streams);
        }
        self.logged(
            spec,
            &spec.command,
            &wiring.env,
            Some(run),
            wiring.taps,
            streams,
        )
    }

    /// `spec`'s finish hook after a run that ended with `exit`: CTRLINIT_PROGRAM, and
    /// CTRLINIT_EXIT_CODE or CTRLINIT_EXIT_SIGNAL and CTRLINIT_EXIT_STATUS in its environment.
    /// Not in the run's tracking: the run is over, and the hook must not count as what is left
    /// of it (its stop would kill the hook). What it leaves in its own process group ends with
    /// it (see `runner::reaping`).
    pub(crate) fn finish(&self, spec: &ProgramSpec, exit: Option<Exit>) -> Result<i32, SpawnError> {
        let Some(argv) = &spec.finish else {
            return Err(setup_error("no finish hook is configured".into()));
        };
        let mut extra = vec![("CTRLINIT_PROGRAM", spec.name.clone())];
        match exit {
            Some(Exit::Code(c)) => extra.push(("CTRLINIT_EXIT_CODE", c.to_string())),
            Some(Exit::Signal { sig, .. }) => {
                extra.push(("CTRLINIT_EXIT_SIGNAL", signal_name(sig)))
            }
            None => {}
        }
        if let Some(e) = exit {
            extra.push(("CTRLINIT_EXIT_STATUS", e.shell_code().to_string()));
        }
        let streams = Streams::default();
        // A marker of no run: the hook is no part of the run's leftovers, yet what it leaves
        // can be found when it ends.
        let marker = (super::tracking::MARKER, self.tagger.no_run());
        self.owned(marker, |m| {
            extra.push(m);
            self.logged(spec, argv, &extra, None, Taps::default(), streams)
        })
    }

    /// `spec`'s `pre_stop` hook: CTRLINIT_PROGRAM and CTRLINIT_PID (its main process) in its
    /// environment, its output in the program's log; started in the run's tracking (`tag`),
    /// so the program's stop stops what it leaves.
    pub(crate) fn pre_stop(
        &self,
        spec: &ProgramSpec,
        main: i32,
        tag: RunTag,
    ) -> Result<i32, SpawnError> {
        let Some(argv) = &spec.pre_stop else {
            return Err(setup_error("no pre_stop hook is configured".into()));
        };
        let mut extra = vec![
            ("CTRLINIT_PROGRAM", spec.name.clone()),
            ("CTRLINIT_PID", main.to_string()),
        ];
        let streams = Streams {
            cgroup: tag.1,
            ..Streams::default()
        };
        self.owned(tag.0, |m| {
            extra.push(m);
            self.logged(spec, argv, &extra, None, Taps::default(), streams)
        })
    }

    /// An exec readiness check of `spec` running `argv` for run `run` of program `id` (in its
    /// tracking: the program's stop stops what the check leaves), its output discarded.
    pub(crate) fn check(
        &self,
        spec: &ProgramSpec,
        argv: &[String],
        (id, run): (ProgramId, u64),
    ) -> Result<i32, SpawnError> {
        let (marker, cgroup) = self.tagger.tag(&spec.name, id, run);
        let streams = Streams {
            outputs: (Output::Null, Output::Null),
            cgroup,
            ..Streams::default()
        };
        self.owned(marker, |m| start(spec, argv, &[m], streams))
    }

    /// An exec check that belongs to no program's run (an external dependency's): in a process
    /// group of its own, untracked (what it leaves in its group ends with it, at its reaping),
    /// its output discarded.
    pub(crate) fn untracked_check(
        &self,
        spec: &ProgramSpec,
        argv: &[String],
    ) -> Result<i32, SpawnError> {
        let streams = Streams {
            outputs: (Output::Null, Output::Null),
            ..Streams::default()
        };
        start(spec, argv, &[], streams)
    }

    /// An exec liveness check of `spec` running `argv` for run `run` of program `id` (in its
    /// tracking, as [`Launcher::check`]); its stdout and stderr go to one pipe, whose read end
    /// (non-blocking) is returned for the check's output.
    pub(crate) fn captured_check(
        &self,
        spec: &ProgramSpec,
        argv: &[String],
        (id, run): (ProgramId, u64),
    ) -> Result<(i32, OwnedFd), SpawnError> {
        let flags = nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK;
        let (read, write) = nix::unistd::pipe2(flags)
            .map_err(|e| setup_error(format!("failed to create a pipe: {e}")))?;
        let write2 = write
            .try_clone()
            .map_err(|e| setup_error(format!("failed to create a pipe: {e}")))?;
        // The program's end blocks as usual; only ctrlinit's end is non-blocking.
        let _ = nix::fcntl::fcntl(
            &write,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
        );
        let (marker, cgroup) = self.tagger.tag(&spec.name, id, run);
        let streams = Streams {
            outputs: (Output::Fd(write), Output::Fd(write2)),
            cgroup,
            ..Streams::default()
        };
        let pid = self.owned(marker, |m| start(spec, argv, &[m], streams))?;
        Ok((pid, read))
    }

    /// Starts `argv` with its stdout and stderr piped to the log thread (`run`: the program's
    /// run, for crash reports to wait on; `None` for a hook).
    fn logged(
        &self,
        spec: &ProgramSpec,
        argv: &[String],
        extra_env: &[(&str, String)],
        run: Option<u64>,
        taps: Taps,
        streams: Streams,
    ) -> Result<i32, SpawnError> {
        let one_pipe = spec.log.stderr == StderrMode::Stdout;
        let pipes = process::output_pipes(one_pipe)
            .map_err(|e| setup_error(format!("failed to create output pipes: {e}")))?;
        let streams = Streams {
            outputs: (Output::Fd(pipes.stdout_w), Output::Fd(pipes.stderr_w)),
            ..streams
        };
        let pid = start(spec, argv, extra_env, streams)?;
        let _ = self.logs.send(LogCommand::Attach {
            program: spec.name.clone(),
            run,
            stdout: pipes.stdout_r,
            stderr: pipes.stderr_r,
            taps,
        });
        Ok(pid)
    }
}

/// What a process is started with besides the program's environment, identity and limits.
struct Streams {
    /// Its stdout and stderr.
    outputs: (Output, Output),
    /// stdin is ctrlinit's own (else `/dev/null`).
    stdin_inherit: bool,
    /// Its own session, or a group in ctrlinit's (the terminal's foreground or not).
    grouping: Grouping,
    /// `Some(true)`: cores allowed; `None`: inherited.
    core_dumps: Option<bool>,
    /// Descriptors beyond stdio.
    fds: Vec<(i32, OwnedFd)>,
    /// It starts with ctrlinit's own starting signal state (the `--` command).
    signals_as_started: bool,
    /// The cgroup it joins.
    cgroup: Option<OwnedFd>,
}

impl Default for Streams {
    fn default() -> Self {
        Streams {
            outputs: (Output::Null, Output::Null),
            stdin_inherit: false,
            grouping: Grouping::Session,
            core_dumps: None,
            fds: Vec::new(),
            signals_as_started: false,
            cgroup: None,
        }
    }
}

/// A failure before any process existed.
fn setup_error(message: String) -> SpawnError {
    SpawnError {
        exit: Exit::Code(126),
        message,
        exec_failed: false,
    }
}

/// Starts `argv` with `spec`'s environment, identity and limits.
fn start(
    spec: &ProgramSpec,
    argv: &[String],
    extra_env: &[(&str, String)],
    streams: Streams,
) -> Result<i32, SpawnError> {
    let env = process::program_env(spec, extra_env).map_err(setup_error)?;
    let (stdout, stderr) = streams.outputs;
    let spawned = process::spawn(Launch {
        argv,
        env,
        workdir: spec.workdir.as_deref(),
        run_as: &spec.run_as,
        umask: spec.umask,
        rlimits: &spec.rlimits,
        core_dumps: streams.core_dumps,
        stdout,
        stderr,
        extra_fds: streams.fds,
        stdin_inherit: streams.stdin_inherit,
        grouping: streams.grouping,
        signals_as_started: streams.signals_as_started,
        cgroup: streams.cgroup,
    })?;
    Ok(spawned.pid)
}

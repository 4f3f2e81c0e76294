//! Starting processes for the supervisor: a program's run, its finish hook, an exec readiness
//! check. Each gets the program's environment, identity and limits; runs and hooks get their
//! stdout and stderr piped to the log thread. An exec that fails is a [`SpawnError`] at once
//! (see `process::spawn`), never a process that seemed to start.

use std::os::fd::OwnedFd;

use tokio::sync::mpsc::UnboundedSender;

use super::wiring::Wiring;

use crate::config::ProgramSpec;
use crate::logs::{Command as LogCommand, Taps};
use crate::model::Exit;
use crate::model::signals::signal_name;
use crate::process::{self, Launch, Output, SpawnError};

/// Starts processes; owned by the runner, borrowed by the readiness checks.
pub(crate) struct Launcher {
    logs: UnboundedSender<LogCommand>,
}

impl Launcher {
    /// A launcher whose piped output goes to the log thread behind `logs`.
    pub(crate) fn new(logs: UnboundedSender<LogCommand>) -> Self {
        Launcher { logs }
    }

    /// Run `run` of `spec`'s program, with what `wiring` adds.
    pub(crate) fn program(
        &self,
        spec: &ProgramSpec,
        run: u64,
        wiring: Wiring,
    ) -> Result<i32, SpawnError> {
        let how = Logged {
            core_dumps: Some(spec.core_dumps),
            run: Some(run),
            fds: wiring.fds,
            taps: wiring.taps,
        };
        self.logged(spec, &spec.command, &wiring.env, how)
    }

    /// `spec`'s finish hook after a run that ended with `exit`: CTRLINIT_PROGRAM, and
    /// CTRLINIT_EXIT_CODE or CTRLINIT_EXIT_SIGNAL and CTRLINIT_EXIT_STATUS in its environment.
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
        self.logged(spec, argv, &extra, Logged::default())
    }

    /// An exec readiness check of `spec` running `argv`, its output discarded.
    pub(crate) fn check(&self, spec: &ProgramSpec, argv: &[String]) -> Result<i32, SpawnError> {
        start(
            spec,
            argv,
            &[],
            None,
            (Output::Null, Output::Null),
            Vec::new(),
        )
    }

    /// An exec liveness check of `spec` running `argv`; its stdout and stderr go to one pipe,
    /// whose read end (non-blocking) is returned for the check's output.
    pub(crate) fn captured_check(
        &self,
        spec: &ProgramSpec,
        argv: &[String],
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
        let outputs = (Output::Fd(write), Output::Fd(write2));
        let pid = start(spec, argv, &[], None, outputs, Vec::new())?;
        Ok((pid, read))
    }

    /// Starts `argv` with its stdout and stderr piped to the log thread.
    fn logged(
        &self,
        spec: &ProgramSpec,
        argv: &[String],
        extra_env: &[(&str, String)],
        how: Logged,
    ) -> Result<i32, SpawnError> {
        let (stdout_r, stdout_w, stderr_r, stderr_w) = process::output_pipes()
            .map_err(|e| setup_error(format!("failed to create output pipes: {e}")))?;
        let outputs = (Output::Fd(stdout_w), Output::Fd(stderr_w));
        let pid = start(spec, argv, extra_env, how.core_dumps, outputs, how.fds)?;
        let _ = self.logs.send(LogCommand::Attach {
            program: spec.name.clone(),
            run: how.run,
            stdout: stdout_r,
            stderr: stderr_r,
            taps: how.taps,
        });
        Ok(pid)
    }
}

/// How a process with logged output is started.
#[derive(Default)]
struct Logged {
    /// `Some(true)`: cores allowed; `None`: inherited.
    core_dumps: Option<bool>,
    /// The program's run, for crash reports to wait on; `None` for a hook.
    run: Option<u64>,
    /// Descriptors beyond stdio.
    fds: Vec<(i32, OwnedFd)>,
    /// What its output is watched for.
    taps: Taps,
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
    core_dumps: Option<bool>,
    (stdout, stderr): (Output, Output),
    extra_fds: Vec<(i32, OwnedFd)>,
) -> Result<i32, SpawnError> {
    let env = process::program_env(spec, extra_env).map_err(setup_error)?;
    let spawned = process::spawn(Launch {
        argv,
        env,
        workdir: spec.workdir.as_deref(),
        run_as: &spec.run_as,
        umask: spec.umask,
        rlimits: &spec.rlimits,
        core_dumps,
        stdout,
        stderr,
        extra_fds,
    })?;
    Ok(spawned.pid)
}

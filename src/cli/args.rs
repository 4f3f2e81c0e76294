//! Command-line arguments (clap). Subcommand names and flags are a public contract.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use super::graph::Format;

/// How to call it, the tini way first: the form a user coming from tini reaches for.
const USAGE: &str =
    "ctrlinit [OPTIONS] -- CMD [ARGS]...   run CMD as the container's main process (as tini does)
       ctrlinit [OPTIONS] [run]              run the programs of the config directory
       ctrlinit [OPTIONS] COMMAND            talk to a running ctrlinit (status, restart, logs …)";

/// ctrlinit: init and process supervisor for multi-process containers.
#[derive(Debug, Parser)]
#[command(name = "ctrlinit", version, about, override_usage = USAGE)]
pub struct Cli {
    /// Configuration directory: every *.toml in it is read in lexical order.
    #[arg(
        long,
        global = true,
        env = "CTRLINIT_CONFIG_DIR",
        default_value = "/etc/ctrlinit/conf.d",
        value_name = "DIR"
    )]
    pub config_dir: PathBuf,

    /// Control socket (overrides [init] socket).
    #[arg(long, global = true, env = "CTRLINIT_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Exit status FROM of the container counts as TO (`--remap-exit 143=0`: a main program
    /// killed by the stop's SIGTERM exits 0). Repeatable.
    #[arg(long, value_name = "FROM=TO", value_parser = remap)]
    pub remap_exit: Vec<(u8, u8)>,

    /// tini's `-e CODE`: exit status CODE counts as success (as `--remap-exit CODE=0`).
    /// Repeatable.
    #[arg(short = 'e', value_name = "CODE")]
    pub success_exit: Vec<u8>,

    /// What to do; without one, run the init (`ctrlinit -- CMD ARGS…` runs CMD as the main
    /// program, as `ctrlinit run -- CMD ARGS…` does).
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The container's exit status `code` after `--remap-exit` and `-e`.
    pub fn remapped(&self, code: u8) -> u8 {
        if self.success_exit.contains(&code) {
            return 0;
        }
        self.remap_exit
            .iter()
            .find(|(from, _)| *from == code)
            .map_or(code, |(_, to)| *to)
    }

    /// Parses the process's arguments. `ctrlinit [OPTIONS] -- CMD…` (the tini-style entry point)
    /// is read as `ctrlinit [OPTIONS] run -- CMD…`.
    pub fn parse_args() -> Self {
        let args = with_implicit_run(std::env::args_os().collect());
        let health = args.iter().skip(1).any(|a| a == "health");
        Cli::try_parse_from(args).unwrap_or_else(|e| {
            // `health` exits 0 or 1 only, a bad probe command line included: Docker reads 2 as
            // reserved, and a probe that cannot run is unhealthy.
            if health && e.use_stderr() {
                let _ = e.print();
                std::process::exit(1);
            }
            if let Some(word) = not_a_command(&e) {
                eprintln!("{}", forgot_double_dash(&word));
                std::process::exit(2);
            }
            e.exit()
        })
    }
}

/// The first word, when clap refused it for being no subcommand (`ctrlinit sh`).
fn not_a_command(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand {
        return None;
    }
    match e.get(ContextKind::InvalidSubcommand) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// What to say to `ctrlinit sh`: most likely a command meant as the main process, `--` left out
/// (`docker run IMAGE sh` with `ENTRYPOINT ["ctrlinit"]`).
pub fn forgot_double_dash(word: &str) -> String {
    format!(
        "ctrlinit: `{word}` is not a ctrlinit command
    to run it as the container's main process (as tini does), put -- before it: ctrlinit -- {word}
    (in an image: ENTRYPOINT [\"/usr/bin/ctrlinit\", \"--\"] with CMD [\"{word}\", …])
    ctrlinit's own commands: run, check, status, start, stop, restart, signal, logs, top, events, health, reload, shutdown, graph, import (ctrlinit --help)"
    )
}

/// Inserts `run` before a `--` that comes before any subcommand.
pub fn with_implicit_run(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut i = 1;
    while i < args.len() {
        let a = args[i].to_string_lossy();
        if a == "--" {
            args.insert(i, "run".into());
            break;
        }
        if ["--config-dir", "--socket", "--remap-exit", "-e"].contains(&a.as_ref()) {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    args
}

/// The subcommands; each client command talks to the running init over its socket.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the init (the default).
    Run {
        /// A program to run as the container's main program (after `--`).
        #[arg(last = true, value_name = "CMD")]
        main: Vec<String>,
    },
    /// Load and validate the configuration, print the start order, start nothing.
    Check {
        /// Also fail (exit 2) on commands that cannot be executed (a missing or non-executable
        /// file), which are otherwise warnings.
        #[arg(long)]
        strict: bool,
        /// Check where the image is built (`RUN ctrlinit check --build`): the container's
        /// environment is not known there, so a variable that is unset with no default is a
        /// note, not an error, and what depends on it is checked at start.
        #[arg(long)]
        build: bool,
        /// Check as if this command were given after `--`.
        #[arg(last = true, value_name = "CMD")]
        main: Vec<String>,
    },
    /// Show programs' states (exit 0: all up, 3: some not, 4: init unreachable).
    Status {
        /// Programs to show (all by default).
        names: Vec<String>,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// With --json: each program's CPU time and memory too (`cpu_usec`, `memory_bytes`,
        /// read from its cgroup: a few more file reads a program; `ctrlinit top` shows them live).
        #[arg(long, requires = "json")]
        usage: bool,
        /// Block until each NAME is in STATE (STATE may be `a|b`); exit 1 on timeout.
        #[arg(long, num_args = 1.., value_name = "NAME=STATE")]
        wait: Vec<String>,
        /// How long --wait may block.
        #[arg(long, default_value = "30s", value_parser = duration)]
        timeout: Duration,
    },
    /// Start programs (and what they need); returns once they run.
    Start(ChangeArgs),
    /// Stop programs (after what requires them); they stay stopped until started.
    Stop(ChangeArgs),
    /// Restart programs and what requires them.
    Restart(ChangeArgs),
    /// Send a signal to programs' process groups.
    Signal {
        /// Signal name: SIGHUP, HUP, USR1 …
        signal: String,
        /// Programs to signal.
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Show programs' last output lines (from memory, merged in the order they were written),
    /// and follow it.
    Logs {
        /// Programs (all by default).
        names: Vec<String>,
        /// Lines per program.
        #[arg(short = 'n', long, default_value_t = 100)]
        lines: usize,
        /// Keep printing new lines.
        #[arg(short, long)]
        follow: bool,
        /// Each program's lines together (programs by name) instead of merged in time order.
        #[arg(long)]
        by_program: bool,
    },
    /// A live full-screen view of the programs (states, health, pids, CPU %, memory,
    /// restarts, last exit) with keys to restart, stop and start them and to read their last
    /// lines; without a terminal, one frame as text.
    Top {
        /// Print one frame as text and exit (the default when stdout is not a terminal).
        #[arg(long)]
        once: bool,
    },
    /// Stream state changes.
    Events {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Exit 0 when every program is in its wanted state, 1 otherwise (for HEALTHCHECK and probes).
    Health {
        /// Count programs stopped by hand as unhealthy too.
        #[arg(long, conflicts_with = "live")]
        strict: bool,
        /// Liveness only (as /livez): 1 only while a program is past its liveness threshold or
        /// the container stops, not while a program restarts within its budget. For checks an
        /// engine restarts the container on (Swarm's HEALTHCHECK, Nomad's check_restart).
        #[arg(long)]
        live: bool,
    },
    /// Re-read the configuration and apply the difference (as SIGHUP does).
    Reload,
    /// Stop the container gracefully (as SIGTERM does).
    Shutdown,
    /// Print the dependency graph (with states when the init is running).
    Graph {
        /// Output format.
        #[arg(long, value_enum, default_value = "dot")]
        format: Format,
    },
    /// What the run ledger says, without a running init: boots and how each ended, then per
    /// program its starts, restarts, causes, last exit, mean time between failures and ready
    /// latency (exit 1: the ledger cannot be read).
    History {
        /// The ledger file (default: the one the init at the control socket writes, when one
        /// answers; else ledger.jsonl in $CTRLINIT_LOG_DIR, or /var/log/ctrlinit); on the
        /// host, the mounted log directory's. The first line says which file was read.
        #[arg(long, value_name = "PATH")]
        ledger: Option<PathBuf>,
        /// Only this program.
        #[arg(long)]
        program: Option<String>,
        /// Only records since a time (RFC 3339) or a duration ago (`2h`).
        #[arg(long, value_parser = crate::cli::history::since_arg)]
        since: Option<String>,
        /// Only the last N boots.
        #[arg(long, value_name = "N")]
        boots: Option<usize>,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Translate a supervisord configuration (and the files it includes), or an s6-overlay
    /// layout (`--from s6-overlay ROOT`), into ctrlinit's: TOML files, and a report on stderr
    /// of what is not carried over exactly (exit 0 imported, 1 output not written, 2 input
    /// unreadable or invalid).
    Import {
        /// What the input is.
        #[arg(long, value_enum, default_value = "supervisord")]
        from: ImportFrom,
        /// The supervisord configuration file (supervisord.conf), or the root directory holding
        /// the s6-overlay layout's etc/ (an image's root, or a repository's root/ folder).
        input: PathBuf,
        /// Write the files into this directory (created if missing) instead of printing them.
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,
    },
}

/// What `ctrlinit import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFrom {
    /// A supervisord.conf and the files it includes.
    Supervisord,
    /// An s6-overlay layout (v2 or v3) under a root directory.
    #[value(name = "s6-overlay")]
    S6Overlay,
}

/// Arguments of start, stop and restart.
#[derive(Debug, clap::Args)]
pub struct ChangeArgs {
    /// Programs to change.
    #[arg(required_unless_present = "all")]
    pub names: Vec<String>,
    /// Every program.
    #[arg(long, conflicts_with = "names")]
    pub all: bool,
    /// How long to wait for the change to be applied.
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub timeout: Duration,
}

fn duration(s: &str) -> Result<Duration, String> {
    crate::model::durations::parse_duration(s)
}

/// `FROM=TO`, two exit statuses.
fn remap(s: &str) -> Result<(u8, u8), String> {
    let status = |v: &str| {
        v.trim()
            .parse::<u8>()
            .map_err(|_| format!("{v:?} is not an exit status (0 to 255)"))
    };
    let (from, to) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not FROM=TO (write 143=0)"))?;
    Ok((status(from)?, status(to)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        let args = args.iter().map(|a| (*a).into()).collect();
        Cli::try_parse_from(with_implicit_run(args)).unwrap()
    }

    #[test]
    fn remap_exit_and_tinis_e_apply_before_the_double_dash() {
        let cli = parse(&["ctrlinit", "-e", "143", "--remap-exit", "3=0", "--", "sh"]);
        assert!(matches!(cli.command, Some(Command::Run { ref main }) if main == &["sh"]));
        assert_eq!(cli.remapped(143), 0);
        assert_eq!(cli.remapped(3), 0);
        assert_eq!(cli.remapped(1), 1);
        let cli = parse(&["ctrlinit", "--remap-exit=143=7", "--", "sh"]);
        assert_eq!(cli.remapped(143), 7);
        assert!(remap("143").is_err());
        assert!(remap("300=0").is_err());
    }
}

//! The `ctrlinit` binary: parse the command line, then run the init or a command.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ctrlinit::cli::args::{Cli, Command};
use ctrlinit::cli::check::render_start_order;
use ctrlinit::config::{self, LoadOptions};
use ctrlinit::cores::CorePattern;
use ctrlinit::logs::{Logs, OwnLogLayer};
use ctrlinit::supervisor::runner::{RunOptions, Runner};
use ctrlinit::sys;

/// Exit status for configuration and usage errors.
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => run_init(&cli, cli.main.clone()),
        Some(Command::Run { ref main }) => {
            let main = if main.is_empty() {
                cli.main.clone()
            } else {
                main.clone()
            };
            run_init(&cli, main)
        }
        Some(Command::Check { ref main }) => check(&cli, main.clone()),
    }
}

fn load_options(cli: &Cli, main: Vec<String>) -> LoadOptions {
    LoadOptions {
        dir: cli.config_dir.clone(),
        main_command: (!main.is_empty()).then_some(main),
        env: None,
    }
}

fn check(cli: &Cli, main: Vec<String>) -> ExitCode {
    match config::load_dir(&load_options(cli, main)) {
        Ok(config) => {
            print!("{}", render_start_order(&config));
            ExitCode::SUCCESS
        }
        Err(errors) => {
            eprint!("{errors}");
            ExitCode::from(EXIT_CONFIG)
        }
    }
}

fn run_init(cli: &Cli, main: Vec<String>) -> ExitCode {
    // Before anything else, and before any thread exists: signals arrive through the signalfd.
    let mask = match sys::signals::block_handled() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("ctrlinit: failed to block signals: {e}");
            return ExitCode::from(1);
        }
    };
    sys::init::cloexec_inherited_fds();
    let forward_to = (!main.is_empty()).then(|| config::MAIN_PROGRAM.to_string());
    let mut config = match config::load_dir(&load_options(cli, main)) {
        Ok(c) => c,
        Err(errors) => {
            eprint!("ctrlinit: not starting anything: {errors}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    apply_overrides(&mut config, cli);
    let config = std::sync::Arc::new(config);
    let logs = match Logs::start(std::sync::Arc::clone(&config)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ctrlinit: not starting anything: {e}");
            return ExitCode::from(1);
        }
    };
    init_tracing(&config.init.log_level, &logs);
    let code = match start(config.as_ref().clone(), mask, forward_to, &logs) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            1
        }
    };
    logs.shutdown();
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// Paths given on the command line or in the environment win over the config files, so one
/// image can run with different mounts (and tests with private directories).
fn apply_overrides(config: &mut config::Config, cli: &Cli) {
    if let Some(socket) = &cli.socket {
        config.init.socket = socket.clone();
    }
    if let Some(dir) = std::env::var_os("CTRLINIT_LOG_DIR") {
        config.init.log_dir = dir.into();
        config.init.log_dir_configured = true;
    }
    if let Some(dir) = std::env::var_os("CTRLINIT_CRASH_DIR") {
        config.init.crash_dir = dir.into();
        config.init.crash_dir_configured = true;
    }
}

fn start(
    config: config::Config,
    mask: nix::sys::signal::SigSet,
    forward_to: Option<String>,
    logs: &Logs,
) -> anyhow::Result<i32> {
    let role = sys::init::take_reaper_role().context("failed to become a child subreaper")?;
    if role == sys::init::Role::Subreaper {
        tracing::info!(
            "not PID 1 (pid {}): registered as child subreaper, so orphans are still reaped",
            std::process::id()
        );
    }
    tracing::info!(
        "ctrlinit {} starting {} programs",
        env!("CARGO_PKG_VERSION"),
        config.programs.len()
    );
    tracing::info!("{}", CorePattern::read().describe());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("failed to build the event loop")?;
    let code = runtime.block_on(async move {
        let signals = sys::signals::Signals::new(&mask).context("failed to open a signalfd")?;
        let opts = RunOptions {
            role,
            forward_to,
            logs: logs.sender(),
        };
        let runner = Runner::new(config, opts);
        anyhow::Ok(runner.run(signals).await)
    })?;
    Ok(code)
}

/// ctrlinit's own log goes through the log thread (console and `<log_dir>/ctrlinit.log`).
fn init_tracing(level: &str, logs: &Logs) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    let level = std::env::var("CTRLINIT_LOG").unwrap_or_else(|_| level.to_string());
    let filter: tracing::level_filters::LevelFilter = level
        .parse()
        .unwrap_or(tracing::level_filters::LevelFilter::INFO);
    let subscriber =
        tracing_subscriber::registry().with(OwnLogLayer::new(logs.sender()).with_filter(filter));
    let _ = tracing::subscriber::set_global_default(subscriber);
}

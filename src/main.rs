//! The `ctrlinit` binary: parse the command line, then run the init or a command.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ctrlinit::cli::args::{Cli, Command};
use ctrlinit::cli::check::render_start_order;
use ctrlinit::config::{self, LoadOptions};
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
    let config = match config::load_dir(&load_options(cli, main)) {
        Ok(c) => c,
        Err(errors) => {
            eprint!("ctrlinit: not starting anything: {errors}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    init_tracing(&config.init.log_level);
    match start(config, mask, forward_to) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::from(1)
        }
    }
}

fn start(
    config: config::Config,
    mask: nix::sys::signal::SigSet,
    forward_to: Option<String>,
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("failed to build the event loop")?;
    let code = runtime.block_on(async move {
        let signals = sys::signals::Signals::new(&mask).context("failed to open a signalfd")?;
        let runner = Runner::new(config, RunOptions { role, forward_to });
        anyhow::Ok(runner.run(signals).await)
    })?;
    Ok(code)
}

fn init_tracing(level: &str) {
    let level = std::env::var("CTRLINIT_LOG").unwrap_or_else(|_| level.to_string());
    let filter: tracing::Level = level.parse().unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt()
        .with_max_level(filter)
        .with_target(false)
        .with_writer(std::io::stderr)
        .init();
}

//! Command-line arguments (clap). Subcommand names and flags are a public contract.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// ctrlinit: init and process supervisor for multi-process containers.
#[derive(Debug, Parser)]
#[command(
    name = "ctrlinit",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
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

    /// What to do; without one, run the init.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// A program to run as the container's main program (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub main: Vec<String>,
}

/// Subcommands.
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
        /// Check as if this command were given after `--`.
        #[arg(last = true, value_name = "CMD")]
        main: Vec<String>,
    },
}

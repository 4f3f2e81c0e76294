//! The `ctrlinit` binary: parse the command line, then run the init or a command.

use std::process::ExitCode;

use anyhow::Context;
use ctrlinit::cli::args::{Cli, Command, ImportFrom};
use ctrlinit::cli::check::render_start_order;
use ctrlinit::cli::{ctl, graph};
use std::sync::Arc;

use ctrlinit::api::server;
use ctrlinit::config::preflight::{command_problems, path_warnings, stop_budget_warnings};
use ctrlinit::config::{self, LoadOptions};
use ctrlinit::crash::CorePattern;
use ctrlinit::logs::{Logs, OwnLogLayer};
use ctrlinit::supervisor::runner::{RunOptions, Runner};
use ctrlinit::sys;

/// Exit status for configuration and usage errors.
const EXIT_CONFIG: u8 = 2;

/// How long the exit waits for control connections to write their last answers and events.
const ANSWERS_AT_EXIT: std::time::Duration = std::time::Duration::from_secs(1);

fn main() -> ExitCode {
    let cli = Cli::parse_args();
    if !matches!(cli.command, None | Some(Command::Run { .. })) {
        // A client command writing into a closed pipe ends as Unix tools do; the init keeps
        // Rust's ignored SIGPIPE for its own signal setup.
        sys::signals::default_sigpipe_for_client();
    }
    match cli.command {
        None => run_init(&cli, Vec::new()),
        Some(Command::Run { ref main }) => run_init(&cli, main.clone()),
        Some(Command::Check {
            ref main,
            strict,
            build,
        }) => check(&cli, main.clone(), strict, build),
        Some(Command::History {
            ref ledger,
            ref program,
            ref since,
            boots,
            json,
        }) => {
            let (path, from) = ctrlinit::cli::history::choose_ledger(
                ledger.as_deref(),
                &client_socket(&cli),
                default_ledger(),
            );
            let filter = ctrlinit::cli::history::Filter {
                program: program.clone(),
                since: since.clone(),
                boots,
            };
            ExitCode::from(ctrlinit::cli::history::history(&path, &from, &filter, json))
        }
        Some(Command::Import {
            from,
            ref input,
            ref output,
        }) => import(from, input, output.as_deref()),
        Some(ref cmd) => ExitCode::from(client(&cli, cmd)),
    }
}

/// The control socket a client uses: `--socket`, `$CTRLINIT_SOCKET`, the config's `[init]
/// socket` (when the config loads), or the default.
fn client_socket(cli: &Cli) -> std::path::PathBuf {
    if let Some(s) = &cli.socket {
        return s.clone();
    }
    let init = config::load_dir(&load_options(cli, Vec::new()))
        .map(|c| c.init)
        .unwrap_or_default();
    // A default socket that is not there, or that this user may not use (another user's init
    // on a shared host, a stale root socket), may have gone to this user's private fallback (an
    // init that could not write the default place, see `place_socket`).
    let usable = nix::unistd::access(&init.socket, nix::unistd::AccessFlags::W_OK).is_ok();
    if !init.chosen.socket && !usable {
        let uid = nix::unistd::geteuid().as_raw();
        if let Some(private) = server::fallback_candidates(uid)
            .into_iter()
            .find(|p| p.exists())
        {
            return private;
        }
    }
    init.socket
}

fn client(cli: &Cli, cmd: &Command) -> u8 {
    let socket = client_socket(cli);
    match cmd {
        Command::Status {
            names,
            json,
            usage,
            wait,
            timeout,
        } => {
            if wait.is_empty() {
                ctl::status(&socket, names.clone(), *json, *usage)
            } else {
                ctl::wait(&socket, wait, *timeout)
            }
        }
        Command::Start(a) => ctl::change(&socket, "start", a.names.clone(), a.all, a.timeout),
        Command::Stop(a) => ctl::change(&socket, "stop", a.names.clone(), a.all, a.timeout),
        Command::Restart(a) => ctl::change(&socket, "restart", a.names.clone(), a.all, a.timeout),
        Command::Signal { signal, names } => ctl::signal(&socket, signal.clone(), names.clone()),
        Command::Logs {
            names,
            lines,
            follow,
            by_program,
        } => ctl::logs(&socket, names.clone(), *lines, *follow, *by_program),
        Command::Events { json } => ctl::events(&socket, *json),
        Command::Top { once } => ctrlinit::cli::top::top(&socket, *once),
        Command::Health { strict, live } => ctl::health(&socket, *strict, *live),
        Command::Reload => ctl::reload(&socket),
        Command::Shutdown => ctl::shutdown(&socket),
        Command::Graph { format } => graph(cli, &socket, *format),
        Command::Run { .. }
        | Command::Check { .. }
        | Command::Import { .. }
        | Command::History { .. } => ctl::EXIT_USAGE,
    }
}

/// With a running init, its live graph; otherwise the config's.
fn graph(cli: &Cli, socket: &std::path::Path, format: graph::Format) -> u8 {
    use ctrlinit::api::client::Client;
    use ctrlinit::model::protocol::{Request, Response};
    let live = Client::connect(socket)
        .and_then(|mut c| c.call(&Request::Graph, std::time::Duration::from_secs(5)))
        .ok();
    let nodes = match live {
        Some(Response::Graph { programs }) => programs,
        _ => match config::load_dir(&load_options(cli, Vec::new())) {
            Ok(c) => config::describe::graph_nodes(&c),
            Err(errors) => {
                eprint!("{errors}");
                return EXIT_CONFIG;
            }
        },
    };
    print!("{}", graph::render(&nodes, format));
    ctl::EXIT_OK
}

fn load_options(cli: &Cli, main: Vec<String>) -> LoadOptions {
    LoadOptions {
        dir: cli.config_dir.clone(),
        main_command: (!main.is_empty()).then_some(main),
        env: None,
    }
}

fn check(cli: &Cli, main: Vec<String>, strict: bool, build: bool) -> ExitCode {
    let opts = load_options(cli, main);
    let loaded = if build {
        config::load_for_build(&opts)
    } else {
        config::load_dir(&opts)
    };
    match loaded {
        Ok(mut config) => {
            // What `run` would use: CTRLINIT_LOG_DIR and friends win over the files.
            config::Overrides::from_env(cli.socket.clone()).apply(&mut config);
            let mut warnings = config.warnings.clone();
            warnings.extend(path_warnings(&config));
            warnings.extend(stop_budget_warnings(&config));
            let levels = config::describe::start_levels(&config);
            print!("{}", render_start_order(&levels, &warnings));
            let problems = command_problems(&config);
            if strict && !problems.is_empty() {
                let n = problems.len();
                eprintln!(
                    "{n} problem{} (an error with --strict):",
                    if n == 1 { "" } else { "s" }
                );
                for p in &problems {
                    eprintln!("error: {p}");
                }
                return ExitCode::from(EXIT_CONFIG);
            }
            for p in &problems {
                println!("warning: {p}");
            }
            ExitCode::SUCCESS
        }
        Err(errors) => {
            eprint!("{errors}");
            ExitCode::from(EXIT_CONFIG)
        }
    }
}

/// `ctrlinit import`: 0 imported (notes or not), 1 the output could not be written, 2 the input
/// could not be read or parsed.
fn import(from: ImportFrom, input: &std::path::Path, output: Option<&std::path::Path>) -> ExitCode {
    use ctrlinit::import;
    let imported = match from {
        ImportFrom::Supervisord => import::import(input),
        ImportFrom::S6Overlay => import::s6::import(input),
    };
    let imported = match imported {
        Ok(i) => i,
        Err(errors) => {
            let n = errors.len();
            eprintln!(
                "ctrlinit import: {n} error{} in the input; nothing written:",
                if n == 1 { "" } else { "s" }
            );
            for e in &errors {
                eprintln!("error: {e}");
            }
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let written = match output {
        Some(dir) => import::write::write_dir(dir, &imported.files),
        None => {
            use std::io::Write;
            let text = import::write::render_all(&imported.files);
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|e| format!("cannot write to standard output: {e}"))
        }
    };
    eprint!("{}", import::render_notes(&imported.notes));
    if let Err(e) = written {
        eprintln!("ctrlinit import: {e}");
        return ExitCode::from(1);
    }
    let n = imported.notes.len();
    eprintln!(
        "ctrlinit import: {} program{} from {} file{} into {} file{}{}; {n} note{} above",
        imported.programs,
        if imported.programs == 1 { "" } else { "s" },
        imported.inputs,
        if imported.inputs == 1 { "" } else { "s" },
        imported.files.len(),
        if imported.files.len() == 1 { "" } else { "s" },
        output.map_or(String::new(), |d| format!(" in {}", d.display())),
        if n == 1 { "" } else { "s" },
    );
    if let Some(why) = &imported.incomplete {
        eprintln!("ctrlinit import: {why}");
    }
    ExitCode::SUCCESS
}

fn run_init(cli: &Cli, main: Vec<String>) -> ExitCode {
    // Before anything else, and before any thread exists: signals arrive through the signalfd.
    // A `--` command starts with the signal state ctrlinit was started with, and gets every
    // signal ctrlinit can forward (as tini does).
    sys::signals::record_startup();
    let forward_all = !main.is_empty();
    let mask = match sys::signals::block_handled(forward_all) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("ctrlinit: failed to block signals: {e}");
            return ExitCode::from(1);
        }
    };
    sys::signals::ignore_unhandled(forward_all);
    // Before anything reads a relative path: they are resolved against the directory left.
    sys::init::leave_working_directory();
    sys::init::ensure_stdio_open();
    sys::init::cloexec_inherited_fds();
    // Low descriptor numbers for what a spawn hands its child: each start then copies a few
    // descriptors, not every one ctrlinit holds (two pipes a program and more).
    ctrlinit::process::reserve_spawn_slots();
    sys::init::two_malloc_arenas();
    sys::init::harden_self();
    let forward_to = (!main.is_empty()).then(|| config::MAIN_PROGRAM.to_string());
    let mut load = load_options(cli, main);
    load.dir = sys::init::resolve(&load.dir);
    let overrides = config::Overrides::from_env(cli.socket.clone());
    // A config that cannot fit under the descriptor limit is refused as any bad config is.
    let loaded = config::load_with(&load, &overrides)
        .and_then(|c| config::descriptors::fit(&c, &load.dir).map(|()| c));
    let mut config = match loaded {
        Ok(c) => c,
        Err(errors) => {
            eprint!("ctrlinit: not starting anything: {errors}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let socket = place_socket(&mut config.init);
    let config = std::sync::Arc::new(config);
    let default_level = if forward_to.is_some() { "warn" } else { "info" };
    let level = config.init.log_level.as_deref().unwrap_or(default_level);
    let logs = match Logs::start(std::sync::Arc::clone(&config), |tx| init_tracing(level, tx)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ctrlinit: not starting anything: {e}");
            return ExitCode::from(1);
        }
    };
    say_fallbacks(logs.fallbacks(), &socket);
    let opts = RunOptions {
        role: sys::init::Role::Pid1,
        forward_to,
        logs: logs.sender(),
        load,
        overrides,
        syslog: logs.syslog_counters(),
    };
    // `--remap-exit` and `-e` apply to the status the run ends with (the main program's, 0 or
    // `exit_code`), not to ctrlinit's own failures.
    let code = match start(config, mask, opts, socket.off) {
        Ok(code) => cli.remapped(code.clamp(0, 255) as u8),
        Err(e) => {
            tracing::error!("{e:#}");
            1
        }
    };
    logs.shutdown();
    ExitCode::from(code)
}

/// Where the control socket goes: its place, or (a default place that cannot be written) a
/// private directory ctrlinit can make, or none at all.
struct SocketPlace {
    /// No control socket: nowhere could hold one.
    off: bool,
    /// Why it is not where the defaults put it, with the fix (`None`: it is).
    note: Option<String>,
}

/// Moves a default control socket that cannot be placed to a private directory (or turns it
/// off); a chosen one stays where it was chosen, and fails at bind time if it must.
fn place_socket(init: &mut config::InitSettings) -> SocketPlace {
    let placed = |note| SocketPlace { off: false, note };
    if init.chosen.socket {
        return placed(None);
    }
    let Err(why) = server::place_writable(&init.socket) else {
        return placed(None);
    };
    let fix = "set CTRLINIT_SOCKET to a writable place, or mount a writable directory there";
    match server::private_fallback() {
        Some(private) => {
            let note = format!(
                "the control socket is {}, where clients of this user find it ({}: {why}; {fix})",
                private.display(),
                init.socket.display()
            );
            init.socket = private;
            placed(Some(note))
        }
        None => SocketPlace {
            off: true,
            note: Some(format!(
                "there is no control socket ({}: {why}, nor /tmp or /dev/shm; {fix})",
                init.socket.display()
            )),
        },
    }
}

/// Says at once, in one warning, what defaults that cannot be written turned off.
fn say_fallbacks(dirs: &[String], socket: &SocketPlace) {
    let all: Vec<&str> = dirs
        .iter()
        .map(String::as_str)
        .chain(socket.note.as_deref())
        .collect();
    if all.is_empty() {
        return;
    }
    tracing::warn!(
        "running as uid {} where ctrlinit's default places cannot be written: {}",
        nix::unistd::geteuid(),
        all.join("; ")
    );
}

/// The control socket's listener (`None` when it is off), its placement warnings logged.
fn bind_control(
    socket: &std::path::Path,
    gid: Option<u32>,
    off: bool,
) -> anyhow::Result<Option<std::os::unix::net::UnixListener>> {
    if off {
        return Ok(None);
    }
    let bound = server::bind(socket, gid).map_err(|e| anyhow::anyhow!(e))?;
    for w in &bound.warnings {
        tracing::warn!("{w}");
    }
    Ok(Some(bound.listener))
}

fn start(
    config: Arc<config::Config>,
    mask: nix::sys::signal::SigSet,
    mut opts: RunOptions,
    socket_off: bool,
) -> anyhow::Result<i32> {
    let role = sys::init::take_reaper_role().context("failed to become a child subreaper")?;
    opts.role = role;
    if role == sys::init::Role::Subreaper {
        tracing::info!(
            "not PID 1 (pid {}): registered as child subreaper, so orphans are still reaped",
            std::process::id()
        );
    }
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    let n = config.programs.len();
    tracing::info!(
        "ctrlinit {} starting {n} program{}",
        env!("CARGO_PKG_VERSION"),
        if n == 1 { "" } else { "s" }
    );
    // Only worth saying when some program collects cores.
    let pattern = CorePattern::read().describe();
    if config.programs.iter().any(|p| p.core_dumps) {
        tracing::info!("{pattern}");
    } else {
        tracing::debug!("{pattern}");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        // A release of cold memory after a routine check waits for this (see sys::memory).
        .on_thread_park(sys::memory::at_park)
        .build()
        .context("failed to build the event loop")?;
    let code = runtime.block_on(async move {
        let signals = sys::signals::Signals::new(&mask).context("failed to open a signalfd")?;
        let socket = config.init.socket.clone();
        let socket_gid = match &config.init.socket_group {
            Some(g) => Some(
                config::resolve_group(g)
                    .ok_or_else(|| anyhow::anyhow!("unknown socket_group {g:?}"))?,
            ),
            None => None,
        };
        let listener = bind_control(&socket, socket_gid, socket_off)?;
        let http = match config.init.http {
            Some(addr) => Some(std::net::TcpListener::bind(addr).map_err(|e| {
                anyhow::anyhow!(
                    "cannot serve the probe endpoint on {addr} ([init] http): {e}\n    fix: choose a free port, or remove [init] http"
                )
            })?),
            None => None,
        };
        let (control_tx, control_rx) = tokio::sync::mpsc::unbounded_channel();
        let events = ctrlinit::supervisor::events::EventLog::new();
        let server = server::start_thread(
            listener,
            std::sync::Arc::clone(&events),
            control_tx,
            opts.logs.clone(),
            socket_gid,
            socket.clone(),
            http,
        )
        .map_err(|e| anyhow::anyhow!(e))?;
        let runner = Runner::new(config, opts, control_rx, std::sync::Arc::clone(&events));
        let code = runner.run(signals).await;
        // Answers already decided (`ctrlinit shutdown`'s) and the last events reach their
        // clients before the process ends.
        events.close();
        server.drain(ANSWERS_AT_EXIT);
        let _ = std::fs::remove_file(&socket);
        anyhow::Ok(code)
    })?;
    Ok(code)
}

/// ctrlinit's own log goes through the log thread (console and `<log_dir>/ctrlinit.log`), by
/// `tx`: set up before that thread starts, so nothing it says is lost.
fn init_tracing(level: &str, tx: tokio::sync::mpsc::UnboundedSender<ctrlinit::logs::Command>) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    // Set but empty (`-e CTRLINIT_LOG=`) means not set.
    let level = std::env::var("CTRLINIT_LOG")
        .ok()
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| level.to_string());
    let filter: tracing::level_filters::LevelFilter = level
        .parse()
        .unwrap_or(tracing::level_filters::LevelFilter::INFO);
    let subscriber = tracing_subscriber::registry().with(OwnLogLayer::new(tx).with_filter(filter));
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// Where `history` looks without `--ledger`: `ledger.jsonl` in `$CTRLINIT_LOG_DIR` (set and not
/// empty), else in the default log directory.
fn default_ledger() -> std::path::PathBuf {
    let dir = std::env::var_os("CTRLINIT_LOG_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(
            || config::InitSettings::default().log_dir,
            std::path::PathBuf::from,
        );
    dir.join(ctrlinit::model::ledger::LEDGER_FILE)
}

//! Checks of a valid configuration against the file system it will run on: directories that do
//! not exist yet, commands that cannot be executed, env_files not written yet. They are
//! warnings, so `RUN ctrlinit check` passes at image build time (before mounts and rendered
//! files exist); `check --strict` makes the command problems errors.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use super::spec::{Config, ProgramSpec, ReadyProbe};

/// Commands that cannot be executed as configured: a missing file, a directory, a file without an
/// execute bit, or a bare name on no directory of the program's PATH. At run time each would fail
/// to start (exit status 127 or 126) and spend the restart budget.
pub fn command_problems(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for p in &config.programs {
        let mut commands: Vec<(String, &[String])> = vec![("command".into(), &p.command)];
        if let Some(f) = &p.finish {
            commands.push(("finish".into(), f));
        }
        if let Some(r) = &p.ready
            && let ReadyProbe::Exec(argv) = &r.probe
        {
            commands.push(("ready.exec".into(), argv));
        }
        for (key, argv) in commands {
            let Some(program) = argv.first() else {
                continue;
            };
            let problem = executable_problem(program, p)
                .map(|why| {
                    let code = if why.starts_with("is not executable") {
                        126
                    } else {
                        127
                    };
                    (why, format!(" (exit status {code})"))
                })
                .or_else(|| script_problem(argv, p).map(|why| (why, String::new())))
                .or_else(|| {
                    shebang_problem(program, p).map(|why| (why, " (exit status 127)".into()))
                });
            if let Some((why, how)) = problem {
                let written = p.written_as(&key);
                // Where its table is, as every config error says it (the `--` command has none).
                let at = if p.passthrough {
                    String::new()
                } else {
                    format!("{}: ", p.defined_at)
                };
                out.push(format!(
                    "{at}{written}: {program:?} {why}; it will fail to start{how}\n    fix: install it in the image, or correct {written}",
                ));
            }
        }
    }
    out
}

/// Programs that read a script named as their first argument: `["bash", "/etc/s6/run"]`
/// runs only if the script is there, whatever bash's own path.
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "ash",
    "zsh",
    "ksh",
    "mksh",
    "perl",
    "ruby",
    "node",
    "execlineb",
];

/// The script an interpreter is given in `argv` (its first operand), unless the code is inline
/// (`-c`, `-e`) or read from stdin.
fn interpreted_script(argv: &[String]) -> Option<&str> {
    let name = argv.first()?.rsplit('/').next()?;
    let python = name
        .strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if !python && !INTERPRETERS.contains(&name) {
        return None;
    }
    for arg in &argv[1..] {
        match arg.as_str() {
            "-c" | "-e" | "-m" | "-" | "--" => return None,
            a if a.starts_with('-') => continue,
            a => return Some(a),
        }
    }
    None
}

/// Why the script an interpreter is given cannot be run, if it cannot: missing, or not a file
/// (the interpreter then exits 127 or 126 at every start). A script needs no x bit here.
fn script_problem(argv: &[String], spec: &ProgramSpec) -> Option<String> {
    let script = interpreted_script(argv)?;
    let path = in_workdir(script, spec);
    match std::fs::metadata(&path) {
        Err(_) => Some(format!(
            "is given the script {script:?}, which does not exist"
        )),
        Ok(m) if !m.is_file() => Some(format!(
            "is given the script {script:?}, which is not a file"
        )),
        Ok(_) => None,
    }
}

/// Where a path of `spec`'s command is: a relative one is under the program's workdir, as
/// execve sees it after the chdir.
fn in_workdir(path: &str, spec: &ProgramSpec) -> std::path::PathBuf {
    match (Path::new(path).is_relative(), &spec.workdir) {
        (true, Some(dir)) => dir.join(path),
        _ => Path::new(path).to_path_buf(),
    }
}

/// The most of a script read to find its `#!` line (the kernel reads 256 bytes).
const SHEBANG_BYTES: u64 = 256;

/// Why the script `program` cannot be executed although it is there: its `#!` names an
/// interpreter that does not exist (an image moved off s6-overlay keeps
/// `#!/usr/bin/with-contenv bash`), which execve reports as a missing file.
fn shebang_problem(program: &str, spec: &ProgramSpec) -> Option<String> {
    use std::io::Read;
    if !program.contains('/') {
        return None;
    }
    let path = in_workdir(program, spec);
    let mut head = Vec::new();
    std::fs::File::open(&path)
        .ok()?
        .take(SHEBANG_BYTES)
        .read_to_end(&mut head)
        .ok()?;
    let line = head.strip_prefix(b"#!")?.split(|&b| b == b'\n').next()?;
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let interpreter = words.next()?;
    if !interpreter.starts_with('/') || Path::new(interpreter).exists() {
        return None;
    }
    let with_contenv = interpreter.rsplit('/').next() == Some("with-contenv");
    Some(if with_contenv {
        let inner = words.next().unwrap_or("sh");
        format!(
            "starts with #!{interpreter}, s6-overlay's, which this image does not have: run it through its interpreter, as [\"{inner}\", {program:?}]"
        )
    } else {
        format!("starts with #!{interpreter}, which does not exist")
    })
}

/// Why `program` (argv[0] of `spec`) cannot be executed, if it cannot.
fn executable_problem(program: &str, spec: &ProgramSpec) -> Option<String> {
    if program.contains('/') {
        let path = in_workdir(program, spec);
        return match std::fs::metadata(&path) {
            Err(_) => Some("does not exist".into()),
            Ok(m) if !m.is_file() => Some("is not a file".into()),
            Ok(m) if m.permissions().mode() & 0o111 == 0 => {
                Some("is not executable (no x bit)".into())
            }
            Ok(_) => None,
        };
    }
    let path = spec
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_else(|| "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into());
    let found = path.split(':').any(|dir| {
        let dir = if dir.is_empty() { "." } else { dir };
        std::fs::metadata(Path::new(dir).join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    });
    (!found).then(|| format!("is on no directory of PATH ({path})"))
}

/// Paths that are not usable yet. At image build time the host mounts and rendered files are
/// missing, so these are warnings: `RUN ctrlinit check` must pass.
pub fn path_warnings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let chosen = config.init.chosen;
    for (key, dir, chosen, off) in [
        (
            "log_dir",
            &config.init.log_dir,
            chosen.log_dir,
            "logs go to the console only",
        ),
        (
            "crash_dir",
            &config.init.crash_dir,
            chosen.crash_dir,
            "crash reports are off",
        ),
    ] {
        // A default place that cannot be used turns off what needs it; a chosen one stops the start.
        let otherwise = if chosen {
            "ctrlinit will not start".to_string()
        } else {
            off.to_string()
        };
        if !dir.exists() {
            // The nearest directory that exists decides whether ctrlinit could create it.
            let parent = dir.ancestors().skip(1).find(|a| a.is_dir());
            let creatable = parent
                .is_some_and(|p| nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok());
            out.push(if creatable {
                format!(
                    "[init] {key} {} does not exist yet; it is created at start (mount it from the host to keep its files)",
                    dir.display()
                )
            } else {
                format!(
                    "[init] {key} {} does not exist and could not be created by this user; mount a writable directory there at run time, or {otherwise}",
                    dir.display()
                )
            });
        } else if nix::unistd::access(dir.as_path(), nix::unistd::AccessFlags::W_OK).is_err() {
            out.push(format!(
                "[init] {key} {} is not writable by this user; unless it is at run time, {otherwise}",
                dir.display()
            ));
        }
    }
    for p in &config.programs {
        if let Some(f) = &p.env_file
            && !f.exists()
        {
            out.push(format!(
                "program.{}.env_file {} does not exist yet; it is read at each start",
                p.name,
                f.display()
            ));
        }
    }
    out
}

/// Programs whose stop cannot fit the container's stop budget (`[init] stop_timeout`, less
/// `drain`): alone (its `stop_timeout`, which holds its `pre_stop`), or in a chain along the stop
/// order (what requires a program, or is ordered after it, stops first, so their times add up;
/// oneshots have ended by then and count nothing).
/// The engine kills the container when its grace period ends; ctrlinit kills what is left when
/// its budget is spent.
pub fn stop_budget_warnings(config: &Config) -> Vec<String> {
    let budget = config.init.stop_timeout.saturating_sub(config.init.drain);
    let graph = super::graph::Graph::new(&config.programs);
    // The longest time to stop each program and everything that stops before it, with the path.
    let mut memo: Vec<Option<(Duration, Vec<usize>)>> = vec![None; config.programs.len()];
    let mut out = Vec::new();
    for i in 0..config.programs.len() {
        let (total, chain) = chain_from(i, config, &graph, &mut memo, 0);
        if total <= budget {
            continue;
        }
        let p = &config.programs[i];
        // Each chain is said once, at its last program (the one nothing else waits on).
        let stops_later = graph
            .deps(i)
            .iter()
            .map(|e| e.on)
            .chain(graph.after(i).iter().copied());
        if stops_later
            .into_iter()
            .any(|j| chain_from(j, config, &graph, &mut memo, 0).0 > budget)
        {
            continue;
        }
        let fix = "raise [init] stop_timeout (and the engine's grace period: docker stop -t, stop_grace_period, terminationGracePeriodSeconds), or shorten these stop_timeout values";
        let drain = if config.init.drain.is_zero() {
            String::new()
        } else {
            format!(" less drain {}", fmt(config.init.drain))
        };
        let what = if chain.len() == 1 {
            format!("program.{}.stop_timeout {}", p.name, fmt(p.stop_timeout))
        } else {
            let names: Vec<String> = chain
                .iter()
                .map(|&j| {
                    let q = &config.programs[j];
                    format!("{} {}", q.name, fmt(q.stop_timeout))
                })
                .collect();
            format!(
                "stopping {} one after the other (the stop order) takes up to {}",
                names.join(" then "),
                fmt(total)
            )
        };
        out.push(format!(
            "{what}: more than the container's stop budget ([init] stop_timeout {}{drain}), so it may be killed before it ends\n    fix: {fix}",
            fmt(config.init.stop_timeout)
        ));
    }
    out
}

/// The longest stop time of `i` and what stops before it (its dependents and what is ordered
/// after it), and that chain, first to stop first.
fn chain_from(
    i: usize,
    config: &Config,
    graph: &super::graph::Graph,
    memo: &mut Vec<Option<(Duration, Vec<usize>)>>,
    depth: usize,
) -> (Duration, Vec<usize>) {
    if let Some(known) = &memo[i] {
        return known.clone();
    }
    // A oneshot has ended by the time the container stops (provisioning, migrations): it
    // takes none of the budget.
    let p = &config.programs[i];
    let own = match p.kind {
        super::spec::Kind::Oneshot => Duration::ZERO,
        super::spec::Kind::Service => p.stop_timeout,
    };
    let me = if own.is_zero() { vec![] } else { vec![i] };
    if depth > config.programs.len() {
        return (own, me); // a cycle; validation refuses one
    }
    let before: Vec<usize> = graph
        .dependents(i)
        .iter()
        .chain(graph.before(i))
        .copied()
        .collect();
    let longest = before
        .into_iter()
        .map(|d| chain_from(d, config, graph, memo, depth + 1))
        .max_by_key(|(t, _)| *t);
    let result = match longest {
        Some((t, mut chain)) => {
            chain.extend(me);
            (t + own, chain)
        }
        None => (own, me),
    };
    memo[i] = Some(result.clone());
    result
}

fn fmt(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

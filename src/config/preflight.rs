//! Checks of a valid configuration against the file system it will run on: directories that do
//! not exist yet, commands that cannot be executed, env_files not written yet. They are
//! warnings, so `RUN ctrlinit check` passes at image build time (before mounts and rendered
//! files exist); `check --strict` makes the command problems errors.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

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
            if let Some(why) = executable_problem(program, p) {
                let written = p.written_as(&key);
                out.push(format!(
                    "{written}: {program:?} {why}; it will fail to start (exit status {})\n    fix: install it in the image, or correct {written}",
                    if why.starts_with("is not executable") { 126 } else { 127 },
                ));
            }
        }
    }
    out
}

/// Why `program` (argv[0] of `spec`) cannot be executed, if it cannot.
fn executable_problem(program: &str, spec: &ProgramSpec) -> Option<String> {
    if program.contains('/') {
        let path = match (Path::new(program).is_relative(), &spec.workdir) {
            (true, Some(dir)) => dir.join(program),
            _ => Path::new(program).to_path_buf(),
        };
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
    for (key, dir) in [
        ("log_dir", &config.init.log_dir),
        ("crash_dir", &config.init.crash_dir),
    ] {
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
                    "[init] {key} {} does not exist and could not be created by this user; mount a writable directory there at run time, or ctrlinit will not start",
                    dir.display()
                )
            });
        } else if nix::unistd::access(dir.as_path(), nix::unistd::AccessFlags::W_OK).is_err() {
            out.push(format!(
                "[init] {key} {} is not writable by this user; ctrlinit will not start unless it is at run time",
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

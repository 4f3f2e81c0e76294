//! `ctrlinit import` (issue 16, part 1) on real supervisord configurations from public projects
//! (`tests/import/inputs/`, each citing its source): every one imports (exit 0), its output is
//! what `tests/import/expected/` holds (the TOML files and the report; `CTRLINIT_UPDATE_SNAPSHOTS=1`
//! rewrites them), `ctrlinit check` accepts the output, and some run for real under ctrlinit as
//! PID 1. Inputs it cannot read or parse exit 2 with the file and line; output it cannot write
//! exits 1.

mod common;
#[path = "common/snapshots.rs"]
mod snapshots;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use snapshots::files_of;

fn inputs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/inputs")
}

/// Inputs written for these tests (not taken from a project), each saying what it exercises:
/// cases the real ones do not have. Their snapshots are `expected/own-NAME`.
fn own_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/own")
}

/// The own inputs: `own-NAME` and the file.
fn own_cases() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(own_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            (format!("own-{stem}"), p)
        })
        .collect();
    out.sort();
    out
}

fn expected_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/expected")
}

/// Each input: a `.conf` file, or a directory's main file (the one its includes start from).
fn cases() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(inputs_dir()).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            let main = ["supervisord.conf", "supervisor.conf"]
                .iter()
                .map(|m| p.join(m))
                .find(|m| m.exists())
                .unwrap_or_else(|| panic!("{} has no supervisord.conf", p.display()));
            out.push((name, main));
        } else if name.ends_with(".conf") {
            out.push((name.trim_end_matches(".conf").to_string(), p));
        }
    }
    out.sort();
    out
}

/// Runs `ctrlinit import ARGS` in `cwd`.
fn import_in(cwd: &Path, args: &[&str]) -> Ran {
    let mut cmd = Command::new(bin());
    cmd.arg("import").args(args).current_dir(cwd);
    run_with_deadline(cmd, DEADLINE)
}

/// Imports `main` (named relative to its inputs directory, so reports name files as a user
/// would) into `out`.
fn import_case(main: &Path, out: &Path) -> Ran {
    let base = if main.starts_with(own_dir()) {
        own_dir()
    } else {
        inputs_dir()
    };
    let rel = main.strip_prefix(&base).unwrap();
    let mut cmd = Command::new(bin());
    cmd.arg("import")
        .args([rel.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .current_dir(&base);
    // `import-env` next to an input: the environment supervisord would start with there
    // (`KEY=VALUE` lines, `{dir}` the input's directory, `;` comments), for `%(ENV_X)s` read at import.
    let dir = main.parent().unwrap();
    for line in std::fs::read_to_string(dir.join("import-env"))
        .unwrap_or_default()
        .lines()
    {
        if line.starts_with(';') {
            continue;
        }
        let (k, v) = line.split_once('=').unwrap();
        cmd.env(k, v.replace("{dir}", dir.to_str().unwrap()));
    }
    run_with_deadline(cmd, DEADLINE)
}

/// The machine-specific parts of an output made the same everywhere.
fn normalize(text: &str, out: &Path) -> String {
    text.replace(out.to_str().unwrap(), "{out}")
        .replace(inputs_dir().to_str().unwrap(), "{inputs}")
        .replace(own_dir().to_str().unwrap(), "{own}")
}

/// The `${NAME}` references of an output (not INSTANCE, INSTANCES) and its `user`s.
fn needs(files: &BTreeMap<String, String>) -> (Vec<String>, Vec<String>) {
    let mut vars = Vec::new();
    let mut users = Vec::new();
    for text in files.values() {
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let mut rest = line;
            while let Some(at) = rest.find("${") {
                let escaped = rest[..at].ends_with('$') && !rest[..at].ends_with("$$");
                let name: String = rest[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !escaped && !name.is_empty() && name != "INSTANCE" && name != "INSTANCES" {
                    vars.push(name);
                }
                rest = &rest[at + 2..];
            }
            if let Some(u) = line.strip_prefix("user = \"") {
                users.push(u.trim_end_matches('"').to_string());
            }
        }
    }
    vars.sort();
    vars.dedup();
    users.sort();
    users.dedup();
    (vars, users)
}

/// `ctrlinit check` on `conf`, with every variable it reads set, and its users present: users
/// this machine lacks (the image would have them) are added to copies of /etc/passwd and
/// /etc/group bind-mounted in a private mount namespace.
fn check_output(conf: &Path, scratch: &Path) -> Ran {
    let files = files_of(conf);
    let (vars, users) = needs(&files);
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let missing: Vec<&String> = users
        .iter()
        .filter(|u| {
            !passwd
                .lines()
                .any(|l| l.split(':').next() == Some(u.as_str()))
        })
        .collect();
    let mut cmd = if missing.is_empty() {
        Command::new(bin())
    } else {
        let mut p = passwd.clone();
        let mut g = std::fs::read_to_string("/etc/group").unwrap();
        for (i, u) in missing.iter().enumerate() {
            let id = 40_000 + i;
            p.push_str(&format!(
                "{u}:x:{id}:{id}::/nonexistent:/usr/sbin/nologin\n"
            ));
            g.push_str(&format!("{u}:x:{id}:\n"));
        }
        std::fs::write(scratch.join("passwd"), p).unwrap();
        std::fs::write(scratch.join("group"), g).unwrap();
        let mut c = Command::new("unshare");
        c.args(["--mount", "sh", "-c"]).arg(format!(
            "mount --bind {0}/passwd /etc/passwd && mount --bind {0}/group /etc/group && exec \"$@\"",
            scratch.display()
        ));
        c.args(["sh", bin()]);
        c
    };
    cmd.arg("check").arg("--config-dir").arg(conf);
    cmd.env_remove("CTRLINIT_CONFIG_DIR");
    for v in &vars {
        cmd.env(v, "1");
    }
    run_with_deadline(cmd, DEADLINE)
}

#[test]
fn every_input_imports_as_its_snapshot_and_checks() {
    let update = std::env::var_os("CTRLINIT_UPDATE_SNAPSHOTS").is_some_and(|v| v == "1");
    let cases = cases();
    assert!(
        cases.len() >= 15,
        "at least 15 real configurations: {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for (name, main) in cases.iter().chain(&own_cases()) {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let ran = import_case(main, &out);
        if ran.code != 0 {
            failures.push(format!(
                "{name}: import exited {}:\n{}",
                ran.code, ran.stderr
            ));
            continue;
        }
        let mut got = files_of(&out);
        for text in got.values_mut() {
            *text = normalize(text, &out);
        }
        got.insert("report.txt".into(), normalize(&ran.stderr, &out));
        let expected = expected_dir().join(name);
        failures.extend(snapshots::compare_or_update(name, &expected, &got, update));
        let checked = check_output(&out, tmp.path());
        if checked.code != 0 {
            failures.push(format!(
                "{name}: ctrlinit check exited {}:\n{}",
                checked.code,
                checked.all()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_input_cites_its_source() {
    for (name, main) in cases() {
        let dir = if main.parent() == Some(inputs_dir().as_path()) {
            vec![main.clone()]
        } else {
            walk(main.parent().unwrap())
        };
        for f in dir {
            let text = std::fs::read_to_string(&f).unwrap();
            let first = text.lines().next().unwrap_or("");
            assert!(
                first.starts_with("; Source: ") && text.contains("https://github.com/"),
                "{name}: {} does not start with its source",
                f.display()
            );
        }
    }
}

#[test]
fn every_own_input_says_it_was_written_here_and_what_for() {
    for (name, main) in own_cases() {
        let text = std::fs::read_to_string(&main).unwrap();
        assert!(
            text.starts_with("; Written for ctrlinit's import tests"),
            "{name}: {} does not say where it comes from",
            main.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn without_o_the_files_go_to_stdout_and_the_report_to_stderr() {
    let ran = import_in(&inputs_dir(), &["privatebin.conf"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with("# ==> nginx.toml <==\n"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("# ==> php-fpm.toml <=="),
        "{}",
        ran.stdout
    );
    assert!(!ran.stdout.contains("note:"), "notes stay on stderr");
    assert!(
        ran.stderr.contains("username: not a supervisord setting"),
        "{}",
        ran.stderr
    );
    // Each part is the TOML a file would hold.
    for part in ran.stdout.split("# ==> ").skip(1) {
        let body = part.split_once('\n').unwrap().1;
        toml::from_str::<toml::Table>(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    }
}

#[test]
fn unreadable_or_invalid_input_exits_2_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
    write(
        "syntax.conf",
        "[supervisord]\nnodaemon=true\nthis line has no equals\n",
    );
    write(
        "value.conf",
        "[program:web]\ncommand=/bin/true\nautorestart=maybe\nstartsecs=soon\n",
    );
    write(
        "expansion.conf",
        "[program:web]\ncommand=/bin/echo %(nope)s\n",
    );
    write("percent.conf", "[program:web]\ncommand=date +%Y\n");
    write("nocommand.conf", "[program:web]\nautostart=true\n");
    write("quote.conf", "[program:web]\ncommand=sh -c 'unclosed\n");
    // Python would try to pad to ten billion characters; the import once aborted on it.
    write(
        "width.conf",
        "[program:web]\ncommand=/bin/echo %(program_name)9999999999s\n",
    );
    write(
        "precision.conf",
        "[program:web]\nnumprocs=2\nprocess_name=%(program_name)s_%(process_num)d\ncommand=/bin/echo %(process_num)0.99999999999999999999d\n",
    );
    // No command, path or variable can hold a NUL byte: `check` would refuse the output.
    write(
        "nul.conf",
        "[program:web]\ncommand=/bin/echo a\u{0}b\nautostart=true\n",
    );
    for (file, says) in [
        (
            "syntax.conf",
            vec!["syntax.conf:3:", "neither a [section] nor a key = value"],
        ),
        (
            "value.conf",
            vec![
                "value.conf:3:",
                "invalid 'autorestart' value",
                "value.conf:4:",
                "not a whole number",
            ],
        ),
        (
            "expansion.conf",
            vec![
                "expansion.conf:2:",
                "%(nope)s cannot be expanded",
                "program_name",
            ],
        ),
        (
            "percent.conf",
            vec![
                "percent.conf:2:",
                "`%Y` at character 7 is not %(name)s or %%",
            ],
        ),
        (
            "nocommand.conf",
            vec!["nocommand.conf:1:", "does not specify a command"],
        ),
        ("quote.conf", vec!["quote.conf:2:", "No closing quotation"]),
        (
            "width.conf",
            vec!["width.conf:2:", "width 9999999999", "over 4096"],
        ),
        (
            "precision.conf",
            vec!["precision.conf:4:", "precision", "over 4096"],
        ),
        ("nul.conf", vec!["nul.conf:2:", "NUL byte"]),
        ("missing.conf", vec!["missing.conf", "cannot read the file"]),
    ] {
        let out = d.join(format!("out-{file}"));
        let ran = import_in(d, &[file, "-o", out.to_str().unwrap()]);
        assert_eq!(ran.code, 2, "{file}: {}", ran.all());
        for s in says {
            assert!(ran.stderr.contains(s), "{file}: {s:?} in {}", ran.stderr);
        }
        assert!(ran.stderr.contains("fix: "), "{file}: {}", ran.stderr);
        assert!(!out.exists(), "{file}: nothing written");
    }
}

#[test]
fn a_fifo_or_a_huge_file_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.conf");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let ran = import_in(dir.path(), &["fifo.conf"]);
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr.contains("a FIFO, not a regular file"),
        "{}",
        ran.stderr
    );
    let huge = dir.path().join("huge.conf");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(5 << 20).unwrap();
    let ran = import_in(dir.path(), &["huge.conf"]);
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(ran.stderr.contains("over the limit"), "{}", ran.stderr);
    // An included FIFO too.
    std::fs::write(dir.path().join("main.conf"), "[include]\nfiles = *.fifo\n").unwrap();
    nix::unistd::mkfifo(
        &dir.path().join("x.fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let ran = import_in(dir.path(), &["main.conf"]);
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(ran.stderr.contains("x.fifo"), "{}", ran.stderr);
}

#[test]
fn output_that_cannot_be_written_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let out = blocker.join("out");
    let ran = import_in(
        &inputs_dir(),
        &["privatebin.conf", "-o", out.to_str().unwrap()],
    );
    assert_eq!(ran.code, 1, "{}", ran.all());
    assert!(
        ran.stderr.contains("cannot create the directory"),
        "{}",
        ran.stderr
    );
}

#[test]
fn an_include_over_the_whole_tree_stops_at_the_walk_limit() {
    // Once walked the whole file system (past 120 s, 2.4 GB) before the file cap applied.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.conf"),
        "[program:a]\ncommand=/bin/true\n[include]\nfiles = /*/*/*/*/*/*/*/*\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let ran = import_in(dir.path(), &["main.conf", "-o", out.to_str().unwrap()]);
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(ran.stderr.contains("main.conf:4:"), "{}", ran.stderr);
    assert!(ran.stderr.contains("over the limit"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("fix: name the directories"),
        "{}",
        ran.stderr
    );
    assert!(!out.exists());
}

#[test]
fn includes_follow_supervisord_relative_sorted_and_not_nested() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("etc/conf.d")).unwrap();
    std::fs::write(
        d.join("etc/supervisord.conf"),
        "[supervisord]\nnodaemon=true\n[include]\nfiles = conf.d/*.conf nowhere/*.conf\n",
    )
    .unwrap();
    std::fs::write(
        d.join("etc/conf.d/b.conf"),
        "[program:b]\ncommand=/bin/sleep 1\n[include]\nfiles = more/*.conf\n",
    )
    .unwrap();
    std::fs::write(
        d.join("etc/conf.d/a.conf"),
        "[program:a]\ncommand=/bin/sleep %(here)s\n",
    )
    .unwrap();
    std::fs::write(
        d.join("etc/conf.d/a.conf.bak"),
        "[program:bak]\ncommand=/bin/true\n",
    )
    .unwrap();
    // From elsewhere: the patterns are relative to the including file, not the working directory.
    let out = d.join("out");
    let ran = import_in(
        Path::new("/"),
        &[
            d.join("etc/supervisord.conf").to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
    let files = files_of(&out);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["a.toml", "b.toml"],
        "{}",
        ran.stderr
    );
    let here = d.join("etc/conf.d").canonicalize().unwrap();
    assert!(
        files["a.toml"].contains(&format!("\"{}\"", d.join("etc/conf.d").display()))
            || files["a.toml"].contains(&format!("\"{}\"", here.display())),
        "%(here)s is the included file's directory: {}",
        files["a.toml"]
    );
    assert!(
        ran.stderr.contains("no file matches \"nowhere/*.conf\""),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("an included file cannot include others"),
        "{}",
        ran.stderr
    );
}

/// Copies `case` into a new directory with each `command=` line for which `stand_in` has an
/// answer replaced, imports it, and returns the temp directory and the output's path.
fn import_with_stand_ins(
    case: &str,
    stand_in: &dyn Fn(&str) -> Option<String>,
) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let src = inputs_dir().join(case);
    let copy = tmp.path().join("in");
    let files = if src.is_dir() {
        walk(&src)
    } else {
        vec![src.clone()]
    };
    for f in &files {
        let rel = if src.is_dir() {
            f.strip_prefix(&src).unwrap().to_path_buf()
        } else {
            PathBuf::from(f.file_name().unwrap())
        };
        let text = std::fs::read_to_string(f).unwrap();
        let rewritten: Vec<String> = text
            .lines()
            .map(|l| {
                let key = l.split('=').next().unwrap_or("").trim();
                match (key == "command", l.split_once('=')) {
                    (true, Some((_, cmd))) => match stand_in(cmd.trim()) {
                        Some(new) => format!("command={new}"),
                        None => l.to_string(),
                    },
                    _ => l.to_string(),
                }
            })
            .collect();
        let dest = copy.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, rewritten.join("\n") + "\n").unwrap();
    }
    let main = if src.is_dir() {
        ["supervisord.conf", "supervisor.conf"]
            .iter()
            .map(|m| copy.join(m))
            .find(|m| m.exists())
            .unwrap()
    } else {
        copy.join(case)
    };
    let out = tmp.path().join("out");
    let ran = import_in(
        tmp.path(),
        &[main.to_str().unwrap(), "-o", out.to_str().unwrap()],
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
    (tmp, out)
}

#[test]
fn imported_oneshots_run_as_supervisord_ran_them() {
    // supervisor's issue-1170b: the program's environment wins over [supervisord]'s in
    // %(ENV_FOO)s; issue-986: %% is a literal %.
    for (case, program, line) in [
        (
            "supervisor-issue-1170b.conf",
            "echo",
            "set from [program] section",
        ),
        (
            "supervisor-issue-986.conf",
            "echo",
            "dhcrelay -d -q -a %h:%p %P -i Vlan1000 192.168.0.1",
        ),
    ] {
        let (_tmp, out) = import_with_stand_ins(case, &|_| None);
        let init = init().config_dir(&out).start();
        init.wait_states(&[&format!("{program}=completed")]);
        let log = init.dir().join("log").join(format!("{program}.log"));
        assert_eq!(wait_for_lines_in(&log, 1), vec![line.to_string()], "{case}");
    }
}

#[test]
fn an_imported_numprocs_program_runs_its_instances() {
    // janyksteenbeek/docker-laravel-queue-worker: numprocs = 10; php is not installed here.
    let (_tmp, out) = import_with_stand_ins("laravel-queue-worker.conf", &|_| {
        Some(r#"sh -c "echo worker %(process_num)s of %(numprocs)d; exec sleep 1000""#.into())
    });
    let init = init().config_dir(&out).start();
    init.wait_states(&["laravel-worker=running"]);
    let names = init.program_names();
    assert_eq!(names.len(), 10, "{names:?}");
    for i in 0..10 {
        let log = init
            .dir()
            .join("log")
            .join(format!("laravel-worker-{i}.log"));
        assert_eq!(
            wait_for_lines_in(&log, 1),
            vec![format!("worker {i} of 10")]
        );
    }
    let (code, text) = init.ctl(&["stop", "laravel-worker"]);
    assert_eq!(code, 0, "{text}");
    init.wait_states(&["laravel-worker=stopped"]);
}

#[test]
fn imported_priorities_start_in_order_with_the_global_environment() {
    // readthedocs.org's contrib/supervisord.conf: redis (priority 0) before main and celery
    // (100); [supervisord] environment reaches every program.
    let (_tmp, out) = import_with_stand_ins("readthedocs-contrib.conf", &|cmd| {
        Some(if cmd.starts_with("redis") {
            r#"sh -c "echo redis $PYTHONUNBUFFERED $READTHEDOCS_INSTANCE; exec sleep 1000""#.into()
        } else {
            "sleep 1000".into()
        })
    });
    let init = init().config_dir(&out).start();
    init.wait_states(&["redis=running", "main=running", "celery=running"]);
    let lines = init.lines();
    let redis = index_of_line(&lines, "redis: stopped -> starting")
        .or_else(|| index_of_line(&lines, "redis: waiting -> starting"))
        .expect("redis started");
    for other in ["main", "celery"] {
        let at = index_of_line(&lines, &format!("{other}: waiting -> starting"))
            .unwrap_or_else(|| panic!("{other} waited for redis:\n{}", lines.join("\n")));
        assert!(redis < at, "{other} started after redis");
    }
    let log = init.dir().join("log").join("redis.log");
    assert_eq!(
        wait_for_lines_in(&log, 1),
        vec!["redis 1 readthedocs.org".to_string()]
    );
}

#[test]
fn an_imported_include_tree_runs_its_groups() {
    // webdevops/Dockerfile: supervisor.conf includes supervisor.d/*.conf, three groups; the
    // daemons and log watchers are not installed here.
    let (_tmp, out) = import_with_stand_ins("webdevops", &|_| Some("sleep 1000".into()));
    let files: Vec<String> = files_of(&out).into_keys().collect();
    assert_eq!(files, ["cron.toml", "nginx.toml", "php-fpm.toml"]);
    let init = init().config_dir(&out).start();
    init.wait_states(&[
        "php-fpmd=running",
        "php-fpm-log-fpm=running",
        "php-fpm-log-slow=running",
        "php-fpm-log-error=running",
        "php-fpm-log-access=running",
        "cron-daemon=stopped",
        "nginxd=stopped",
    ]);
    // autostart = false: started by hand, as `supervisorctl start cron:cron-daemon` did.
    let (code, text) = init.ctl(&["start", "cron-daemon"]);
    assert_eq!(code, 0, "{text}");
    init.wait_states(&["cron-daemon=running"]);
}

#[test]
fn dollar_signs_and_environment_references_survive_the_import() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.conf"),
        "[supervisord]\nnodaemon=true\n[program:price]\ncommand=sh -c \"echo 'cost: ${price} $$ %(ENV_CURRENCY)s'\"\nstartsecs=0\nautorestart=false\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let ran = import_in(dir.path(), &["s.conf", "-o", out.to_str().unwrap()]);
    assert_eq!(ran.code, 0, "{}", ran.all());
    assert!(
        ran.stderr
            .contains("reads CURRENCY from ctrlinit's environment"),
        "{}",
        ran.stderr
    );
    let init = init().config_dir(&out).env("CURRENCY", "EUR").start();
    init.wait_states(&["price=completed"]);
    let log = init.dir().join("log").join("price.log");
    assert_eq!(
        wait_for_lines_in(&log, 1),
        vec!["cost: ${price} $$ EUR".to_string()]
    );
}

#[test]
fn names_stay_apart_from_each_other_and_from_instances() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.conf"),
        "[program:web-1]\ncommand=/bin/sleep 1\n[program:web]\ncommand=/bin/sleep 1\nnumprocs=2\nprocess_name=%(program_name)s_%(process_num)s\n[program:Web]\ncommand=/bin/sleep 1\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let ran = import_in(dir.path(), &["s.conf", "-o", out.to_str().unwrap()]);
    assert_eq!(ran.code, 0, "{}", ran.all());
    assert!(
        ran.stderr.contains("[program:web-1]: named web-1-2"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("[program:Web]: named web-2"),
        "{}",
        ran.stderr
    );
    let checked = check_output(&out, dir.path());
    assert_eq!(checked.code, 0, "{}", checked.all());
    assert!(
        checked.stdout.contains("web-0") && checked.stdout.contains("web-1-2"),
        "{}",
        checked.stdout
    );
}

#[test]
fn startsecs_becomes_an_uptime_check_that_counts_quick_exits_as_failed_starts() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::write(
        dir.path().join("s.conf"),
        format!(
            "[program:flaky]\ncommand=/bin/sh -c \"echo run >> {}; exit 0\"\nstartsecs=2\nstartretries=2\n\n[program:steady]\ncommand=/bin/sleep 1000\nstartsecs=1\nautorestart=false\n",
            runs.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let ran = import_in(dir.path(), &["s.conf", "-o", out.to_str().unwrap()]);
    assert_eq!(ran.code, 0, "{}", ran.all());
    let files = files_of(&out);
    assert!(
        files["flaky.toml"].contains("ready = { uptime = \"2s\" }"),
        "{}",
        files["flaky.toml"]
    );
    assert!(
        files["steady.toml"].contains("ready = { uptime = \"1s\" }"),
        "{}",
        files["steady.toml"]
    );
    // autorestart = false: supervisord still retried failed starts; ctrlinit's "never" does not.
    assert!(
        ran.stderr
            .contains("supervisord retried a start that ended within startsecs"),
        "{}",
        ran.stderr
    );
    let init = init().config_dir(&out).start();
    // An exit 0 within startsecs was a failed start for supervisord (autorestart = unexpected
    // restarted it), and is one here: 1 + startretries runs, then FATAL's "stop".
    init.wait_states(&["flaky=stopped", "steady=running"]);
    assert_eq!(file_lines(&runs).len(), 3, "{}", init.output());
    assert_eq!(
        init.program_json("flaky")["down_reason"],
        "restart budget exhausted"
    );
}

#[test]
fn the_imported_readthedocs_redis_is_the_real_daemon_and_answers_ping() {
    // readthedocs.org's contrib/supervisord.conf runs `redis-server`: Debian's runs here as
    // imported, told only where to listen and to keep no files (a free port on the loopback, a
    // temp dir); main and celery (a Django checkout) are not installed and stand in as sleeps.
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let dir = data.path().display().to_string();
    let (_tmp, out) = import_with_stand_ins("readthedocs-contrib.conf", &|cmd| {
        Some(if cmd == "redis-server" {
            format!(
                "redis-server --port {port} --bind 127.0.0.1 --dir {dir} --save \"\" --appendonly no"
            )
        } else {
            "sleep 1000".into()
        })
    });
    let redis = std::fs::read_to_string(out.join("redis.toml")).unwrap();
    assert!(
        redis.contains(&format!(
            "command = [\"redis-server\", \"--port\", \"{port}\""
        )),
        "{redis}"
    );
    let mut init = init().config_dir(&out).start();
    init.wait_states(&["redis=running", "main=running", "celery=running"]);
    let ping = || {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "ping"]);
        run_with_deadline(cmd, Duration::from_secs(5))
    };
    let answer = wait_until("redis answers PING", DEADLINE, || {
        let ran = ping();
        (ran.stdout.trim() == "PONG").then_some(ran.stdout)
    });
    assert_eq!(answer.trim(), "PONG");
    // The program ctrlinit runs is the daemon itself (not a wrapper), as PID 1's child.
    let ns_pid = init.pid_of("redis").expect("redis has a pid") as i32;
    let pid = host_pid(&init, ns_pid).expect("redis's host pid");
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    // Debian's redis-server is a link to the one binary of its tools.
    let daemon = Path::new("/usr/bin/redis-server").canonicalize().unwrap();
    assert_eq!(exe, daemon);
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert_eq!(comm.trim(), "redis-server");
    let parent = ppid_of(pid).expect("a parent");
    let parent_ns_pid = proc_status_field(parent, "NSpid")
        .and_then(|v| v.split_whitespace().last().map(str::to_string));
    assert_eq!(
        parent_ns_pid.as_deref(),
        Some("1"),
        "ctrlinit, PID 1, is its parent"
    );
    // A graceful stop: SIGTERM, redis says goodbye and exits; the container exits 0.
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0);
    let log = file_lines(&init.dir().join("log").join("redis.log"));
    assert!(
        log.iter()
            .any(|l| l.contains("Ready to accept connections"))
            && log.iter().any(|l| l.contains("Redis is now ready to exit")),
        "{log:?}"
    );
}

#[test]
fn an_environment_variable_in_include_files_is_read_from_the_imports_environment() {
    // supervisord expands %(ENV_X)s in [include] files from its environment at start: the
    // import reads the same variable from its own, says the value it used, and refuses an
    // unset one as supervisord refuses to start.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("home/conf.d")).unwrap();
    std::fs::write(
        dir.path().join("main.conf"),
        "[supervisord]\nnodaemon=true\n\n[include]\nfiles = %(ENV_CONF_HOME)s/conf.d/*.conf\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("home/conf.d/app.conf"),
        "[program:app]\ncommand=/bin/true\n",
    )
    .unwrap();
    let home = dir.path().join("home");
    let mut cmd = Command::new(bin());
    cmd.args(["import", "main.conf"])
        .current_dir(dir.path())
        .env("CONF_HOME", &home);
    let ran = run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 0, "{}", ran.all());
    assert!(ran.stdout.contains("[program.app]"), "{}", ran.all());
    assert!(
        ran.stderr
            .contains(&format!("CONF_HOME={:?}", home.to_str().unwrap())),
        "the value used is said: {}",
        ran.stderr
    );
    let mut cmd = Command::new(bin());
    cmd.args(["import", "main.conf"])
        .current_dir(dir.path())
        .env_remove("CONF_HOME");
    let ran = run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 2, "{}", ran.all());
    for says in ["main.conf:5", "CONF_HOME, which is not set", "fix: "] {
        assert!(ran.stderr.contains(says), "{says:?} in {}", ran.stderr);
    }
}

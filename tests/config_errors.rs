//! Configuration errors through `ctrlinit check` and the init itself: every error class with its
//! message, file and line, all reported at once, exit status 2, nothing started.

mod common;

use std::path::Path;

use common::*;

/// One error class: where it is and what the message says.
struct Case {
    class: &'static str,
    file: &'static str,
    /// A substring of the line the error must point at.
    on_line: &'static str,
    /// Substrings of the error.
    says: &'static [&'static str],
}

const A: &str = r#"[init]
stop_timeout = "9s"

[program.web]
command = ["/bin/true"]
restrat = "always"

[program.typed]
command = ["/bin/true"]
autostart = 5

[program.dur]
command = ["/bin/true"]
stop_timeout = "5 parsecs"

[program.sig]
command = ["/bin/true"]
stop_signal = "SIGFOO"

[program.usr]
command = ["/bin/true"]
user = "no-such-user-ctrlinit"

[program.needy]
command = ["/bin/true"]
depends_on = ["ghost"]

[program.envy]
command = ["/bin/echo", "${CTRLINIT_TEST_UNSET_VAR}"]

[program.strict]
command = ["/bin/echo", "${CTRLINIT_TEST_REQUIRED_VAR:?set it to the db url}"]

[program.Bad_Name]
command = ["/bin/true"]

[program.a]
command = ["/bin/true"]
depends_on = ["b"]

[program.b]
command = ["/bin/true"]
depends_on = ["a"]
"#;

const B: &str = r#"[init]
exit_code = 3

[program.web]
command = ["/bin/true"]
"#;

const C: &str = r#"[program.broken
command = ["/bin/true"]
"#;

const CASES: &[Case] = &[
    Case {
        class: "unknown key",
        file: "10-a.toml",
        on_line: "restrat",
        says: &[
            "program.web.restrat: unknown key `restrat`",
            "did you mean `restart`?",
        ],
    },
    Case {
        class: "wrong type",
        file: "10-a.toml",
        on_line: "autostart = 5",
        says: &["program.typed.autostart: expected true or false, found integer"],
    },
    Case {
        class: "bad duration",
        file: "10-a.toml",
        on_line: "5 parsecs",
        says: &[
            "program.dur.stop_timeout: `5 parsecs`: unknown unit `parsecs` — use a number and a unit: 500ms, 5s, 2m, 1h",
        ],
    },
    Case {
        class: "bad signal name",
        file: "10-a.toml",
        on_line: "SIGFOO",
        says: &["program.sig.stop_signal: \"SIGFOO\" is not a signal name"],
    },
    Case {
        class: "unknown user",
        file: "10-a.toml",
        on_line: "no-such-user-ctrlinit",
        says: &["program.usr.user: unknown user \"no-such-user-ctrlinit\""],
    },
    Case {
        class: "dependency on a missing program",
        file: "10-a.toml",
        on_line: "\"ghost\"",
        says: &["`needy` depends on `ghost`, which is not defined"],
    },
    Case {
        class: "unset variable without a default",
        file: "10-a.toml",
        on_line: "CTRLINIT_TEST_UNSET_VAR",
        says: &[
            "program.envy.command[1]",
            "CTRLINIT_TEST_UNSET_VAR is not set",
        ],
    },
    Case {
        class: "required variable",
        file: "10-a.toml",
        on_line: "CTRLINIT_TEST_REQUIRED_VAR",
        says: &[
            "program.strict.command[1]",
            "CTRLINIT_TEST_REQUIRED_VAR is required: set it to the db url",
        ],
    },
    Case {
        class: "bad program name",
        file: "10-a.toml",
        on_line: "[program.Bad_Name]",
        says: &["\"Bad_Name\" is not a valid program name"],
    },
    Case {
        class: "dependency cycle",
        file: "10-a.toml",
        on_line: "[program.a]",
        says: &["dependency cycle: a -> b -> a"],
    },
    Case {
        class: "[init] twice",
        file: "20-b.toml",
        on_line: "[init]",
        says: &["[init] is defined again (first at ", "10-a.toml:1)"],
    },
    Case {
        class: "program defined twice",
        file: "20-b.toml",
        on_line: "[program.web]",
        says: &["program `web` is defined twice (first at ", "10-a.toml:4)"],
    },
    Case {
        class: "invalid TOML",
        file: "30-c.toml",
        on_line: "[program.broken",
        says: &["invalid TOML"],
    },
];

fn text_of(file: &str) -> &'static str {
    match file {
        "10-a.toml" => A,
        "20-b.toml" => B,
        _ => C,
    }
}

fn line_number(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in the config"))
        + 1
}

/// The entries of `ctrlinit check`'s report: each `error: ` line (prefix removed) with the
/// indented `fix:` line that follows it.
fn errors(stderr: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in stderr.lines() {
        if let Some(e) = line.strip_prefix("error: ") {
            out.push(e.to_string());
        } else if line.starts_with(' ')
            && let Some(last) = out.last_mut()
        {
            last.push('\n');
            last.push_str(line.trim());
        }
    }
    out
}

/// Whether `reported` holds an error at the case's file and line saying what it should.
fn is_reported(conf: &Path, case: &Case, reported: &[String]) -> bool {
    let at = format!(
        "{}:{}: ",
        conf.join(case.file).display(),
        line_number(text_of(case.file), case.on_line)
    );
    reported
        .iter()
        .any(|e| e.starts_with(&at) && case.says.iter().all(|s| e.contains(s)))
}

#[test]
fn every_error_class_is_reported_at_once_with_file_and_line() {
    let (_dir, conf) = config_dir(&[("10-a.toml", A), ("20-b.toml", B), ("30-c.toml", C)]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{ran:?}");
    let reported = errors(&ran.all());
    let missing: Vec<&str> = CASES
        .iter()
        .filter(|case| !is_reported(&conf, case, &reported))
        .map(|case| case.class)
        .collect();
    assert!(
        missing.is_empty(),
        "not reported together with the others: {missing:?}; report:\n{}",
        ran.all()
    );
    assert_eq!(reported.len(), CASES.len(), "{}", ran.all());
    assert!(
        ran.all()
            .contains(&format!("{} configuration errors:", CASES.len())),
        "{}",
        ran.all()
    );
}

/// One error class: its name, the files that show it, and what the message must contain.
type AloneCase<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);

/// Each class alone (with a valid rest), so one class cannot hide behind another.
#[test]
fn each_error_class_alone_exits_2_with_its_message() {
    let valid = "[program.ok]\ncommand = [\"/bin/true\"]\n";
    let alone: &[AloneCase] = &[
        (
            "unknown key",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\nstop_timout = \"1s\"\n",
            )],
            &[
                "a.toml:3: program.web.stop_timout: unknown key `stop_timout`",
                "did you mean `stop_timeout`?",
            ],
        ),
        (
            "unknown key in [init]",
            &[("a.toml", "[init]\nexitcode = 3\n"), ("b.toml", valid)],
            &[
                "a.toml:2: init.exitcode: unknown key `exitcode`",
                "did you mean `exit_code`?",
            ],
        ),
        (
            "wrong type",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\nmax_restarts = true\n",
            )],
            &["a.toml:3: program.web.max_restarts: expected an integer, found boolean"],
        ),
        (
            "bad duration",
            &[
                ("a.toml", "[init]\nstop_timeout = \"soon\"\n"),
                ("b.toml", valid),
            ],
            &[
                "a.toml:2: init.stop_timeout: `soon` is not a duration — use a number and a unit: 500ms, 5s, 2m, 1h",
            ],
        ),
        (
            "bad signal name",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\nstop_signal = \"TERMINATE\"\n",
            )],
            &["a.toml:3: program.web.stop_signal: \"TERMINATE\" is not a signal name"],
        ),
        (
            "unknown user",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\nuser = \"nobody-ctrlinit\"\n",
            )],
            &["a.toml:3: program.web.user: unknown user \"nobody-ctrlinit\""],
        ),
        (
            "missing dependency",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\ndepends_on = [\"db\"]\n",
            )],
            &[
                "a.toml:3: program.web.depends_on.db: `web` depends on `db`, which is not defined",
                "fix: define [program.db], or remove the dependency",
            ],
        ),
        (
            "a supervisord key by habit",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\nautorestart = true\n",
            )],
            &[
                "a.toml:3: program.web.autorestart: `autorestart` is supervisord's key; ctrlinit's for the same thing is `restart`",
                "ctrlinit import",
            ],
        ),
        (
            "missing after",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\nafter = [\"redis\"]\n",
            )],
            &[
                "a.toml:3: program.web.after.redis: `web` is ordered after `redis`, which is not defined",
            ],
        ),
        (
            "cycle across depends_on and after",
            &[(
                "a.toml",
                "[program.a]\ncommand = [\"/bin/true\"]\ndepends_on = [\"b\"]\n\n[program.b]\ncommand = [\"/bin/true\"]\nafter = [\"a\"]\n",
            )],
            &["dependency cycle: ", "(depends_on or after)"],
        ),
        (
            "misspelt dependency",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\ndepends_on = [\"postgress\"]\n[program.postgres]\ncommand = [\"/bin/true\"]\n[program.cache]\ncommand = [\"/bin/true\"]\n",
            )],
            &["fix: did you mean `postgres`? Otherwise define [program.postgress]"],
        ),
        (
            "self dependency",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\ndepends_on = [\"web\"]\n",
            )],
            &["a.toml:3: ", "dependency cycle: web -> web"],
        ),
        (
            "dependency cycle",
            &[(
                "a.toml",
                "[program.a]\ncommand = [\"/bin/true\"]\ndepends_on = [\"b\"]\n\n[program.b]\ncommand = [\"/bin/true\"]\ndepends_on = [\"a\"]\n",
            )],
            &["a.toml:1: program.a.depends_on: dependency cycle: a -> b -> a"],
        ),
        (
            "program defined twice",
            &[
                ("a.toml", valid),
                ("b.toml", "\n[program.ok]\ncommand = [\"/bin/false\"]\n"),
            ],
            &[
                "b.toml:2: program.ok: program `ok` is defined twice (first at ",
                "a.toml:1)",
            ],
        ),
        (
            "[init] twice",
            &[
                ("a.toml", "[init]\n"),
                ("b.toml", "[init]\nexit_code = 9\n"),
                ("c.toml", valid),
            ],
            &[
                "b.toml:1: init: [init] is defined again (first at ",
                "a.toml:1)",
            ],
        ),
        (
            "unset variable",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\nworkdir = \"${CTRLINIT_TEST_NO_SUCH_DIR}/x\"\n",
            )],
            &[
                "a.toml:3: program.web.workdir: environment variable CTRLINIT_TEST_NO_SUCH_DIR is not set",
            ],
        ),
        (
            "invalid TOML",
            &[("a.toml", "[program.web]\ncommand = [\"/bin/true\"\n")],
            &["a.toml:", "invalid TOML"],
        ),
        (
            "bad program name",
            &[(
                "a.toml",
                "[program.\"my app\"]\ncommand = [\"/bin/true\"]\n",
            )],
            &["a.toml:1: program.my app: \"my app\" is not a valid program name"],
        ),
        (
            "missing command",
            &[("a.toml", "[program.web]\nrestart = \"always\"\n")],
            &["a.toml:1: program.web.command: a program needs a command"],
        ),
        (
            "bad restart value",
            &[(
                "a.toml",
                "[program.web]\ncommand = [\"/bin/true\"]\nrestart = \"sometimes\"\n",
            )],
            &["a.toml:3: program.web.restart: unknown value \"sometimes\""],
        ),
    ];
    for (class, files, says) in alone {
        let (_dir, conf) = config_dir(files);
        let ran = check_config(&conf);
        assert_eq!(ran.code, 2, "{class}: {ran:?}");
        let reported = errors(&ran.all());
        assert_eq!(reported.len(), 1, "{class}: {}", ran.all());
        let e = &reported[0];
        assert!(
            e.starts_with(&conf.display().to_string()),
            "{class}: no file in {e:?}"
        );
        for s in *says {
            assert!(e.contains(s), "{class}: {s:?} not in {e:?}");
        }
    }
}

#[test]
fn a_longer_cycle_is_printed_as_a_path() {
    let (_dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.a]
command = ["/bin/true"]
depends_on = ["b"]

[program.b]
command = ["/bin/true"]
depends_on = ["c"]

[program.c]
command = ["/bin/true"]
depends_on = ["a"]

[program.d]
command = ["/bin/true"]
depends_on = ["a"]
"#,
    )]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "{ran:?}");
    let reported = errors(&ran.all());
    assert_eq!(reported.len(), 1, "{}", ran.all());
    let rotations = ["a -> b -> c -> a", "b -> c -> a -> b", "c -> a -> b -> c"];
    assert!(
        rotations
            .iter()
            .any(|r| reported[0].contains(&format!("dependency cycle: {r}"))),
        "{}",
        ran.all()
    );
    assert!(reported[0].contains("a.toml:"), "{}", ran.all());
}

#[test]
fn check_prints_the_start_order_and_starts_nothing() {
    let (dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.prov]
type = "oneshot"
command = ["/bin/sh", "-c", "touch {dir}/started"]

[program.db]
command = ["/bin/sh", "-c", "touch {dir}/started"]
depends_on = ["prov"]
ready = { file = "{dir}/db.ready" }

[program.cache]
command = ["/bin/sh", "-c", "touch {dir}/started"]
depends_on = ["prov"]

[program.api]
command = ["/bin/sh", "-c", "touch {dir}/started"]
depends_on = { db = "ready", cache = { condition = "started", restart = true } }
"#,
    )]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 0, "{ran:?}");
    let lines: Vec<String> = ran.stdout.lines().map(str::to_string).collect();
    let at = |name: &str| {
        index_of_line(&lines, &format!(" {name} ("))
            .unwrap_or_else(|| panic!("{name} not in:\n{}", ran.stdout))
    };
    let (prov, db, cache, api) = (at("prov"), at("db"), at("cache"), at("api"));
    assert!(
        prov < db && prov < cache && db < api && cache < api,
        "{}",
        ran.stdout
    );
    // Steps: prov alone first, db and cache together, then api.
    assert!(lines[prov].contains("1."), "{}", ran.stdout);
    assert!(lines[db.min(cache)].contains("2."), "{}", ran.stdout);
    assert!(!lines[db.max(cache)].contains("3."), "{}", ran.stdout);
    assert!(lines[api].contains("3."), "{}", ran.stdout);
    // What each waits for.
    assert!(
        lines[api].contains("db") && lines[api].contains("cache"),
        "{}",
        ran.stdout
    );
    assert!(lines[db].contains("prov"), "{}", ran.stdout);
    assert!(
        !dir.path().join("started").exists(),
        "check started a program"
    );
}

#[test]
fn after_orders_the_start_in_check_and_graph() {
    let (_dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.redis]
command = ["/bin/true"]

[program.aworker]
command = ["/bin/true"]
after = ["redis"]
"#,
    )]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 0, "{ran:?}");
    let worker = ran
        .stdout
        .lines()
        .find(|l| l.contains(" aworker ("))
        .unwrap();
    assert!(
        worker.contains("2.") && worker.contains("after: redis"),
        "{}",
        ran.stdout
    );
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["--socket", "/nonexistent/sock", "--config-dir"])
        .arg(&conf)
        .arg("graph");
    let ran = run_with_deadline(cmd, DEADLINE);
    assert!(
        ran.stdout
            .contains("\"redis\" -> \"aworker\" [label=\"after\", style=dashed];"),
        "{}",
        ran.all()
    );
}

#[test]
fn check_with_a_double_dash_command_needs_no_config_dir() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("check")
        .arg("--config-dir")
        .arg(&missing)
        .args(["--", "/bin/true"]);
    let ran = run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("main"), "{ran:?}");
    // Without one, a missing directory is an error.
    let ran = check_config(&missing);
    assert_eq!(ran.code, 2, "{ran:?}");
    assert!(
        ran.all().contains("cannot read the config directory"),
        "{ran:?}"
    );
}

#[test]
fn the_init_with_an_invalid_config_exits_2_and_starts_nothing() {
    // Run directly (not through `init()`, which waits to see ctrlinit alive in its namespace:
    // here it exits at once).
    let (dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.fine]
command = ["/bin/sh", "-c", "touch {dir}/started; exec sleep 1000"]

[program.broken]
command = ["/bin/true"]
stop_timeout = "forever"
"#,
    )]);
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child"])
        .arg(bin())
        .arg("--config-dir")
        .arg(&conf)
        .env("CTRLINIT_LOG", "debug")
        .env("CTRLINIT_SOCKET", dir.path().join("ctrlinit.sock"));
    let ran = run_with_deadline(cmd, DEADLINE);
    let out = ran.all();
    assert_eq!(ran.code, 2, "{out}");
    assert!(out.contains("not starting anything"), "{out}");
    assert!(out.contains("program.broken.stop_timeout"), "{out}");
    assert!(!dir.path().join("started").exists());
    assert!(!out.contains("starting ->"), "{out}");
}

#[test]
fn check_warns_about_commands_that_cannot_run_and_strict_makes_them_errors() {
    let (_dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.ghost]
command = ["/nonexistent/ghost", "--flag"]

[program.noexec]
command = ["{dir}/conf.d/a.toml"]

[program.nowhere]
command = ["no-such-program-anywhere"]

[program.fine]
command = ["sleep", "1"]
finish = ["/nonexistent/hook"]
"#,
    )]);
    let ran = check_config(&conf);
    assert_eq!(ran.code, 0, "warnings only: {ran:?}");
    for says in [
        "a.toml:2: program.ghost.command: \"/nonexistent/ghost\" does not exist; it will fail to start (exit status 127)",
        "fix: install it in the image, or correct program.ghost.command",
        "a.toml:5: program.noexec.command:",
        "is not executable (no x bit); it will fail to start (exit status 126)",
        "a.toml:8: program.nowhere.command: \"no-such-program-anywhere\" is on no directory of PATH",
        "a.toml:11: program.fine.finish: \"/nonexistent/hook\" does not exist",
    ] {
        assert!(
            ran.stdout.contains(says),
            "{says:?} not in:\n{}",
            ran.stdout
        );
    }
    assert!(
        !ran.stdout.contains("program.fine.command"),
        "{}",
        ran.stdout
    );
    let strict = check_config_with(&conf, &["--strict"]);
    assert_eq!(strict.code, 2, "{strict:?}");
    assert!(
        strict
            .stderr
            .contains("4 problems (an error with --strict):")
            && strict.stderr.contains("a.toml:2: program.ghost.command:"),
        "{}",
        strict.stderr
    );
}

#[test]
fn strict_check_looks_at_the_script_an_interpreter_is_given() {
    let (dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.imported]
command = ["bash", "/etc/s6-overlay/s6-rc.d/svc-gone/run"]

[program.python]
command = ["python3", "-u", "{dir}/missing.py"]

[program.inline]
command = ["/bin/sh", "-c", "exec sleep 1"]

[program.present]
command = ["sh", "{dir}/there.sh"]
"#,
    )]);
    // A script an interpreter reads needs no x bit.
    std::fs::write(dir.path().join("there.sh"), "exec sleep 1\n").unwrap();
    let strict = check_config_with(&conf, &["--strict"]);
    assert_eq!(strict.code, 2, "{strict:?}");
    for says in [
        "a.toml:2: program.imported.command: \"bash\" is given the script \"/etc/s6-overlay/s6-rc.d/svc-gone/run\", which does not exist; it will fail to start",
        "program.python.command: \"python3\" is given the script",
        "2 problems (an error with --strict):",
    ] {
        assert!(
            strict.stderr.contains(says),
            "{says:?} not in:\n{}",
            strict.stderr
        );
    }
    assert!(
        !strict.stderr.contains("program.inline"),
        "{}",
        strict.stderr
    );
    assert!(
        !strict.stderr.contains("program.present"),
        "{}",
        strict.stderr
    );
}

#[test]
fn check_build_takes_unset_variables_as_notes_and_stop_budgets_are_warned_about() {
    let (_dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.api]
command = ["/bin/sleep", "${API_PORT_H_DROPIN}"]
stop_timeout = "10s"

[program.db]
command = ["/bin/true"]
stop_timeout = "5s"

[program.web]
command = ["/bin/true"]
depends_on = ["db"]
stop_timeout = "6s"
"#,
    )]);
    // Where the image is built, the container's variables are not there: a note, not an error.
    let ran = check_config(&conf);
    assert_eq!(ran.code, 2, "without --build it is an error: {ran:?}");
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["check", "--build", "--config-dir"]).arg(&conf);
    let ran = run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(
        ran.stdout.contains("note: ")
            && ran.stdout.contains("a.toml:3: program.api.command[1]: environment variable API_PORT_H_DROPIN is not set")
            && ran.stdout.contains("checked at start"),
        "{}",
        ran.stdout
    );
    // A program alone, and a chain along the stop order (web stops, then db), over 9 s.
    assert!(
        ran.stdout.contains("warning: program.api.stop_timeout 10s: more than the container's stop budget ([init] stop_timeout 9s)"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains(
            "stopping web 6s then db 5s one after the other (the stop order) takes up to 11s"
        ),
        "{}",
        ran.stdout
    );
}

#[test]
fn links_that_lead_nowhere_are_warnings_check_prints() {
    let (dir, conf) = config_dir(&[("a.toml", "[program.ok]\ncommand = [\"/bin/true\"]\n")]);
    std::os::unix::fs::symlink(dir.path().join("gone.toml"), conf.join("b-dangling.toml")).unwrap();
    std::os::unix::fs::symlink(conf.join("c-loop.toml"), conf.join("c-loop.toml")).unwrap();
    // A link to a real file is read as the file (a Kubernetes ConfigMap is mounted so).
    std::fs::write(
        dir.path().join("real.toml"),
        "[program.linked]\ncommand = [\"/bin/true\"]\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("real.toml"), conf.join("d-linked.toml")).unwrap();
    let ran = check_config(&conf);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(
        ran.stdout.contains("b-dangling.toml is a symbolic link to")
            && ran.stdout.contains("which does not exist; skipped"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("c-loop.toml is a symbolic link that loops; skipped"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("linked (service)"), "{}", ran.stdout);
}

#[test]
fn interpolation_errors_say_what_and_where() {
    for (value, says) in [
        (
            r#""${NEEDED:?}""#,
            "environment variable NEEDED is required (${NEEDED:?}) and is not set or empty",
        ),
        (
            r#""x ${PORT""#,
            "the `${` at column 3 of the value is never closed",
        ),
    ] {
        let text = format!("[program.web]\ncommand = [\"/bin/echo\", {value}]\n");
        let (_dir, conf) = config_dir(&[("a.toml", &text)]);
        let ran = check_config(&conf);
        assert_eq!(ran.code, 2, "{ran:?}");
        assert!(
            ran.stderr.contains("a.toml:2: program.web.command[1]: ") && ran.stderr.contains(says),
            "{says:?} not in {}",
            ran.stderr
        );
    }
}

#[test]
fn strict_check_reads_the_interpreter_a_script_names_and_says_how_to_run_it() {
    let (dir, conf) = config_dir(&[(
        "a.toml",
        r#"
[program.contenv]
command = ["{dir}/start.sh", "--port", "8080"]

[program.lost]
command = ["{dir}/lost.sh"]

[program.fine]
command = ["{dir}/fine.sh"]
"#,
    )]);
    let script = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    };
    // Left by an image that moved off s6-overlay: execve finds no /usr/bin/with-contenv.
    script("start.sh", "#!/usr/bin/with-contenv bash\nexec sleep 1\n");
    script("lost.sh", "#!/opt/nowhere/bin/sh\nexec sleep 1\n");
    script("fine.sh", "#!/bin/sh\nexec sleep 1\n");
    let strict = check_config_with(&conf, &["--strict"]);
    assert_eq!(strict.code, 2, "{strict:?}");
    let start = dir.path().join("start.sh");
    for says in [
        format!(
            "program.contenv.command: {start:?} starts with #!/usr/bin/with-contenv, s6-overlay's, which this image does not have: run it through its interpreter, as [\"bash\", {start:?}]; it will fail to start (exit status 127)"
        ),
        "program.lost.command:".to_string(),
        "starts with #!/opt/nowhere/bin/sh, which does not exist".to_string(),
        "2 problems (an error with --strict):".to_string(),
    ] {
        assert!(
            strict.stderr.contains(&says),
            "{says:?} not in:\n{}",
            strict.stderr
        );
    }
    assert!(!strict.stderr.contains("program.fine"), "{}", strict.stderr);
}

//! `ctrlinit import --from s6-overlay ROOT` (issue 23, part 4) on real s6-overlay layouts from
//! public projects (`tests/import/s6/inputs/`, each cited in `tests/import/s6/README.md`: the
//! linuxserver.io base images, v3 and v2; just-containers/s6-overlay's syslogd overlay and its
//! README's examples; a Home Assistant store add-on's v2 services) and one written here for
//! what they lack (`tests/import/s6/own/`). Every layout imports (exit 0) to what
//! `tests/import/s6/expected/` holds (`CTRLINIT_UPDATE_SNAPSHOTS=1` rewrites it), `ctrlinit
//! check` accepts the output, and some run for real under ctrlinit as PID 1, in s6-overlay's
//! order. Input that cannot be read safely is refused or reported, never a panic.

mod common;
#[path = "common/snapshots.rs"]
mod snapshots;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use snapshots::files_of;

fn base() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import/s6")
}

/// Every layout: (snapshot name, directory holding it, its name there).
fn cases() -> Vec<(String, PathBuf, String)> {
    let mut out = Vec::new();
    for (group, prefix) in [("inputs", ""), ("own", "own-")] {
        let dir = base().join(group);
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.path().is_dir() {
                let name = e.file_name().to_string_lossy().into_owned();
                out.push((format!("{prefix}{name}"), dir.clone(), name));
            }
        }
    }
    out.sort();
    out
}

/// `ctrlinit import ARGS` in `cwd`.
fn import_in(cwd: &Path, args: &[&str]) -> Ran {
    let mut cmd = Command::new(bin());
    cmd.arg("import").args(args).current_dir(cwd);
    run_with_deadline(cmd, DEADLINE)
}

/// Imports the layout `root` (relative to `cwd`) into `out`.
fn import_s6(cwd: &Path, root: &str, out: &Path) -> Ran {
    import_in(
        cwd,
        &["--from", "s6-overlay", root, "-o", out.to_str().unwrap()],
    )
}

fn check(conf: &Path) -> Ran {
    let mut cmd = Command::new(bin());
    cmd.arg("check").arg("--config-dir").arg(conf);
    cmd.env_remove("CTRLINIT_CONFIG_DIR");
    run_with_deadline(cmd, DEADLINE)
}

#[test]
fn every_layout_imports_as_its_snapshot_and_checks() {
    let update = std::env::var_os("CTRLINIT_UPDATE_SNAPSHOTS").is_some_and(|v| v == "1");
    let cases = cases();
    assert!(cases.len() >= 6, "{cases:?}");
    let mut failures = Vec::new();
    for (name, dir, root) in &cases {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let ran = import_s6(dir, root, &out);
        if ran.code != 0 {
            failures.push(format!(
                "{name}: import exited {}:\n{}",
                ran.code, ran.stderr
            ));
            continue;
        }
        let mut got = files_of(&out);
        got.insert(
            "report.txt".into(),
            ran.stderr.replace(out.to_str().unwrap(), "{out}"),
        );
        let expected = base().join("expected").join(name);
        failures.extend(snapshots::compare_or_update(name, &expected, &got, update));
        let checked = check(&out);
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
fn every_real_layout_is_cited_with_repository_path_and_commit() {
    let readme = std::fs::read_to_string(base().join("README.md")).unwrap();
    for (name, _, root) in cases().into_iter().filter(|c| !c.0.starts_with("own-")) {
        let section = readme
            .split("\n## ")
            .find(|s| s.starts_with(&format!("`{root}`")))
            .unwrap_or_else(|| {
                panic!("{name} has no `## `{root}`` section in tests/import/s6/README.md")
            });
        assert!(
            section.contains("https://github.com/")
                && section.contains("/tree/")
                && section.contains("commit "),
            "{name}: its section cites no repository, path and commit:\n{section}"
        );
    }
}

/// Copies `src` into `dst` (modes kept), applying `edit` to each file's text.
fn copy_tree(src: &Path, dst: &Path, edit: &dyn Fn(&Path, String) -> String) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let (from, to) = (e.path(), dst.join(e.file_name()));
        if from.is_dir() {
            copy_tree(&from, &to, edit);
        } else {
            let text = std::fs::read_to_string(&from).unwrap();
            std::fs::write(&to, edit(&from, text)).unwrap();
            std::fs::set_permissions(&to, std::fs::metadata(&from).unwrap().permissions()).unwrap();
        }
    }
}

/// The layout `root` imported from a copy placed at `<tmp>/image` (scripts edited by `edit`),
/// its image paths then pointed at the copy, as if `<tmp>/image` were the image's root.
fn imported_copy(
    dir: &Path,
    root: &str,
    edit: &dyn Fn(&Path, String) -> String,
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("image");
    copy_tree(&dir.join(root), &image, edit);
    let out = tmp.path().join("out");
    let ran = import_s6(tmp.path(), "image", &out);
    assert_eq!(ran.code, 0, "{}", ran.all());
    let prefix = image.to_str().unwrap();
    for (f, text) in files_of(&out) {
        let text = text
            .replace("\"/etc/", &format!("\"{prefix}/etc/"))
            .replace(" /etc/", &format!(" {prefix}/etc/"));
        std::fs::write(out.join(f), text).unwrap();
    }
    (tmp, image, out)
}

#[test]
fn an_imported_layout_runs_in_s6_overlays_order_up_and_down() {
    // tests/import/s6/own/features: cont-init.d, a services.d service with notification-fd,
    // down-signal, timeout-kill and a finish script, one with a down file, s6-rc longruns and a
    // oneshot with a down script in a bundle, a oneshot marker, a longrun outside the user
    // bundle, and cont-finish.d. Each script appends a line to $OUT.
    let (tmp, _image, out) = imported_copy(&base().join("own"), "features", &|_, t| t);
    let facts = tmp.path().join("facts");
    let mut init = init()
        .config_dir(&out)
        .env("OUT", facts.to_str().unwrap())
        .start();
    init.wait_states(&[
        "00-hello=completed",
        "db=running",
        "migrate=completed",
        "app=running",
        "ticker=running",
        "idle=stopped",
        "extra=stopped",
        "cont-finish=running",
    ]);
    assert_eq!(
        wait_for_lines_in(&facts, 4),
        ["hello", "db ready", "migrate", "ticker"],
        "up in s6-overlay's order: cont-init.d, the user bundle by its dependencies (db ready by its notification fd before migrate), then services.d"
    );
    // execline's `export APP_MODE demo` and `cd /` became env and workdir.
    let ns_pid = init.pid_of("app").expect("app runs") as i32;
    let pid = host_pid(&init, ns_pid).expect("app's host pid");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    assert!(
        environ.split(|&b| b == 0).any(|v| v == b"APP_MODE=demo"),
        "app's environment has APP_MODE=demo"
    );
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        Path::new("/")
    );
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert_eq!(
        comm.trim(),
        "sleep",
        "the chain's program itself, no execlineb"
    );
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0, "{}", init.output());
    let lines = file_lines(&facts);
    let at = |l: &str| line_at(&lines, l);
    // ticker's down-signal is SIGINT: its finish script got s6's arguments, 256 and 2.
    assert!(at("ticker finished 256 2") > at("ticker"), "{lines:?}");
    // Down in reverse: migrate's down before db stops, cont-finish.d last of all.
    assert!(at("unmigrate") < at("db stopped"), "{lines:?}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("goodbye"),
        "{lines:?}"
    );
}

#[test]
fn restarting_the_shutdown_carriers_by_hand_takes_no_program_along() {
    // cont-finish and migrate-down are ordered (`after`), not depended on: restarting them runs
    // their scripts and leaves every other program as it was.
    let (tmp, _image, out) = imported_copy(&base().join("own"), "features", &|_, t| t);
    let facts = tmp.path().join("facts");
    let mut init = init()
        .config_dir(&out)
        .env("OUT", facts.to_str().unwrap())
        .start();
    let up = ["db=running", "app=running", "ticker=running"];
    init.wait_states(&up);
    init.wait_states(&["cont-finish=running", "migrate-down=running"]);
    let before: Vec<_> = ["db", "app", "ticker"].map(|p| init.pid_of(p)).into();
    for carrier in ["cont-finish", "migrate-down"] {
        let (code, said) = init.ctl(&["restart", carrier]);
        assert_eq!(code, 0, "{said}");
    }
    init.wait_states(&["cont-finish=running", "migrate-down=running"]);
    wait_for_file_line(&facts, "goodbye");
    wait_for_file_line(&facts, "unmigrate");
    let after: Vec<_> = ["db", "app", "ticker"].map(|p| init.pid_of(p)).into();
    assert_eq!(
        before, after,
        "db, app and ticker kept running as they were"
    );
    init.wait_states(&up);
    init.signal("TERM");
    assert_eq!(init.wait_exit(DEADLINE), 0, "{}", init.output());
}

/// Waits until `path` has the line `line`.
fn wait_for_file_line(path: &Path, line: &str) {
    wait_until(line, DEADLINE, || {
        std::fs::read_to_string(path)
            .ok()?
            .lines()
            .any(|l| l == line)
            .then_some(())
    });
}

#[test]
fn the_linuxserver_v3_base_image_boots_its_init_chain_in_order() {
    // linuxserver/docker-baseimage-alpine and -alpine-nginx's s6-rc.d as the image merges
    // them. Their scripts configure a real image (users, /config, nginx): here each says its
    // name instead, and the services sleep; the graph, the up files and the bundles are theirs.
    let edit = |path: &Path, text: String| -> String {
        let name = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if path.file_name().is_some_and(|f| f == "run") {
            let shebang = text.lines().next().unwrap_or("#!/bin/sh").to_string();
            if name.starts_with("svc-") {
                return format!("{shebang}\necho {name} >> \"$OUT\"\nexec sleep 1000\n");
            }
            return format!("{shebang}\necho {name} >> \"$OUT\"\n");
        }
        text
    };
    let (tmp, image, out) = imported_copy(&base().join("inputs"), "lsio-alpine-nginx-v3", &edit);
    // docker-mods adds this script at build time; the layout names it.
    let added = image.join("etc/s6-overlay/s6-rc.d/init-mods-package-install/run");
    std::fs::write(
        &added,
        "#!/bin/sh\necho init-mods-package-install >> \"$OUT\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&added, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let facts = tmp.path().join("facts");
    let init = init()
        .config_dir(&out)
        .env("OUT", facts.to_str().unwrap())
        .start();
    init.wait_states(&[
        "ci-service-check=completed",
        "svc-nginx=running",
        "svc-php-fpm=running",
        "svc-cron=running",
    ]);
    let lines = file_lines(&facts);
    let at = |l: &str| line_at(&lines, l);
    let chain = [
        "init-adduser",
        "init-device-perms",
        "init-folders",
        "init-samples",
        "init-nginx",
        "init-php",
        "init-keygen",
        "init-permissions",
        "init-version-checks",
        "init-crontab-config",
        "init-mods-package-install",
        "init-custom-files",
    ];
    for pair in chain.windows(2) {
        assert!(
            at(pair[0]) < at(pair[1]),
            "{} before {}: {lines:?}",
            pair[0],
            pair[1]
        );
    }
    assert!(at("init-migrations") < at("init-adduser") && at("init-envfile") < at("init-folders"));
    for svc in ["svc-cron", "svc-nginx", "svc-php-fpm"] {
        assert!(at("init-custom-files") < at(svc), "{svc}: {lines:?}");
    }
    // user2's ci-service-check (depends on legacy-services) ends the boot, as its echo says.
    init.wait_for_line("[ls.io-init] done.");
}

#[test]
fn the_linuxserver_v2_image_runs_cont_init_d_in_name_order_then_its_services() {
    // linuxserver/docker-baseimage-alpine-nginx before v3: seven cont-init.d scripts and three
    // services.d services, all `#!/usr/bin/with-contenv bash`. Each script says its name
    // instead of configuring the image; the services sleep.
    let edit = |path: &Path, text: String| -> String {
        let shebang = text.lines().next().unwrap_or("#!/bin/sh").to_string();
        let in_services = path
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .ends_with("services.d");
        if in_services {
            let name = path
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            return format!("{shebang}\necho {name} >> \"$OUT\"\nexec sleep 1000\n");
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        format!("{shebang}\necho {name} >> \"$OUT\"\n")
    };
    let (tmp, _image, out) = imported_copy(&base().join("inputs"), "lsio-alpine-nginx-v2", &edit);
    let facts = tmp.path().join("facts");
    let init = init()
        .config_dir(&out)
        .env("OUT", facts.to_str().unwrap())
        .start();
    init.wait_states(&["nginx=running", "php-fpm=running", "cron=running"]);
    let lines = wait_for_lines_in(&facts, 10);
    let scripts = [
        "11-folders",
        "12-samples",
        "13-nginx",
        "14-php",
        "15-keygen",
        "20-permissions",
        "85-version-checks",
    ];
    assert_eq!(
        lines[..7],
        scripts,
        "cont-init.d one after another, in name order"
    );
    let mut services = lines[7..].to_vec();
    services.sort();
    assert_eq!(services, ["cron", "nginx", "php-fpm"], "then services.d");
}

#[test]
fn a_failing_cont_init_d_script_runs_once_and_stops_the_container() {
    // What the import writes for S6_BEHAVIOUR_IF_STAGE2_FAILS: run once, stop on failure.
    let src = tempfile::tempdir().unwrap();
    let etc = src.path().join("fail/etc");
    std::fs::create_dir_all(etc.join("cont-init.d")).unwrap();
    std::fs::create_dir_all(etc.join("services.d/web")).unwrap();
    for (file, text) in [
        (
            "cont-init.d/10-fail",
            "#!/bin/sh\necho run >> \"$OUT\"\nexit 3\n",
        ),
        ("services.d/web/run", "#!/bin/sh\nexec sleep 1000\n"),
    ] {
        std::fs::write(etc.join(file), text).unwrap();
        std::fs::set_permissions(
            etc.join(file),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    let (tmp, _image, out) = imported_copy(src.path(), "fail", &|_, t| t);
    let facts = tmp.path().join("facts");
    let mut init = init()
        .config_dir(&out)
        .env("OUT", facts.to_str().unwrap())
        .start();
    assert_eq!(init.wait_exit(DEADLINE), 75, "{}", init.output());
    assert!(
        init.output().contains("10-fail: starting -> exhausted"),
        "{}",
        init.output()
    );
    assert_eq!(file_lines(&facts), ["run"], "once");
    assert!(
        !init.output().contains("web: waiting -> starting"),
        "web never started"
    );
}

/// Where line `l` is in `lines` (it must be there).
fn line_at(lines: &[String], l: &str) -> usize {
    lines
        .iter()
        .position(|x| x == l)
        .unwrap_or_else(|| panic!("{l:?} in {lines:?}"))
}

#[test]
fn the_supervisord_import_is_still_the_default_and_can_be_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.conf"),
        "[program:web]\ncommand=/bin/sleep 1\n",
    )
    .unwrap();
    for args in [&["s.conf"][..], &["--from", "supervisord", "s.conf"][..]] {
        let ran = import_in(dir.path(), args);
        assert_eq!(ran.code, 0, "{args:?}: {}", ran.all());
        assert!(ran.stdout.contains("[program.web]"), "{}", ran.stdout);
    }
}

#[test]
fn unsafe_or_unreadable_layouts_are_refused_or_reported_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // No layout at all.
    std::fs::create_dir_all(d.join("empty/etc")).unwrap();
    let ran = import_s6(d, "empty", &d.join("o1"));
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr.contains("no s6-overlay layout here"),
        "{}",
        ran.stderr
    );
    // A run script that is a link out of ROOT is refused, with the file; nothing written.
    std::fs::write(d.join("secret"), "#!/bin/sh\n").unwrap();
    let svc = d.join("escape/etc/services.d/web");
    std::fs::create_dir_all(&svc).unwrap();
    std::os::unix::fs::symlink("../../../../secret", svc.join("run")).unwrap();
    let ran = import_s6(d, "escape", &d.join("o2"));
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr.contains("escape/etc/services.d/web/run")
            && ran.stderr.contains("climbs above ROOT"),
        "{}",
        ran.stderr
    );
    assert!(!d.join("o2").exists());
    // A type s6-rc would refuse, and a notification-fd that is no number: each at its file.
    let rc = d.join("bad/etc/s6-overlay/s6-rc.d");
    std::fs::create_dir_all(rc.join("a")).unwrap();
    std::fs::write(rc.join("a/type"), "daemon\n").unwrap();
    std::fs::create_dir_all(rc.join("b")).unwrap();
    std::fs::write(rc.join("b/type"), "longrun\n").unwrap();
    std::fs::write(rc.join("b/run"), "#!/bin/sh\nexec sleep 1\n").unwrap();
    std::fs::write(rc.join("b/notification-fd"), "three\n").unwrap();
    let ran = import_s6(d, "bad", &d.join("o3"));
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr.contains(
            "bad/etc/s6-overlay/s6-rc.d/a/type:1: \"daemon\" is not an s6-rc service type"
        ),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("bad/etc/s6-overlay/s6-rc.d/b/notification-fd:1:"),
        "{}",
        ran.stderr
    );
    // A binary run script, a Latin-1 one and a name that is not UTF-8: imported, each said.
    let v2 = d.join("odd/etc/services.d");
    for (name, bytes) in [
        ("bin", &b"\x7fELF\0\0"[..]),
        ("latin", &b"#!/bin/sh\necho caf\xe9\n"[..]),
    ] {
        std::fs::create_dir_all(v2.join(name)).unwrap();
        std::fs::write(v2.join(name).join("run"), bytes).unwrap();
    }
    let odd = std::ffi::OsStr::from_bytes_s6(b"caf\xe9");
    std::fs::create_dir_all(v2.join(odd)).unwrap();
    let ran = import_s6(d, "odd", &d.join("o4"));
    assert_eq!(ran.code, 0, "{}", ran.all());
    for says in [
        "odd/etc/services.d/bin/run:1: script: it holds a NUL byte",
        "odd/etc/services.d/latin/run:1: script: it is not UTF-8 text",
        "is not a UTF-8 name: left out",
    ] {
        assert!(ran.stderr.contains(says), "{says:?} in {}", ran.stderr);
    }
}

/// `OsStr::from_bytes` under a name of its own (the trait is Unix's).
trait FromBytes {
    fn from_bytes_s6(b: &[u8]) -> &std::ffi::OsStr;
}

impl FromBytes for std::ffi::OsStr {
    fn from_bytes_s6(b: &[u8]) -> &std::ffi::OsStr {
        std::os::unix::ffi::OsStrExt::from_bytes(b)
    }
}

#[test]
fn a_layout_too_big_to_read_is_refused_with_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("big/etc/cont-init.d");
    std::fs::create_dir_all(&d).unwrap();
    for i in 0..1001 {
        std::fs::write(d.join(format!("{i:04}")), "#!/bin/sh\n").unwrap();
    }
    let ran = import_s6(dir.path(), "big", &dir.path().join("o"));
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr.contains("1001 names in this directory")
            && ran.stderr.contains("1000 a directory"),
        "{}",
        ran.all()
    );
    let f = std::fs::File::create(dir.path().join("huge-run")).unwrap();
    f.set_len(1 << 20).unwrap();
    let svc = dir.path().join("huge/etc/services.d/web");
    std::fs::create_dir_all(&svc).unwrap();
    std::fs::rename(dir.path().join("huge-run"), svc.join("run")).unwrap();
    let ran = import_s6(dir.path(), "huge", &dir.path().join("o2"));
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(ran.stderr.contains("over the limit"), "{}", ran.stderr);
}

/// Writes an s6-rc longrun `name` under `rc` that depends on `deps`.
fn longrun(rc: &Path, name: &str, deps: &[&str]) {
    let d = rc.join(name);
    std::fs::create_dir_all(d.join("dependencies.d")).unwrap();
    std::fs::write(d.join("type"), "longrun\n").unwrap();
    std::fs::write(d.join("run"), "#!/bin/sh\nexec sleep 1000\n").unwrap();
    for dep in deps {
        std::fs::write(d.join("dependencies.d").join(dep), "").unwrap();
    }
}

#[test]
fn a_dependency_cycle_or_a_bundle_holding_itself_is_refused_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rc = d.join("cycle/etc/s6-overlay/s6-rc.d");
    longrun(&rc, "a", &["b"]);
    longrun(&rc, "b", &["a"]);
    longrun(&rc, "c", &["a"]);
    std::fs::create_dir_all(rc.join("user/contents.d")).unwrap();
    std::fs::write(rc.join("user/type"), "bundle\n").unwrap();
    std::fs::write(rc.join("user/contents.d/c"), "").unwrap();
    let ran = import_s6(d, "cycle", &d.join("o1"));
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr.contains("cycle/etc/s6-overlay/s6-rc.d/a")
            && ran.stderr.contains("a dependency cycle (a -> b -> a)"),
        "{}",
        ran.stderr
    );
    assert!(!d.join("o1").exists(), "nothing is written");
    // A bundle that holds itself through another.
    let rc = d.join("bundle/etc/s6-overlay/s6-rc.d");
    longrun(&rc, "web", &[]);
    for (name, holds) in [
        ("user", "web"),
        ("user", "grp"),
        ("grp", "inner"),
        ("inner", "grp"),
    ] {
        std::fs::create_dir_all(rc.join(name).join("contents.d")).unwrap();
        std::fs::write(rc.join(name).join("type"), "bundle\n").unwrap();
        std::fs::write(rc.join(name).join("contents.d").join(holds), "").unwrap();
    }
    let ran = import_s6(d, "bundle", &d.join("o2"));
    assert_eq!(ran.code, 2, "{}", ran.all());
    assert!(
        ran.stderr
            .contains("the bundle grp contains itself (grp -> inner -> grp)"),
        "{}",
        ran.stderr
    );
    assert!(!d.join("o2").exists(), "nothing is written");
}

#[test]
fn more_services_than_the_directory_cap_are_refused_with_the_count_and_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let rc = dir.path().join("many/etc/s6-overlay/s6-rc.d");
    for i in 0..1500 {
        longrun(&rc, &format!("svc{i:04}"), &[]);
    }
    let ran = import_s6(dir.path(), "many", &dir.path().join("o"));
    assert_eq!(ran.code, 2, "{}", ran.all());
    for says in [
        "many/etc/s6-overlay/s6-rc.d",
        "1500 names in this directory",
        "1000 a directory",
        "remove what the image does not run",
    ] {
        assert!(ran.stderr.contains(says), "{says:?} in {}", ran.stderr);
    }
    assert!(!dir.path().join("o").exists(), "nothing is written");
}

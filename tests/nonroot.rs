//! ctrlinit as a non-root PID 1 (`setpriv` to nobody inside a fresh PID namespace): programs run
//! as itself, and `user`/`group` other than its own are a config error (exit 2).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::*;

const NOBODY: &str = "65534";

/// A config dir nobody can read, with `{dir}/out` nobody can write.
fn nobody_config(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, conf) = config_dir(files);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    (dir, conf)
}

fn as_nobody(cmd: &mut Command) -> &mut Command {
    cmd.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
    ])
}

/// Runs `ctrlinit --config-dir CONF ARGS…` as nobody, as PID 1 of a new PID namespace.
fn run_init_as_nobody(dir: &Path, conf: &Path, args: &[&str]) -> Ran {
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child", "setpriv"]);
    as_nobody(&mut cmd)
        .arg(bin())
        .arg("--config-dir")
        .arg(conf)
        .args(args)
        .env("CTRLINIT_LOG", "debug")
        .env("CTRLINIT_SOCKET", dir.join("out/ctrlinit.sock"))
        // The default /var/log/ctrlinit and /var/crash/ctrlinit are root's: as for an image
        // run as another user, the directories are given.
        .env("CTRLINIT_LOG_DIR", dir.join("out/log"))
        .env("CTRLINIT_CRASH_DIR", dir.join("out/crash"));
    run_with_deadline(cmd, DEADLINE)
}

fn check_as_nobody(conf: &Path) -> Ran {
    let mut cmd = Command::new("setpriv");
    as_nobody(&mut cmd)
        .arg(bin())
        .arg("check")
        .arg("--config-dir")
        .arg(conf)
        .env("CTRLINIT_LOG", "debug");
    run_with_deadline(cmd, DEADLINE)
}

#[test]
fn a_non_root_pid1_runs_programs_as_itself() {
    let (dir, conf) = nobody_config(&[(
        "a.toml",
        r#"
[program.prep]
type = "oneshot"
command = ["/bin/sh", "-c", "(sleep 0.1 &); echo $(id -u) $(id -g) > {dir}/out/prep"]

[program.job]
main = true
restart = "never"
depends_on = ["prep"]
command = ["/bin/sh", "-c", "echo $$$$ $(id -u) $(id -g) > {dir}/out/job; exit 4"]
"#,
    )]);
    let ran = run_init_as_nobody(dir.path(), &conf, &[]);
    assert_eq!(ran.code, 4, "{ran:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/prep"))
            .unwrap()
            .trim(),
        "65534 65534"
    );
    let job = std::fs::read_to_string(dir.path().join("out/job")).unwrap();
    let job: Vec<&str> = job.split_whitespace().collect();
    assert_eq!(job[1..], ["65534", "65534"], "{ran:?}");
    // ctrlinit was PID 1 of its namespace: the programs got small pids.
    assert!(job[0].parse::<i32>().unwrap() < 100, "{job:?}");
    assert!(!ran.all().contains("subreaper"), "{ran:?}");
}

#[test]
fn a_non_root_pid1_accepts_its_own_user() {
    // `user = "nobody"` is ctrlinit's own identity: not a config error, and the program runs.
    let (dir, conf) = nobody_config(&[(
        "a.toml",
        r#"
[program.job]
main = true
restart = "never"
user = "nobody"
command = ["/bin/sh", "-c", "echo $(id -u) > {dir}/out/job"]
"#,
    )]);
    let ran = check_as_nobody(&conf);
    assert_eq!(ran.code, 0, "{ran:?}");
    let ran = run_init_as_nobody(dir.path(), &conf, &[]);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/job"))
            .unwrap()
            .trim(),
        "65534"
    );
}

#[test]
fn a_non_root_ctrlinit_rejects_another_user_or_group() {
    let files: &[(&str, &str)] = &[(
        "a.toml",
        r#"
[program.admin]
command = ["/bin/sh", "-c", "touch {dir}/out/started; exec sleep 1000"]
user = "root"

[program.wheel]
command = ["/bin/sh", "-c", "touch {dir}/out/started; exec sleep 1000"]
group = "root"
"#,
    )];
    let (dir, conf) = nobody_config(files);
    let ran = check_as_nobody(&conf);
    assert_eq!(ran.code, 2, "{ran:?}");
    assert!(
        ran.all().contains(
            "a.toml:4: program.admin.user: ctrlinit runs as uid 65534 and cannot switch to user \"root\""
        ),
        "{ran:?}"
    );
    assert!(
        ran.all().contains(
            "a.toml:8: program.wheel.group: ctrlinit runs as gid 65534 and cannot switch to group \"root\""
        ),
        "{ran:?}"
    );
    // As root the same config is fine.
    assert_eq!(check_config(&conf).code, 0);
    // The init itself refuses to start anything.
    let ran = run_init_as_nobody(dir.path(), &conf, &[]);
    assert_eq!(ran.code, 2, "{ran:?}");
    assert!(ran.all().contains("not starting anything"), "{ran:?}");
    assert!(!dir.path().join("out/started").exists());
}

/// Runs `ctrlinit --config-dir CONF ARGS…` as nobody with nothing given: no CTRLINIT_* paths,
/// so every default place is root's. `TMPDIR` is the test's own (the private socket goes there,
/// not into a /tmp other tests share).
fn run_with_the_defaults_as_nobody(dir: &Path, conf: &Path, args: &[&str]) -> Ran {
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child", "setpriv"]);
    as_nobody(&mut cmd)
        .arg(bin())
        .arg("--config-dir")
        .arg(conf)
        .args(args)
        .env_remove("CTRLINIT_LOG")
        .env_remove("CTRLINIT_SOCKET")
        .env_remove("CTRLINIT_LOG_DIR")
        .env_remove("CTRLINIT_CRASH_DIR")
        .env("TMPDIR", dir.join("out"));
    run_with_deadline(cmd, DEADLINE)
}

/// The one warning a run with unwritable defaults gives: what is off, each with its fix.
fn assert_one_fallback_warning(ran: &Ran, socket: &Path) {
    let all = ran.all();
    let warnings: Vec<&str> = all
        .lines()
        .filter(|l| l.contains("default places cannot be written"))
        .collect();
    assert_eq!(warnings.len(), 1, "{ran:?}");
    for says in [
        "logs go to the console only",
        "CTRLINIT_LOG_DIR",
        "crash reports are off",
        "CTRLINIT_CRASH_DIR",
        &format!("the control socket is {}", socket.display()),
        "CTRLINIT_SOCKET",
    ] {
        assert!(warnings[0].contains(says), "{says:?} in {}", warnings[0]);
    }
}

#[test]
fn a_non_root_run_with_the_defaults_still_runs_its_command() {
    // tini needs nothing writable; `docker run --user 1000 IMAGE -- id` once exited 1 here.
    let (dir, _) = nobody_config(&[]);
    let ran = run_with_the_defaults_as_nobody(
        dir.path(),
        Path::new("/nonexistent/conf.d"),
        &["--", "/bin/sh", "-c", "echo ran as $(id -u)"],
    );
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains(&format!("ran as {NOBODY}")), "{ran:?}");
    let socket = dir
        .path()
        .join(format!("out/ctrlinit-{NOBODY}/ctrlinit.sock"));
    assert_one_fallback_warning(&ran, &socket);
}

#[test]
fn a_non_root_config_with_the_defaults_runs_and_its_clients_find_the_socket() {
    let (dir, conf) = nobody_config(&[(
        "a.toml",
        &format!(
            r#"
[program.job]
main = true
restart = "never"
command = ["/bin/sh", "-c", "{bin} status job > {{dir}}/out/status; echo status $?"]
"#,
            bin = bin()
        ),
    )]);
    let ran = run_with_the_defaults_as_nobody(dir.path(), &conf, &[]);
    assert_eq!(ran.code, 0, "{ran:?}");
    let socket = dir
        .path()
        .join(format!("out/ctrlinit-{NOBODY}/ctrlinit.sock"));
    assert_one_fallback_warning(&ran, &socket);
    // A client of the same user, given nothing, reached the init at its private socket.
    let status = std::fs::read_to_string(dir.path().join("out/status")).unwrap();
    assert!(status.contains("job"), "{status} {ran:?}");
    assert!(ran.all().contains("status 0"), "{ran:?}");
}

#[test]
fn a_chosen_place_that_cannot_be_written_is_still_an_error() {
    let (dir, _) = nobody_config(&[]);
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "--kill-child", "setpriv"]);
    as_nobody(&mut cmd)
        .arg(bin())
        .args(["--config-dir", "/nonexistent/conf.d", "--", "/bin/true"])
        .env("CTRLINIT_LOG_DIR", "/var/log/ctrlinit-chosen")
        .env("TMPDIR", dir.path().join("out"));
    let ran = run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 1, "{ran:?}");
    assert!(
        ran.stderr
            .contains("cannot use [init] log_dir /var/log/ctrlinit-chosen"),
        "{ran:?}"
    );
}

#[test]
fn a_read_only_root_with_the_defaults_still_runs_its_command() {
    // As `docker run --read-only`: root, but /var and /run cannot be written (read-only mounts
    // in a mount namespace of the test's own); /dev/shm stays writable, as Docker leaves it.
    let shm = tempfile::tempdir().unwrap();
    let script = format!(
        "mount -t tmpfs -o ro none /var && mount -t tmpfs -o ro none /run && exec {} --config-dir /nonexistent/conf.d -- /bin/sh -c 'echo ok'",
        bin()
    );
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--mount",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
        "sh",
        "-c",
        &script,
    ])
    .env_remove("CTRLINIT_LOG")
    .env_remove("CTRLINIT_SOCKET")
    .env_remove("CTRLINIT_LOG_DIR")
    .env_remove("CTRLINIT_CRASH_DIR")
    .env("TMPDIR", shm.path());
    let ran = run_with_deadline(cmd, DEADLINE);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains("ok"), "{ran:?}");
    assert_one_fallback_warning(&ran, &shm.path().join("ctrlinit-0/ctrlinit.sock"));
    assert!(ran.all().contains("Read-only file system"), "{ran:?}");
}

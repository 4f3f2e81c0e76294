//! Where a program's standard streams go: `stdio = "inherit"` gives a config program
//! ctrlinit's own stdout and stderr (unprefixed, byte for byte, in no log file or ring), and
//! `[init] main_stdio = "pipe"` gives the `--` command the prefixed, logged pipes instead of
//! ctrlinit's streams. ctrlinit runs as PID 1 of a fresh PID namespace, with its own streams
//! captured whole (the harness's line reader would not show bytes as they are).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;

/// What `raw` writes to its stdout: control bytes, invalid UTF-8, no final newline.
const RAW_BYTES: &[u8] = b"one\n\x01\xffraw\n\tlast, no newline";

/// `raw` inherits ctrlinit's streams; `piped` (the usual pipes, kept off the console so that
/// stdout holds `raw`'s bytes alone) shows that the file and ring do hold a piped program's lines.
const INHERIT: &str = r#"
[program.raw]
type = "oneshot"
stdio = "inherit"
command = ["/bin/sh", "-c", "printf 'one\\n\\001\\377raw\\n\\tlast, no newline'; echo raw on stderr >&2"]

[program.piped]
type = "oneshot"
command = ["/bin/sh", "-c", "echo piped says hello"]
[program.piped.log]
console = false
"#;

/// `unshare … ctrlinit --config-dir DIR/conf.d --socket DIR/ctrlinit.sock ARGS`, its stdout
/// and stderr written to `DIR/stdout` and `DIR/stderr`.
fn start_captured(dir: &Path, args: &[&str]) -> Child {
    let file = |name: &str| std::fs::File::create(dir.join(name)).unwrap();
    Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--kill-child", bin()])
        .arg("--config-dir")
        .arg(dir.join("conf.d"))
        .arg("--socket")
        .arg(dir.join("ctrlinit.sock"))
        .args(args)
        .env("CTRLINIT_LOG", "debug")
        .env("CTRLINIT_LOG_DIR", dir.join("log"))
        .env("CTRLINIT_CRASH_DIR", dir.join("crash"))
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .unwrap()
}

/// Waits (with the harness's deadline) for `child` to exit; its exit code.
fn exit_code(child: &mut Child) -> i32 {
    let status = wait_until("ctrlinit's exit", DEADLINE, || child.try_wait().unwrap());
    status.code().unwrap_or(-1)
}

/// The test dir with `conf.d/a.toml` holding `conf`.
fn with_config(conf: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, conf_dir) = config_dir(&[("a.toml", conf)]);
    (dir, conf_dir.parent().unwrap().to_path_buf())
}

#[test]
fn a_config_program_with_stdio_inherit_writes_to_ctrlinits_stdout_byte_for_byte_unlogged() {
    let (_tmp, dir) = with_config(INHERIT);
    let mut child = start_captured(&dir, &[]);
    let socket = dir.join("ctrlinit.sock");
    let (code, out) = ctl_at(
        &socket,
        &[
            "status",
            "--timeout",
            "20s",
            "--wait",
            "raw=completed",
            "piped=completed",
        ],
    );
    assert_eq!(code, 0, "{out}");
    // The ring: the piped program's line is there, nothing of raw's.
    let (code, ring) = ctl_at(&socket, &["logs", "-n", "100"]);
    assert_eq!(code, 0, "{ring}");
    assert!(ring.contains("piped says hello"), "{ring}");
    assert!(
        !ring.contains("raw on stderr") && !ring.contains("last, no newline"),
        "{ring}"
    );
    let (code, out) = ctl_at(&socket, &["shutdown"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(exit_code(&mut child), 0);

    // stdout is raw's bytes as it wrote them: no prefix, no added newline, nothing else.
    let stdout = std::fs::read(dir.join("stdout")).unwrap();
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap();
    assert_eq!(
        stdout,
        RAW_BYTES,
        "stdout: {:?}\nstderr: {stderr}",
        String::from_utf8_lossy(&stdout)
    );
    // Its stderr is ctrlinit's stderr (where ctrlinit's own lines go now), unprefixed.
    assert!(stderr.lines().any(|l| l == "raw on stderr"), "{stderr}");
    // The log files: piped's has its line, raw has none (or one without its output).
    let logged = std::fs::read_to_string(dir.join("log/piped.log")).unwrap();
    assert!(logged.contains("piped says hello"), "{logged}");
    let raw_log = std::fs::read_to_string(dir.join("log/raw.log")).unwrap_or_default();
    assert!(
        !raw_log.contains("raw on stderr") && !raw_log.contains("last, no newline"),
        "{raw_log}"
    );
}

#[test]
fn main_stdio_pipe_gives_the_main_programs_lines_the_main_prefix_and_a_log_file() {
    let (_tmp, dir) = with_config("[init]\nmain_stdio = \"pipe\"\n");
    let mut child = start_captured(
        &dir,
        &[
            "--",
            "/bin/sh",
            "-c",
            "echo hello from main; echo oops from main >&2",
        ],
    );
    assert_eq!(exit_code(&mut child), 0);
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap();
    // `main | …` (stderr: `main ! …`), the name padded to the console's common width.
    let prefixed = |mark: &str, text: &str| {
        stdout.lines().any(|l| {
            l.split_once(mark)
                .is_some_and(|(name, rest)| name.trim_end() == "main" && rest == text)
        })
    };
    assert!(prefixed(" | ", "hello from main"), "{stdout}");
    assert!(prefixed(" ! ", "oops from main"), "{stdout}");
    assert!(
        !stdout.lines().any(|l| l == "hello from main"),
        "not unprefixed too: {stdout}"
    );
    let logged = std::fs::read_to_string(dir.join("log/main.log")).unwrap();
    assert!(logged.contains("hello from main"), "{logged}");
}

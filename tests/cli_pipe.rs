//! A client command writing into a closed pipe (`ctrlinit check | head -1`) ends as Unix tools
//! do: killed by SIGPIPE, quietly, never with a panic ("failed printing to stdout").

mod common;

use std::fmt::Write as _;
use std::process::Command;

use common::*;

/// A config whose `check` and `graph` print far more than a pipe holds (several hundred KiB),
/// so that the writer is still writing when `head` has gone. Independent programs: a long
/// `depends_on` chain is not what this is about.
fn many_programs(dir: &std::path::Path) {
    let mut text = String::new();
    for i in 0..10_000 {
        let _ = writeln!(
            text,
            "[program.p{i:05}-with-a-rather-long-name-to-fill-the-pipe-sooner]\ncommand = [\"/bin/sleep\", \"1000\"]"
        );
    }
    std::fs::write(dir.join("many.toml"), text).unwrap();
}

#[test]
fn a_client_command_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    many_programs(&conf);
    let sock = dir.path().join("no-init.sock");
    for cmd in ["check", "graph"] {
        // bash for PIPESTATUS: ctrlinit's own exit status, not head's.
        let script = format!(
            "\"$0\" --socket \"$1\" {cmd} --config-dir \"$2\" | head -1; echo \"status=${{PIPESTATUS[0]}}\" >&2"
        );
        let out = Command::new("bash")
            .args(["-c", &script, bin()])
            .arg(&sock)
            .arg(&conf)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stdout.lines().count(), 1, "{cmd}: head printed {stdout:?}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{cmd} panicked on the closed pipe:\n{stderr}"
        );
        // 128 + SIGPIPE: ended by the signal's default action, as `yes | head -1` does.
        assert!(
            stderr.contains("status=141"),
            "{cmd} did not end by SIGPIPE:\n{stderr}"
        );
    }
}

//! `status` lists each program's processes exactly, however it finds them: from one listing of
//! `/proc` when that `/proc` is ctrlinit's PID namespace's (issue 21, item 14: no file read a
//! program), or from each program's group when it is not.

mod common;

use common::*;

/// A main process (`sleep 1000`), its child (`sleep 1001`), and an orphan reparented to
/// ctrlinit (`sleep 1002`, its parent subshell gone), each pid written down as the program
/// sees it. `$$$$` is `$$` after ctrlinit's interpolation.
const FAMILY: &str = r#"
[program.family]
command = ["/bin/sh", "-c", "sleep 1001 & echo $! > {dir}/child.pid; (sleep 1002 & echo $! > {dir}/orphan.pid); exec sleep 1000"]

[program.single]
command = ["sleep", "1003"]
"#;

/// The pids `status --json` lists for `name`, sorted.
fn listed(init: &Init, name: &str) -> Vec<i64> {
    let p = init.program_json(name);
    let mut pids: Vec<i64> = p["pids"]
        .as_array()
        .unwrap_or_else(|| panic!("no pids: {p}"))
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    pids.sort_unstable();
    pids
}

/// Waits until `family` lists its three processes and `single` its one, and checks them
/// against what the programs saw (their own PID namespace's numbers).
fn lists_every_process(init: &Init, what: &str) {
    let child: i64 = wait_for_text(&init.dir().join("child.pid"))
        .trim()
        .parse()
        .unwrap();
    let orphan: i64 = wait_for_text(&init.dir().join("orphan.pid"))
        .trim()
        .parse()
        .unwrap();
    // `status` looks again at most once a second while nothing changes state.
    let family = wait_until_soft(DEADLINE, || {
        let pids = listed(init, "family");
        (pids.len() == 3).then_some(pids)
    })
    .unwrap_or_else(|| panic!("{what}: family's processes: {:?}", listed(init, "family")));
    let main = init.program_json("family")["pid"].as_i64().unwrap();
    let mut want = vec![main, child, orphan];
    want.sort_unstable();
    assert_eq!(family, want, "{what}: family's pids");
    let single = init.program_json("single");
    assert_eq!(
        listed(init, "single"),
        vec![single["pid"].as_i64().unwrap()],
        "{what}: {single}"
    );
    assert_eq!(single["processes"], 1, "{what}: {single}");
}

#[test]
fn status_lists_main_child_and_orphan_in_either_tracking() {
    for mode in ["cgroup", "marker"] {
        let mut b = init().file("a.toml", FAMILY);
        if mode == "marker" {
            b = b.env("CTRLINIT_TRACKING", "marker");
        }
        let init = b.start();
        init.wait_states(&["family=running", "single=running"]);
        lists_every_process(&init, mode);
    }
}

#[test]
fn status_lists_the_right_pids_when_proc_is_another_namespaces() {
    // ctrlinit is PID 1 of a new PID namespace but sees the host's /proc: its numbers there
    // name other processes, so it must not take them from a listing.
    let init = init()
        .without_namespace()
        .under(&["unshare", "--pid", "--fork", "--kill-child"])
        .file("a.toml", FAMILY)
        .start();
    let tracked = init.wait_for_line("programs' processes are tracked by");
    if !tracked.contains("by cgroup") {
        // Markers read ctrlinit's children from /proc: with another namespace's /proc they
        // cannot be told, and cgroup tracking is what such a setup gets.
        eprintln!("cgroup tracking is not available here: {tracked}");
        return;
    }
    init.wait_states(&["family=running", "single=running"]);
    lists_every_process(&init, "a foreign /proc");
}

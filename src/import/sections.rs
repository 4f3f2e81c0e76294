//! The sections that do not become programs: event listeners (reported, with the ctrlinit
//! feature nearest to what they listen for), FastCGI programs, supervisord's HTTP and RPC
//! servers and `supervisorctl` (ctrlinit's control socket replaces them), and unknown ones.

use super::ini::{Opt, Section};
use super::report::Note;

/// An `[eventlistener:x]`'s note, and whether it looks like the listener that ends supervisord
/// when a program is FATAL (its command kills or shuts down supervisord).
pub fn eventlistener(section: &Section, defaults: &[Opt]) -> (Note, bool) {
    let name = section.name.split_once(':').map_or("", |(_, n)| n);
    let events = section
        .get("events", defaults)
        .map(|o| o.value.to_uppercase())
        .unwrap_or_default();
    let events: Vec<String> = events
        .split(',')
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect();
    let command = section
        .get("command", defaults)
        .map(|o| o.value.to_lowercase())
        .unwrap_or_default();
    let fatal = events
        .iter()
        .any(|e| e == "PROCESS_STATE_FATAL" || e == "PROCESS_STATE");
    let ends = fatal
        && [
            "kill",
            "shutdown",
            "stop-supervisor",
            "stop_supervisor",
            "exit",
        ]
        .iter()
        .any(|w| command.contains(w) || name.to_lowercase().contains(w));
    let mut nearest: Vec<String> = Vec::new();
    if ends {
        nearest.push("its effect is written instead: on_exhausted = \"exit\" on the programs that restart ends the container (with [init] exit_code) when one's restart budget is spent".into());
        if events.iter().any(|e| {
            e == "PROCESS_STATE" || e == "PROCESS_STATE_EXITED" || e == "PROCESS_STATE_STOPPED"
        }) {
            nearest.push("it also ended supervisord when a program merely exited or was stopped: ctrlinit restarts those as their restart says; main = true on a program ends the container when that program ends".into());
        }
    } else if events.iter().any(|e| e.starts_with("PROCESS_STATE")) {
        nearest.push("`ctrlinit events --json` streams every state change (pipe it to the alert); on_exhausted = \"exit\" ends the container when a program gives up".into());
    }
    if events.iter().any(|e| e.starts_with("TICK")) {
        nearest.push("ctrlinit has no timer events: run the periodic job as a program of its own (sh -c 'while sleep 60; do …; done')".into());
    }
    if events
        .iter()
        .any(|e| e.starts_with("PROCESS_LOG") || e.starts_with("PROCESS_COMMUNICATION"))
    {
        nearest.push("`ctrlinit logs -f` follows programs' output".into());
    }
    if command.contains("memmon") {
        nearest.push("for memory limits: the container's (or a cgroup's) memory limit, or rlimits = { as = … }".into());
    }
    if command.contains("httpok") {
        nearest.push("for health: a ready check (ready = { tcp = … }) and HEALTHCHECK CMD [\"ctrlinit\", \"health\"]".into());
    }
    if nearest.is_empty() {
        nearest.push("`ctrlinit events --json` streams state changes; HEALTHCHECK CMD [\"ctrlinit\", \"health\"] reports them to the engine".into());
    }
    let listens = if events.is_empty() {
        "nothing".to_string()
    } else {
        events.join(", ")
    };
    let note = Note::at(
        &section.file,
        section.line,
        format!("[{}]", section.name),
        format!("event listeners are not supported; not imported (it listens for {listens})"),
        nearest.join("; "),
    );
    (note, ends)
}

/// The note for a section that is not a program, or `None` for those that need none.
pub fn other(section: &Section) -> Option<Note> {
    let kind = section
        .name
        .split_once(':')
        .map_or(section.name.as_str(), |(k, _)| k);
    let (message, todo) = match kind {
        "unix_http_server" => (
            "ctrlinit's control socket replaces it: [init] socket (default /run/ctrlinit.sock), mode 0600, or 0660 with [init] socket_group; connections are checked by uid, so there are no user names or passwords",
            "ctrlinit status, start, stop … talk to it",
        ),
        "inet_http_server" => (
            "ctrlinit has no TCP control server: its socket is local to the container",
            "use `docker exec … ctrlinit status` (or mount the socket) instead of the web interface",
        ),
        "supervisorctl" => (
            "ctrlinit's own commands replace supervisorctl: ctrlinit status, start, stop, restart, signal, logs",
            "",
        ),
        "rpcinterface" => (
            "ctrlinit has no XML-RPC interface: its socket speaks one line of JSON per request",
            "README: The control protocol",
        ),
        "ctlplugin" => ("supervisorctl plugins are not supported", ""),
        "fcgi-program" => (
            "FastCGI programs are not supported (ctrlinit passes no listening socket); not imported",
            "run the program so that it binds its own socket (spawn-fcgi -n, or its own --listen option)",
        ),
        "include" | "supervisord" | "program" | "group" | "eventlistener" => return None,
        _ => (
            "not a supervisord section, so supervisord ignored it; not imported",
            "",
        ),
    };
    Some(Note::at(
        &section.file,
        section.line,
        format!("[{}]", section.name),
        message,
        todo,
    ))
}

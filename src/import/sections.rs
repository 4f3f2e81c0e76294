//! The sections that do not become programs: event listeners (reported, with the ctrlinit
//! feature nearest to what they listen for), FastCGI programs, supervisord's HTTP and RPC
//! servers and `supervisorctl` (ctrlinit's control socket replaces them), and unknown ones.

use super::ini::{Opt, Section};
use super::names;
use super::report::Note;
use super::shlex::{SPLIT, tokens};

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
    let httpok = command.contains("httpok");
    if httpok {
        let original = section
            .get("command", defaults)
            .map_or("", |o| o.value.as_str());
        nearest.push(httpok_hint(original, &events));
    } else if events.iter().any(|e| e.starts_with("TICK")) {
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

/// What an `httpok` command line says: the programs it restarted (`-p`, or all with `-a`), its
/// timeout (`-t`) and the URL it fetched.
#[derive(Default)]
struct HttpOk {
    programs: Vec<String>,
    any: bool,
    timeout: Option<String>,
    url: Option<String>,
}

/// Reads superlance's options from an `httpok` command line (its other options are skipped).
fn httpok_args(command: &str) -> HttpOk {
    let words: Vec<String> = tokens(command, SPLIT)
        .map(|t| t.into_iter().map(|w| w.text).collect())
        .unwrap_or_default();
    let mut h = HttpOk::default();
    let mut i = 1;
    while i < words.len() {
        let w = words[i].as_str();
        let (opt, inline) = match w.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v.to_string())),
            _ => (w, None),
        };
        let takes_value = matches!(
            opt,
            "-p" | "--program"
                | "-t"
                | "--timeout"
                | "-c"
                | "--code"
                | "-b"
                | "--body"
                | "-m"
                | "--email"
                | "-s"
                | "--sendmail_program"
                | "-g"
                | "--gracetime"
        );
        let value = match (&inline, takes_value) {
            (Some(v), _) => Some(v.clone()),
            (None, true) => {
                i += 1;
                words.get(i).cloned()
            }
            (None, false) => None,
        };
        match opt {
            "-p" | "--program" => h.programs.extend(value),
            "-a" | "--any" => h.any = true,
            "-t" | "--timeout" => h.timeout = value,
            _ if w.starts_with("http://") || w.starts_with("https://") => {
                h.url = Some(w.to_string())
            }
            _ => {}
        }
        i += 1;
    }
    h
}

/// superlance's `httpok` (GET a URL on a timer, restart the program when it fails) as what
/// ctrlinit does itself: a liveness check with `on_failure = "restart"` on each program it
/// restarted (`-p NAME`, or every program with `-a`).
fn httpok_hint(command: &str, events: &[String]) -> String {
    let h = httpok_args(command);
    // `-p group:process`: the process's name, as the import names programs.
    let names: Vec<String> = h
        .programs
        .iter()
        .map(|p| names::program_name(p.rsplit(':').next().unwrap_or(p), 0))
        .collect();
    let (table, on) = match (h.any, names.as_slice()) {
        (false, [one]) => (format!("[program.{one}.health]"), format!("on {one}")),
        (false, many) if !many.is_empty() => (
            "[program.NAME.health]".to_string(),
            format!("on each of {}", many.join(", ")),
        ),
        _ => (
            "[program.NAME.health]".to_string(),
            "on each program it watched".to_string(),
        ),
    };
    let url = h.url.as_deref().unwrap_or("http://127.0.0.1:PORT/PATH");
    let mut keys = vec![format!("check = {{ http = {url:?} }}")];
    if let Some(secs) = events.iter().find_map(|e| e.strip_prefix("TICK_")) {
        keys.push(format!("interval = \"{secs}s\""));
    }
    if let Some(t) = &h.timeout {
        keys.push(format!("timeout = \"{t}s\""));
    }
    // httpok acted on the first failure.
    keys.push("failures = 1".into());
    keys.push("on_failure = \"restart\"".into());
    let mut hint = format!(
        "httpok restarted a program whose URL failed; ctrlinit does that itself: {table} with {} {on} (failures counted against its restart budget)",
        keys.join(", ")
    );
    if url.starts_with("https://") {
        hint.push_str(
            " (checks speak plain http: check the plain port on the loopback, or use check = { exec = [\"curl\", \"-fsS\", URL] })",
        );
    }
    hint
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
        "inet_http_server" => return Some(inet_http_server(section)),
        "supervisorctl" => (
            "ctrlinit's own commands replace supervisorctl: ctrlinit status, start, stop, restart, signal, logs",
            "",
        ),
        "rpcinterface" => (
            "ctrlinit has no XML-RPC interface: its socket speaks one line of JSON per request",
            "see the book's reference, The control protocol (docs/src/reference/protocol.md)",
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

/// `[inet_http_server]`: no control over TCP, but what a monitor or the engine reads over HTTP
/// is `[init] http`, at the address the server had (`9001` and `*:9001` are every interface).
fn inet_http_server(section: &Section) -> Note {
    let port = section.get("port", &[]).map_or("", |o| o.value.trim());
    let addr = match port.rsplit_once(':') {
        Some(("" | "*", p)) => format!("0.0.0.0:{p}"),
        Some(_) => port.to_string(),
        None if !port.is_empty() => format!("0.0.0.0:{port}"),
        None => "127.0.0.1:9001".to_string(),
    };
    Note::at(
        &section.file,
        section.line,
        format!("[{}]", section.name),
        "ctrlinit has no TCP control server (its control socket is local to the container); what a monitor or the container engine read over HTTP, ctrlinit serves read-only with [init] http: /livez, /readyz, /metrics and /v1/status, with no user names or passwords since nothing it serves changes anything",
        format!(
            "set [init] http = \"{addr}\" for probes and metrics; control it with `docker exec … ctrlinit status` (or mount the socket) instead of the web interface"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn httpok_becomes_the_health_table_that_does_what_it_did() {
        let tick = ["TICK_5".to_string()];
        let hint = httpok_hint(
            "python /usr/bin/httpok --program=web:Web_1 --timeout=3 -c 200 -m a@b https://127.0.0.1/x",
            &tick,
        );
        assert!(hint.contains("[program.web_1.health]"), "{hint}");
        assert!(
            hint.contains(r#"check = { http = "https://127.0.0.1/x" }, interval = "5s", timeout = "3s", failures = 1, on_failure = "restart" on web_1"#),
            "{hint}"
        );
        assert!(hint.contains("checks speak plain http"), "{hint}");
        let all = httpok_hint("httpok -a http://localhost:80/", &[]);
        assert!(
            all.contains("[program.NAME.health]") && all.contains("on each program it watched"),
            "{all}"
        );
    }
}

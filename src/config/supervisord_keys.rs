//! supervisord's `[program:x]` key names, for a `[program.NAME]` table that uses one by habit:
//! the error names ctrlinit's key for the same thing (a look-alike suggestion would mislead:
//! `autorestart` is nearest to `autostart`, which means something else) and points to
//! `ctrlinit import`. Keys whose names ctrlinit shares (`command`, `autostart`, `user`, `umask`)
//! are ordinary keys and never reach this table.

/// supervisord's key and what ctrlinit says instead (its whole `[program:x]` list).
const SUPERVISORD: &[(&str, &str)] = &[
    (
        "process_name",
        "`instances = N` names them NAME-0 … NAME-<N-1>",
    ),
    ("numprocs", "`instances = N`"),
    (
        "numprocs_start",
        "`instances = N` (${INSTANCE} counts from 0)",
    ),
    (
        "priority",
        "`after = [\"NAME\"]` (ordering only) or `depends_on`",
    ),
    (
        "autorestart",
        "`restart` (\"always\" | \"on-failure\" | \"never\")",
    ),
    ("startsecs", "`ready = { uptime = \"Ns\" }`"),
    ("startretries", "`max_restarts` (within `restart_window`)"),
    ("exitcodes", "`success_codes`"),
    ("stopsignal", "`stop_signal`"),
    ("stopwaitsecs", "`stop_timeout` (a duration: \"10s\")"),
    (
        "stopasgroup",
        "nothing: ctrlinit always signals the whole process group",
    ),
    (
        "killasgroup",
        "nothing: ctrlinit always signals the whole process group",
    ),
    (
        "redirect_stderr",
        "`[program.NAME.log] stderr = \"merge\"` (the default)",
    ),
    ("stdout_logfile", "`[program.NAME.log] file` and `console`"),
    ("stdout_logfile_maxbytes", "`[program.NAME.log] max_size`"),
    ("stdout_logfile_backups", "`[program.NAME.log] keep`"),
    (
        "stdout_capture_maxbytes",
        "nothing: see `ctrlinit logs` and `ctrlinit events`",
    ),
    (
        "stdout_events_enabled",
        "nothing: see `ctrlinit events --json`",
    ),
    ("stdout_syslog", "`[program.NAME.log] console`"),
    (
        "stderr_logfile",
        "`[program.NAME.log] stderr = \"separate\"`",
    ),
    ("stderr_logfile_maxbytes", "`[program.NAME.log] max_size`"),
    ("stderr_logfile_backups", "`[program.NAME.log] keep`"),
    (
        "stderr_capture_maxbytes",
        "nothing: see `ctrlinit logs` and `ctrlinit events`",
    ),
    (
        "stderr_events_enabled",
        "nothing: see `ctrlinit events --json`",
    ),
    ("stderr_syslog", "`[program.NAME.log] console`"),
    ("environment", "`env = { NAME = \"value\" }`"),
    ("directory", "`workdir`"),
    (
        "serverurl",
        "nothing: clients use ctrlinit's control socket",
    ),
];

/// For a supervisord key written in a `[program.NAME]` table: the message and the fix.
pub(super) fn supervisord_key(name: &str) -> Option<(String, String)> {
    let (key, instead) = SUPERVISORD.iter().find(|(k, _)| *k == name)?;
    Some((
        format!("`{key}` is supervisord's key; ctrlinit's for the same thing is {instead}"),
        "write ctrlinit's key, or translate a whole supervisord configuration with `ctrlinit import supervisord.conf -o conf.d/`".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supervisord_program_key_that_ctrlinit_lacks_is_named() {
        let (message, fix) = supervisord_key("autorestart").unwrap();
        assert!(message.contains("`restart`"), "{message}");
        assert!(fix.contains("ctrlinit import"), "{fix}");
        for (k, _) in SUPERVISORD {
            assert!(
                !super::super::schema::PROGRAM_KEYS.contains(k),
                "{k} is ctrlinit's own key too"
            );
        }
        assert!(supervisord_key("command").is_none());
    }
}

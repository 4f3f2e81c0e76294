//! The environment a program starts with: ctrlinit's own (all of it, or with `inherit_env =
//! false` only `PATH`, `HOME`, `USER` and `CTRLINIT_*`), then `env_file`, then `env`, then the
//! identity variables of its user, then the caller's extra variables (a hook's).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use crate::config::ProgramSpec;
use crate::config::env_file::read_env_file;

/// What a program keeps of ctrlinit's environment with `inherit_env = false`.
fn kept_without_inheritance(key: &OsStr) -> bool {
    let k = key.as_bytes();
    matches!(k, b"PATH" | b"HOME" | b"USER") || k.starts_with(b"CTRLINIT_")
}

/// What ctrlinit's own supervisor told it through the environment (podman, a systemd unit):
/// addressed to ctrlinit, never passed on (a program that needs a notify socket gets its own).
fn meant_for_ctrlinit(key: &OsStr) -> bool {
    matches!(
        key.as_bytes(),
        b"NOTIFY_SOCKET" | b"WATCHDOG_USEC" | b"WATCHDOG_PID"
    )
}

/// An environment being built: variables in order, each set once (setting one again replaces
/// its value in place, in constant time, however many there are).
#[derive(Default)]
struct Env {
    vars: Vec<(OsString, OsString)>,
    index: HashMap<OsString, usize>,
}

impl Env {
    fn set(&mut self, key: OsString, value: OsString) {
        match self.index.get(&key) {
            Some(&i) => self.vars[i].1 = value,
            None => {
                self.index.insert(key.clone(), self.vars.len());
                self.vars.push((key, value));
            }
        }
    }
}

/// Builds the environment for `spec`, plus `extra` (set last, e.g. the finish hook's variables).
pub fn program_env(
    spec: &ProgramSpec,
    extra: &[(&str, String)],
) -> Result<Vec<(OsString, OsString)>, String> {
    let mut env = Env::default();
    for (k, v) in std::env::vars_os() {
        if meant_for_ctrlinit(&k) {
            continue;
        }
        if spec.inherit_env || kept_without_inheritance(&k) {
            env.set(k, v);
        }
    }
    if let Some(path) = &spec.env_file {
        for (k, v) in read_env_file(path).map_err(|e| e.to_string())? {
            env.set(OsString::from(k), OsString::from(v));
        }
    }
    for (k, v) in &spec.env {
        env.set(k.into(), v.into());
    }
    if let Some(name) = &spec.run_as.user_name {
        let explicit = |k: &str| spec.env.iter().any(|(n, _)| n == k);
        for key in ["USER", "LOGNAME"] {
            if !explicit(key) {
                env.set(key.into(), name.into());
            }
        }
        if let (Some(home), false) = (&spec.run_as.home, explicit("HOME")) {
            env.set("HOME".into(), home.into());
        }
    }
    for (k, v) in extra {
        env.set((*k).into(), v.into());
    }
    let mut vars = env.vars;
    // ctrlinit's run marker goes first: it is looked for at the start of an environment.
    if let Some(i) = vars
        .iter()
        .position(|(k, _)| k.as_bytes() == b"CTRLINIT_RUN")
    {
        vars[..=i].rotate_right(1);
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Kind;

    fn lookup<'a>(env: &'a [(OsString, OsString)], key: &str) -> Option<&'a OsStr> {
        env.iter()
            .find(|(k, _)| k.as_bytes() == key.as_bytes())
            .map(|(_, v)| v.as_os_str())
    }

    #[test]
    fn env_file_then_env_then_extra() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("api.env");
        std::fs::write(&file, "# comment\nexport A=1\nB=\"two words\"\n\nC='x=y'\n").unwrap();
        let mut spec = ProgramSpec::new("api", vec!["x".into()], Kind::Service);
        spec.env_file = Some(file);
        spec.env = vec![("B".into(), "env wins".into())];
        let env = program_env(&spec, &[("CTRLINIT_PROGRAM", "api".into())]).unwrap();
        assert_eq!(lookup(&env, "A").unwrap(), "1");
        assert_eq!(lookup(&env, "B").unwrap(), "env wins");
        assert_eq!(lookup(&env, "C").unwrap(), "x=y");
        assert_eq!(lookup(&env, "CTRLINIT_PROGRAM").unwrap(), "api");
        assert!(
            lookup(&env, "PATH").is_some(),
            "ctrlinit's own environment is the base"
        );
    }

    #[test]
    fn without_inheritance_only_the_kept_variables_come_from_ctrlinit() {
        let mut spec = ProgramSpec::new("api", vec!["x".into()], Kind::Service);
        spec.inherit_env = false;
        spec.env = vec![("MINE".into(), "1".into())];
        let env = program_env(&spec, &[]).unwrap();
        for (k, _) in &env {
            let k = k.to_string_lossy();
            assert!(
                ["PATH", "HOME", "USER", "MINE"].contains(&k.as_ref())
                    || k.starts_with("CTRLINIT_"),
                "{k} leaked into a program with inherit_env = false"
            );
        }
        assert_eq!(lookup(&env, "MINE").unwrap(), "1");
    }

    #[test]
    fn many_variables_are_set_in_linear_time() {
        let mut spec = ProgramSpec::new("api", vec!["x".into()], Kind::Service);
        spec.env = (0..200_000)
            .map(|i| (format!("V{i}"), i.to_string()))
            .collect();
        let t = std::time::Instant::now();
        let env = program_env(&spec, &[]).unwrap();
        assert!(env.len() >= 200_000);
        // Quadratic was minutes at this size; linear is milliseconds (bound with wide margin).
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t.elapsed()
        );
    }
}

//! The environment a program starts with: ctrlinit's own, then `env_file`, then `env`, then the
//! identity variables of its user.

use std::ffi::OsString;
use std::path::Path;

use crate::config::ProgramSpec;

/// Builds the environment for `spec`, plus `extra` (set last, e.g. the finish hook's variables).
pub fn program_env(
    spec: &ProgramSpec,
    extra: &[(&str, String)],
) -> Result<Vec<(OsString, OsString)>, String> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    if let Some(path) = &spec.env_file {
        for (k, v) in read_env_file(path)? {
            set(&mut env, OsString::from(k), OsString::from(v));
        }
    }
    for (k, v) in &spec.env {
        set(&mut env, k.into(), v.into());
    }
    if let Some(name) = &spec.run_as.user_name {
        let explicit = |k: &str| spec.env.iter().any(|(n, _)| n == k);
        for key in ["USER", "LOGNAME"] {
            if !explicit(key) {
                set(&mut env, key.into(), name.into());
            }
        }
        if let (Some(home), false) = (&spec.run_as.home, explicit("HOME")) {
            set(&mut env, "HOME".into(), home.into());
        }
    }
    for (k, v) in extra {
        set(&mut env, (*k).into(), v.into());
    }
    Ok(env)
}

fn set(env: &mut Vec<(OsString, OsString)>, key: OsString, value: OsString) {
    match env.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => env.push((key, value)),
    }
}

/// Reads `KEY=VALUE` lines: blank lines and `#` comments are skipped, an `export ` prefix and
/// matching outer quotes are removed. No interpolation happens.
pub fn read_env_file(path: &Path) -> Result<Vec<(String, String)>, String> {
    let text =
        std::fs::read(path).map_err(|e| format!("cannot read env_file {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = String::from_utf8_lossy(raw);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "{}:{}: expected KEY=VALUE, found {line:?}",
                path.display(),
                n + 1
            ));
        };
        out.push((key.trim().to_string(), unquote(value.trim()).to_string()));
    }
    Ok(out)
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    fn lookup<'a>(env: &'a [(OsString, OsString)], key: &str) -> Option<&'a OsStr> {
        env.iter()
            .find(|(k, _)| k.as_bytes() == key.as_bytes())
            .map(|(_, v)| v.as_os_str())
    }
    use crate::config::Kind;

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
    fn bad_env_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.env");
        std::fs::write(&file, "OK=1\nnot a pair\n").unwrap();
        let err = read_env_file(&file).unwrap_err();
        assert!(
            err.ends_with("bad.env:2: expected KEY=VALUE, found \"not a pair\""),
            "{err}"
        );
        assert!(
            read_env_file(&dir.path().join("missing"))
                .unwrap_err()
                .contains("cannot read env_file")
        );
    }
}

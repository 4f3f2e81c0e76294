//! Program names: what one may be, since a name becomes a file name (`<log_dir>/<name>.log`,
//! `<crash_dir>/<name>/`), a console prefix and a word on the command line.

/// The longest program name.
pub const MAX_NAME: usize = 64;

/// Names ctrlinit keeps for itself: its own log file and console prefix.
const RESERVED: &[&str] = &["ctrlinit"];

/// What is wrong with `name` as a program name, with the fix; `None` when it is fine.
///
/// A name is 1 to [`MAX_NAME`] characters of `[a-z0-9_.-]`, is not `.` or `..` (it names a
/// directory), and is not `ctrlinit`.
pub fn name_problem(name: &str) -> Option<(String, String)> {
    let shown = shown(name);
    if name.is_empty() {
        return Some((
            "a program name cannot be empty".into(),
            "name it, e.g. [program.api]".into(),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c)))
    {
        return Some((
            format!("{shown} is not a valid program name: it holds {c:?}"),
            "use lowercase letters, digits, '_', '.' and '-' only".into(),
        ));
    }
    if name.len() > MAX_NAME {
        return Some((
            format!(
                "{shown} is not a valid program name: it is {} characters long",
                name.len()
            ),
            format!("use at most {MAX_NAME} characters"),
        ));
    }
    if name == "." || name == ".." {
        return Some((
            format!("{shown} is not a valid program name: it names a directory"),
            "use a name with a letter or a digit in it".into(),
        ));
    }
    if RESERVED.contains(&name) {
        return Some((
            format!("{shown} is ctrlinit's own name (its log file and console prefix)"),
            format!("choose another name, e.g. {name}-agent"),
        ));
    }
    None
}

/// Whether `name` is a valid program name.
pub fn valid_name(name: &str) -> bool {
    name_problem(name).is_none()
}

/// A name as a key path writes it (`program.NAME.env`): whole when short, cut when long, so an
/// error about a name of any length is a line, not a page.
pub fn short(name: &str) -> String {
    if name.chars().count() <= 40 {
        name.to_string()
    } else {
        let head: String = name.chars().take(32).collect();
        format!("{head}…")
    }
}

/// A name as messages quote it: whole when short, cut when long (a name can be a config's
/// mistake of any length).
fn shown(name: &str) -> String {
    if name.chars().count() <= 40 {
        format!("{name:?}")
    } else {
        let head: String = name.chars().take(32).collect();
        format!("{head:?}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules() {
        for ok in [
            "api",
            "schema-worker.v2_x",
            "a",
            &"a".repeat(64),
            "ctrlinit-agent",
            "main",
        ] {
            assert!(valid_name(ok), "{ok}");
        }
        for (bad, says) in [
            ("", "cannot be empty"),
            ("Api", "holds 'A'"),
            ("a b", "holds ' '"),
            ("a/b", "holds '/'"),
            (".", "names a directory"),
            ("..", "names a directory"),
            ("ctrlinit", "ctrlinit's own name"),
            (&"a".repeat(65), "65 characters long"),
        ] {
            let (message, fix) = name_problem(bad).unwrap_or_else(|| panic!("{bad:?} passed"));
            assert!(message.contains(says), "{bad:?}: {message}");
            assert!(!fix.is_empty());
        }
        let long = "x".repeat(65_536);
        let (message, _) = name_problem(&long).unwrap();
        assert!(
            message.len() < 200,
            "a long name is not quoted whole: {}",
            message.len()
        );
        assert_eq!(short("api"), "api");
        assert_eq!(short(&long), format!("{}…", "x".repeat(32)));
    }
}

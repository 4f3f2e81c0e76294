//! execline, as far as the import carries it: the words of a script (execlineb's lexing:
//! whitespace, `#` comments, `"…"` strings with backslash escapes, `{ }` blocks), and the one
//! shape that becomes a plain command: a chain of prefixes ctrlinit has keys for
//! (`with-contenv`, `s6-setuidgid USER`, `cd DIR`, `export NAME VALUE`, `fdmove -c 2 1`, `exec`)
//! ending in a program that is not an execline or s6 tool. Anything else (a block, a `$`
//! substitution, `if`, `backtick`, `importas` …) is left to execlineb and reported.

/// A script reduced to a command and the keys its prefixes set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    /// The program and its arguments.
    pub words: Vec<String>,
    /// `s6-setuidgid USER`.
    pub user: Option<String>,
    /// `cd DIR`.
    pub workdir: Option<String>,
    /// `export NAME VALUE`, in order.
    pub env: Vec<(String, String)>,
    /// The prefixes dropped because ctrlinit does what they did (`with-contenv`, `fdmove -c 2 1`).
    pub dropped: Vec<&'static str>,
}

/// Words that are execline or s6 programs: a chain reaching one of them needs execlineb.
const TOOLS: &[&str] = &[
    "if",
    "ifelse",
    "ifte",
    "ifthenelse",
    "foreground",
    "background",
    "backtick",
    "importas",
    "import",
    "multisubstitute",
    "multidefine",
    "define",
    "elglob",
    "forx",
    "forbacktickx",
    "forstdin",
    "redirfd",
    "piperw",
    "pipeline",
    "fdclose",
    "fdreserve",
    "fdswap",
    "fdblock",
    "fdmove",
    "getpid",
    "heredoc",
    "emptyenv",
    "envfile",
    "export",
    "unexport",
    "loopwhilex",
    "trap",
    "wait",
    "withstdinas",
    "eltest",
    "execline-cd",
    "execline-umask",
    "umask",
    "s6-envdir",
    "s6-envuidgid",
    "s6-applyuidgid",
    "s6-setuidgid",
    "s6-notifyoncheck",
    "s6-log",
    "s6-socklog",
    "s6-svc",
    "s6-svscanctl",
    "s6-svwait",
    "s6-echo",
    "s6-sleep",
    "with-contenv",
    "printcontenv",
    "exec",
];

/// The words of an execline script, or what stops them being read.
pub fn words(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '#' {
            for c in chars.by_ref() {
                if c == '\n' {
                    break;
                }
            }
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            match c {
                '"' => quoted(&mut chars, &mut word)?,
                '\\' => word.push(chars.next().ok_or("a backslash ends the script")?),
                c => word.push(c),
            }
        }
        out.push(word);
    }
    Ok(out)
}

/// The rest of a `"…"` string into `word`.
fn quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    word: &mut String,
) -> Result<(), String> {
    loop {
        match chars.next().ok_or("a quoted string is not closed")? {
            '"' => return Ok(()),
            '\\' => match chars.next().ok_or("a quoted string is not closed")? {
                'n' => word.push('\n'),
                't' => word.push('\t'),
                'r' => word.push('\r'),
                '\n' => {}
                c => word.push(c),
            },
            c => word.push(c),
        }
    }
}

/// `text` as a [`Chain`], or the reason it needs execlineb (the word that stops it).
pub fn simple(text: &str) -> Result<Chain, String> {
    let words = words(text)?;
    if words.iter().any(|w| w == "{" || w == "}" || w.is_empty()) {
        return Err("a { } block".into());
    }
    if let Some(w) = words.iter().find(|w| w.contains('$')) {
        return Err(format!("the substitution in `{w}`"));
    }
    let mut chain = Chain::default();
    let mut rest: &[String] = &words;
    loop {
        let word = |i: usize| rest.get(i).map(String::as_str);
        match word(0) {
            Some("with-contenv") => {
                chain.dropped.push("with-contenv");
                rest = &rest[1..];
            }
            Some("exec") if word(1).is_some_and(|w| !w.starts_with('-')) => rest = &rest[1..],
            Some("s6-setuidgid") if rest.len() > 2 => {
                chain.user = Some(rest[1].clone());
                rest = &rest[2..];
            }
            Some("cd") if rest.len() > 2 => {
                chain.workdir = Some(rest[1].clone());
                rest = &rest[2..];
            }
            Some("export") if rest.len() > 3 => {
                chain.env.push((rest[1].clone(), rest[2].clone()));
                rest = &rest[3..];
            }
            Some("fdmove") if rest.len() > 4 && rest[1..4] == ["-c", "2", "1"] => {
                chain.dropped.push("fdmove -c 2 1");
                rest = &rest[4..];
            }
            _ => break,
        }
    }
    match rest.first() {
        None => Err("no program after its prefixes".into()),
        Some(w) if TOOLS.contains(&w.as_str()) || w.starts_with("s6-") => Err(format!("`{w}`")),
        Some(_) => {
            chain.words = rest.to_vec();
            Ok(chain)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_as_execlineb_does() {
        assert_eq!(
            words("#!/command/execlineb -P\n# a comment\nnginx -g \"daemon off;\" a\\ b\n")
                .unwrap(),
            ["nginx", "-g", "daemon off;", "a b"]
        );
        assert!(words("echo \"open").is_err());
    }

    #[test]
    fn a_chain_of_known_prefixes_is_a_command_and_keys() {
        let c = simple("with-contenv\ns6-setuidgid nginx\ncd /srv\nexport A b\nfdmove -c 2 1\nexec nginx -g \"daemon off;\"").unwrap();
        assert_eq!(c.words, ["nginx", "-g", "daemon off;"]);
        assert_eq!(c.user.as_deref(), Some("nginx"));
        assert_eq!(c.workdir.as_deref(), Some("/srv"));
        assert_eq!(c.env, [("A".to_string(), "b".to_string())]);
        assert_eq!(c.dropped, ["with-contenv", "fdmove -c 2 1"]);
    }

    #[test]
    fn blocks_substitutions_and_tools_need_execlineb() {
        assert!(
            simple("foreground { echo hi } nginx")
                .unwrap_err()
                .contains("block")
        );
        assert!(
            simple("importas -i X X echo $X")
                .unwrap_err()
                .contains("$X")
        );
        assert!(
            simple("s6-envuidgid -D 1:1: -- syslog\ns6-socklog -d3")
                .unwrap_err()
                .contains("s6-envuidgid")
        );
        assert!(simple("with-contenv").is_err());
    }
}

//! What ctrlinit runs for a script of the layout: the script itself, by its path in the image,
//! through its interpreter when s6-overlay's own stood in the way. `#!/command/with-contenv sh`
//! becomes `["sh", PATH]` (ctrlinit passes the container's environment already); an execline
//! script becomes its command when it is a plain chain ([`super::execline::simple`]) and is
//! otherwise left to execlineb, reported; a script that is not executable runs through its
//! `#!` interpreter. Every s6 idiom in it is reported ([`super::idioms`]).

use std::path::Path;

use super::execline;
use super::idioms;
use super::tree::{Contents, Tree};
use crate::import::Note;

/// A command for a program or a hook, with the keys a translated chain sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// What to execute.
    pub words: Vec<String>,
    /// A user the script switched to (`s6-setuidgid`).
    pub user: Option<String>,
    /// A directory the script changed to.
    pub workdir: Option<String>,
    /// Variables the script exported.
    pub env: Vec<(String, String)>,
    /// Whether the script reads its arguments (a finish script: s6 passed the exit code and
    /// the signal number).
    pub reads_args: bool,
    /// Whether its `#!` named with-contenv, which the command leaves out.
    pub contenv: bool,
    /// The check an `s6-notifyoncheck -c CHECK` line of the script polled for readiness: the
    /// program's `ready = { exec = ["sh", "-c", CHECK] }`.
    pub ready_check: Option<String>,
}

/// The image path of `rel` (`etc/services.d/x/run` is `/etc/services.d/x/run`).
pub fn image_path(rel: &Path) -> String {
    format!("/{}", rel.display())
}

/// The command that runs the script at `rel`; `Err` when it cannot be read at all.
pub fn command(tree: &mut Tree, rel: &Path, notes: &mut Vec<Note>) -> Result<Command, String> {
    let shown = tree.shown(rel);
    let path = image_path(rel);
    let text = match tree.read(rel)? {
        Contents::Text(t) => t,
        Contents::Binary(why) => {
            notes.push(Note::at(
                &shown,
                1,
                "script",
                format!("{why}: run as it is, its interpreter and idioms unread"),
                "check that it runs without s6-overlay",
            ));
            return Ok(Command {
                words: vec![path],
                ..Command::default()
            });
        }
    };
    let Some(shebang) = text.lines().next().and_then(|l| l.strip_prefix("#!")) else {
        idioms::scan(&text, &shown, 0, notes);
        let words = if tree.executable(rel) {
            vec![path]
        } else {
            vec!["/bin/sh".to_string(), path]
        };
        return Ok(Command {
            words,
            reads_args: reads_args(&text),
            ..Command::default()
        });
    };
    let mut interp: Vec<String> = shebang.split_whitespace().map(str::to_string).collect();
    let program = interp.first().map(|p| base(p)).unwrap_or_default();
    let body: String = text.lines().skip(1).collect::<Vec<_>>().join("\n");
    let mut out = match program.as_str() {
        "with-contenv" => {
            let mut words = contenv_words(shebang).unwrap_or_default();
            words.push(path);
            Command {
                words,
                contenv: true,
                ..Command::default()
            }
        }
        "execlineb" => {
            return Ok(execline_script(
                tree, &text, &body, &shown, &path, &interp, notes,
            ));
        }
        _ if tree.executable(rel) => Command {
            words: vec![path],
            ..Command::default()
        },
        _ => {
            interp.push(path);
            Command {
                words: interp,
                ..Command::default()
            }
        }
    };
    out.reads_args = reads_args(&body);
    out.ready_check = notifyoncheck_check(&body);
    note_contenv_execs(tree, &body, &shown, notes);
    idioms::scan(&text, &shown, 1, notes);
    Ok(out)
}

/// The `-c` check of the first `s6-notifyoncheck` in a shell script's `body` (its lines joined
/// where a backslash continues them), when it has one.
pub fn notifyoncheck_check(body: &str) -> Option<String> {
    let joined = body.replace("\\\n", " ");
    for line in joined.lines() {
        let line = line.trim();
        if line.starts_with('#') || !line.contains("s6-notifyoncheck") {
            continue;
        }
        let words = shlex::split(line)?;
        let at = words.iter().position(|w| base(w) == "s6-notifyoncheck")?;
        let mut rest = words[at + 1..].iter();
        while let Some(w) = rest.next() {
            match w.as_str() {
                "-c" => return rest.next().filter(|c| !c.trim().is_empty()).cloned(),
                // Options with a value (s6-notifyoncheck's -3 -s -t -w -n) and flags.
                "-3" | "-s" | "-t" | "-w" | "-n" => {
                    rest.next();
                }
                o if o.starts_with('-') => {}
                // The program it runs: no -c, so it ran data/check.
                _ => return None,
            }
        }
    }
    None
}

/// An execline script: its chain as a command, else execlineb with the script.
fn execline_script(
    tree: &mut Tree,
    text: &str,
    body: &str,
    shown: &Path,
    path: &str,
    interp: &[String],
    notes: &mut Vec<Note>,
) -> Command {
    // -S/-s: the script reads its arguments.
    let reads = interp
        .iter()
        .skip(1)
        .any(|a| a.starts_with("-S") || a.starts_with("-s"));
    match execline::simple(body) {
        Ok(mut chain) => {
            if let Some(words) = through_contenv_interpreter(tree, &chain.words, shown, notes) {
                chain.words = words;
            }
            notes.push(Note::at(
                shown,
                1,
                "execline",
                format!(
                    "an execline script, written as the command it runs: {}",
                    shell_words(&chain.words)
                ),
                "",
            ));
            Command {
                words: chain.words,
                user: chain.user,
                workdir: chain.workdir,
                env: chain.env,
                reads_args: reads,
                contenv: !chain.dropped.is_empty(),
                ready_check: None,
            }
        }
        Err(why) => {
            notes.push(Note::at(
                shown,
                1,
                "execline",
                format!("an execline script ctrlinit cannot write as one command ({why}): it still needs execlineb"),
                "keep execline in the image (the package `execline`, with the shebang pointing at its execlineb), or rewrite the script in sh",
            ));
            idioms::scan(text, shown, 1, notes);
            Command {
                words: vec![path.to_string()],
                reads_args: reads,
                ..Command::default()
            }
        }
    }
}

/// The command of an s6-rc `up` or `down` file (one execline command line, no shebang): a
/// plain chain as its words, a script of the layout it names through [`command`], anything
/// else through `execlineb -c`.
pub fn command_line(
    tree: &mut Tree,
    rel: &Path,
    notes: &mut Vec<Note>,
) -> Result<Option<Command>, String> {
    let shown = tree.shown(rel);
    let text = match tree.read(rel)? {
        Contents::Text(t) => t,
        Contents::Binary(why) => return Err(why.to_string()),
    };
    if execline::words(&text).is_ok_and(|w| w.is_empty()) {
        return Ok(None);
    }
    match execline::simple(&text) {
        Ok(chain) => {
            let first = Path::new(&chain.words[0]);
            let inner = first
                .strip_prefix("/")
                .ok()
                .filter(|r| matches!(tree.kind(r), Ok(Some(super::tree::Kind::File))));
            if let Some(inner) = inner.map(Path::to_path_buf) {
                let mut c = command(tree, &inner, notes)?;
                c.words.extend(chain.words[1..].iter().cloned());
                c.user = c.user.or(chain.user);
                c.workdir = c.workdir.or(chain.workdir);
                c.env.splice(0..0, chain.env);
                return Ok(Some(c));
            }
            if let Some(missing) = first
                .strip_prefix("/")
                .ok()
                .filter(|r| matches!(tree.kind(r), Ok(None)))
            {
                notes.push(Note::at(
                    &shown,
                    1,
                    "up",
                    format!(
                        "it runs /{}, which is not under this root (the image build adds it?)",
                        missing.display()
                    ),
                    "check that the image has it",
                ));
            }
            Ok(Some(Command {
                words: chain.words,
                user: chain.user,
                workdir: chain.workdir,
                contenv: !chain.dropped.is_empty(),
                env: chain.env,
                reads_args: false,
                ready_check: None,
            }))
        }
        Err(why) => {
            notes.push(Note::at(
                &shown,
                1,
                "execline",
                format!("an execline command line ctrlinit cannot write as one command ({why}): it runs through execlineb -c"),
                "keep execline in the image, or move the commands into a sh script and name it here",
            ));
            idioms::scan(&text, &shown, 0, notes);
            Ok(Some(Command {
                words: vec!["execlineb".into(), "-c".into(), text.trim().to_string()],
                ..Command::default()
            }))
        }
    }
}

/// The interpreter of the script at image path `program` when its `#!` names with-contenv
/// (`#!/usr/bin/with-contenv bash` gives `["bash"]`, a bare one `["/bin/sh"]`); `None` for any
/// other file, or one not under the root.
fn contenv_interpreter(tree: &mut Tree, program: &str) -> Option<Vec<String>> {
    let rel = Path::new(program).strip_prefix("/").ok()?;
    if !matches!(tree.kind(rel), Ok(Some(super::tree::Kind::File))) {
        return None;
    }
    let Ok(Contents::Text(text)) = tree.read(rel) else {
        return None;
    };
    contenv_words(text.lines().next()?.strip_prefix("#!")?)
}

/// The interpreter a `#!` line (without the `#!`) that names with-contenv runs the script
/// with: `/usr/bin/with-contenv bash` gives `["bash"]`, a bare one `["/bin/sh"]`.
fn contenv_words(shebang: &str) -> Option<Vec<String>> {
    let mut words: Vec<String> = shebang.split_whitespace().map(str::to_string).collect();
    if words.first().map(|w| base(w)).as_deref() != Some("with-contenv") {
        return None;
    }
    words.remove(0);
    if words.is_empty() {
        words.push("/bin/sh".into());
    }
    Some(words)
}

/// `words` with a with-contenv script outside the layout run through its interpreter:
/// `["/app/start.sh", "-x"]` becomes `["bash", "/app/start.sh", "-x"]`. Kept as it was, the
/// script's `#!` names a program that leaves the image with s6-overlay, and every start
/// exits 127.
fn through_contenv_interpreter(
    tree: &mut Tree,
    words: &[String],
    shown: &Path,
    notes: &mut Vec<Note>,
) -> Option<Vec<String>> {
    let program = words.first()?;
    let mut out = contenv_interpreter(tree, program)?;
    notes.push(Note::at(
        shown,
        1,
        "with-contenv",
        format!(
            "it runs {program}, whose #! names with-contenv: it runs through {} instead",
            out[0]
        ),
        "",
    ));
    out.extend(words.iter().cloned());
    Some(out)
}

/// Notes each `exec /PATH` of a shell script whose target's `#!` names with-contenv: the
/// script itself runs, but the program it hands over to then exits 127 once s6-overlay is gone,
/// and the import does not rewrite scripts.
fn note_contenv_execs(tree: &mut Tree, body: &str, shown: &Path, notes: &mut Vec<Note>) {
    for (i, line) in body.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("exec ") else {
            continue;
        };
        let Some(target) = rest
            .split_whitespace()
            .next()
            .filter(|t| t.starts_with('/'))
        else {
            continue;
        };
        if let Some(interp) = contenv_interpreter(tree, target) {
            notes.push(Note::at(
                shown,
                i + 2,
                "with-contenv",
                format!(
                    "it execs {target}, whose #! names with-contenv, which is not in the image once s6-overlay is gone: that exec fails with 127"
                ),
                {
                    let shebang = if interp[0].starts_with('/') {
                        format!("#!{}", interp[0])
                    } else {
                        format!("#!/usr/bin/env {}", interp[0])
                    };
                    format!("write `exec {} {target}` here, or change the first line of {target} to {shebang}", interp[0])
                },
            ));
        }
    }
}

/// The last part of a path.
fn base(p: &str) -> String {
    p.rsplit('/').next().unwrap_or(p).to_string()
}

/// Whether a shell script reads its positional arguments.
fn reads_args(body: &str) -> bool {
    body.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .any(|l| {
            ["$1", "${1", "$2", "${2", "$@", "$*", "$#"]
                .iter()
                .any(|a| l.contains(a))
        })
}

/// Words as a shell would read them back, for reports and `sh -c` scripts.
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word quoted for sh when it needs it.
pub fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:,+@%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tree_with(files: &[(&str, &str, u32)]) -> (tempfile::TempDir, Tree) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text, mode) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        let tree = Tree::open(dir.path()).unwrap();
        (dir, tree)
    }

    #[test]
    fn with_contenv_becomes_its_interpreter_and_execline_its_command() {
        let (_d, mut t) = tree_with(&[
            ("a/run", "#!/usr/bin/with-contenv bash\nexec nginx\n", 0o755),
            (
                "b/run",
                "#!/command/execlineb -P\ns6-setuidgid daemon\nmyservice --flag\n",
                0o755,
            ),
            ("c/finish", "#!/bin/sh\necho \"$1\" > /tmp/x\n", 0o644),
            ("d/up", "/a/run\n", 0o644),
            ("e/up", "with-contenv /a/run --once\n", 0o644),
        ]);
        let mut notes = Vec::new();
        let a = command(&mut t, Path::new("a/run"), &mut notes).unwrap();
        assert_eq!(a.words, ["bash", "/a/run"]);
        let b = command(&mut t, Path::new("b/run"), &mut notes).unwrap();
        assert_eq!(b.words, ["myservice", "--flag"]);
        assert_eq!(b.user.as_deref(), Some("daemon"));
        let c = command(&mut t, Path::new("c/finish"), &mut notes).unwrap();
        assert_eq!(c.words, ["/bin/sh", "/c/finish"]);
        assert!(c.reads_args);
        let d = command_line(&mut t, Path::new("d/up"), &mut notes)
            .unwrap()
            .unwrap();
        assert_eq!(
            d.words,
            ["bash", "/a/run"],
            "the script it names, through its interpreter"
        );
        let e = command_line(&mut t, Path::new("e/up"), &mut notes)
            .unwrap()
            .unwrap();
        assert_eq!(e.words, ["bash", "/a/run", "--once"], "and its arguments");
    }

    #[test]
    fn the_check_of_s6_notifyoncheck_is_read_off_a_shell_script() {
        let body = "# shellcheck shell=bash\nexec s6-notifyoncheck -d -n 300 -w 1000 -c \"nc -z localhost 3306\" \\\n    s6-setuidgid abc mysqld\n";
        assert_eq!(
            notifyoncheck_check(body).as_deref(),
            Some("nc -z localhost 3306")
        );
        // Without -c it ran data/check: nothing to translate.
        assert_eq!(
            notifyoncheck_check("exec s6-notifyoncheck -d mysqld\n"),
            None
        );
        assert_eq!(
            notifyoncheck_check("# s6-notifyoncheck -c x\nexec mysqld\n"),
            None
        );
        assert_eq!(notifyoncheck_check("exec mysqld\n"), None);
    }

    #[test]
    fn quoting_for_sh() {
        assert_eq!(
            shell_words(&["a".into(), "b c".into(), "it's".into()]),
            "a 'b c' 'it'\\''s'"
        );
    }
}

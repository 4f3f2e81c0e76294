//! The s6 and s6-overlay idioms a script may use that ctrlinit does not provide: each found is
//! a note naming the file and line, what it did, and a "do:" line with ctrlinit's way. A script
//! is scanned line by line (comment lines skipped); each idiom is said once per file, at its
//! first line.

use std::path::Path;

use crate::import::Note;

/// One idiom: the word that shows it, what it did under s6, and what to do instead.
struct Idiom {
    word: &'static str,
    did: &'static str,
    todo: &'static str,
}

const IDIOMS: &[Idiom] = &[
    Idiom {
        word: "with-contenv",
        did: "with-contenv loaded the environment s6-overlay saved at boot",
        todo: "drop it: ctrlinit passes its environment (the container's) to every program",
    },
    Idiom {
        word: "s6-setuidgid",
        did: "s6-setuidgid USER ran the rest of the command as USER",
        todo: "set user = \"USER\" on the program and drop s6-setuidgid (or keep s6 in the image)",
    },
    Idiom {
        word: "s6-envuidgid",
        did: "s6-envuidgid looked up a user's ids for s6-applyuidgid",
        todo: "set user (and group) on the program and drop s6-envuidgid/s6-applyuidgid",
    },
    Idiom {
        word: "s6-applyuidgid",
        did: "s6-applyuidgid dropped privileges to the looked-up user",
        todo: "set user (and group) on the program and drop it",
    },
    Idiom {
        word: "fdmove",
        did: "fdmove moved a descriptor (fdmove -c 2 1: stderr into stdout)",
        todo: "drop it: ctrlinit captures stdout and stderr itself ([program.NAME.log] stderr = \"merge\" or \"separate\")",
    },
    Idiom {
        word: "s6-svc",
        did: "s6-svc controlled an s6 service",
        todo: "use `ctrlinit start|stop|restart|signal NAME`",
    },
    Idiom {
        word: "s6-svscanctl",
        did: "s6-svscanctl -t stopped the whole container",
        todo: "set main = true on the program whose end should end the container, or run `ctrlinit shutdown`",
    },
    Idiom {
        word: "/run/s6/basedir/bin/halt",
        did: "halt stopped the whole container",
        todo: "set main = true on the program whose end should end the container, or run `ctrlinit shutdown`",
    },
    Idiom {
        word: "/run/s6-linux-init-container-results/exitcode",
        did: "the file set the container's exit status",
        todo: "main = true makes a program's exit status the container's; with a -- command, its status is",
    },
    Idiom {
        word: "s6-notifyoncheck",
        did: "s6-notifyoncheck polled a check (its -c command or data/check) and told s6 the service was ready",
        todo: "its -c check is written as ready = { exec = [\"sh\", \"-c\", CHECK] }: run the program without s6-notifyoncheck (with data/check instead of -c, write ready = { exec = [\"the check\"] } by hand)",
    },
    Idiom {
        word: "s6-svwait",
        did: "s6-svwait waited for another service's state",
        todo: "depends_on the service, or `ctrlinit status --wait NAME=running`",
    },
    Idiom {
        word: "s6-rc",
        did: "s6-rc changed services' states",
        todo: "use `ctrlinit start|stop NAME`",
    },
    Idiom {
        word: "printcontenv",
        did: "printcontenv printed a variable s6-overlay saved at boot",
        todo: "read the variable from the environment: ctrlinit passes it",
    },
    Idiom {
        word: "/run/s6/container_environment",
        did: "the directory held the environment s6-overlay saved at boot",
        todo: "read the variables from the environment: ctrlinit passes it",
    },
    Idiom {
        word: "/var/run/s6/container_environment",
        did: "the directory held the environment s6-overlay saved at boot",
        todo: "read the variables from the environment: ctrlinit passes it",
    },
    Idiom {
        word: "s6-log",
        did: "s6-log wrote and rotated a log",
        todo: "drop the logger: ctrlinit writes each program's output to <log_dir>/NAME.log, rotated by [program.NAME.log] max_size and keep",
    },
    Idiom {
        word: "logutil-service",
        did: "logutil-service ran s6-log as a logger",
        todo: "drop the logger: ctrlinit writes each program's output to <log_dir>/NAME.log, rotated",
    },
    Idiom {
        word: "s6-echo",
        did: "s6-echo is s6-portable-utils' echo",
        todo: "use echo (or keep s6-portable-utils in the image)",
    },
    Idiom {
        word: "s6-mkdir",
        did: "s6-mkdir is s6-portable-utils' mkdir",
        todo: "use mkdir (or keep s6-portable-utils in the image)",
    },
    Idiom {
        word: "s6-chown",
        did: "s6-chown is s6-portable-utils' chown",
        todo: "use chown (or keep s6-portable-utils in the image)",
    },
    Idiom {
        word: "s6-chmod",
        did: "s6-chmod is s6-portable-utils' chmod",
        todo: "use chmod (or keep s6-portable-utils in the image)",
    },
];

/// Whether `word` stands in `line` as a word (or a path's last part): not inside a longer name.
fn has_word(line: &str, word: &str) -> bool {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(at) = line[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let before = start == 0 || b" \t/;&|({`'\"".contains(&bytes[start - 1]);
        let after = end == bytes.len() || b" \t;&|)}`'\"\n".contains(&bytes[end]);
        // `/run/s6/basedir/bin/halt` style words are paths: the path itself must match.
        let path_ok =
            !word.starts_with('/') || start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        if before && after && path_ok {
            return true;
        }
        from = end;
    }
    false
}

/// Notes for every idiom in `text` (the file `shown`), skipping the first `skip` lines (a
/// shebang handled apart).
pub fn scan(text: &str, shown: &Path, skip: usize, notes: &mut Vec<Note>) {
    for idiom in IDIOMS {
        let found = text
            .lines()
            .enumerate()
            .skip(skip)
            .filter(|(_, l)| !l.trim_start().starts_with('#'))
            .find(|(_, l)| has_word(l, idiom.word));
        if let Some((i, _)) = found {
            notes.push(Note::at(
                shown,
                i + 1,
                idiom.word,
                format!("{}; ctrlinit does not provide it", idiom.did),
                idiom.todo,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idioms_are_found_as_words_once_each_with_their_line() {
        let text = "#!/bin/sh\n# s6-svc in a comment\nexec s6-setuidgid abc \\\n  s6-notifyoncheck -c 'nc -z 1 2' x\ns6-setuidgid again\necho my-s6-svc-thing\n";
        let mut notes = Vec::new();
        scan(text, Path::new("run"), 1, &mut notes);
        let found: Vec<(&str, usize)> = notes
            .iter()
            .map(|n| (n.what.as_str(), n.at.as_ref().unwrap().1))
            .collect();
        assert_eq!(found, [("s6-setuidgid", 3), ("s6-notifyoncheck", 4)]);
        assert!(notes.iter().all(|n| !n.todo.is_empty()));
    }
}

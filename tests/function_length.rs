//! No function in `src/` is over 80 lines (issue 12), tests aside: past that a function does
//! several things, and its steps deserve names. A file may be let off only in [`ALLOWED`], with
//! the reason there; the check reads the source as text, so it needs no build of its own.
//!
//! A function's length runs from the line of its `fn` to the line of its closing brace.
//! `#[cfg(test)]` items, `*_tests.rs` files and `tests/` folders of unit tests are not counted.
//!
//! No file in `src/` is over 800 lines either, test modules included (issue 12): a longer one
//! holds several subjects, which deserve files of their own. A file is let off only when its
//! opening `//!` comment, where a reader sees it first, says why it reads better whole (those
//! words, [`WHOLE`], and the reason).

use std::path::{Path, PathBuf};

/// The longest a function may be, in lines.
const LIMIT: usize = 80;

/// Files whose long functions are let off, relative to `src/`, each with the reason in a comment
/// (none today: every function reads as named steps).
const ALLOWED: &[&str] = &[];

/// The code of a Rust file with comments, strings and character literals blanked out (newlines
/// kept), so the braces left are the code's own.
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // Blanks `c[from..to]`, keeping its newlines so line numbers stay.
    let blank_range = |out: &mut String, from: usize, to: usize| {
        out.extend(
            c[from..to]
                .iter()
                .map(|&x| if x == '\n' { '\n' } else { ' ' }),
        );
    };
    let at = |i: usize, s: &str| s.chars().enumerate().all(|(k, x)| c.get(i + k) == Some(&x));
    let mut i = 0;
    while i < c.len() {
        let ident_before = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if at(i, "//") {
            let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
            blank_range(&mut out, i, end);
            i = end;
        } else if at(i, "/*") {
            // Block comments nest.
            let (mut depth, mut k) = (0, i);
            while k < c.len() {
                if at(k, "/*") {
                    depth += 1;
                    k += 2;
                } else if at(k, "*/") {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            blank_range(&mut out, i, k);
            i = k;
        } else if !ident_before && (at(i, "r\"") || at(i, "r#") || at(i, "br\"") || at(i, "br#")) {
            // A raw string: no escapes, ends at a quote followed by as many `#` as it began with.
            let start = i + if c[i] == 'b' { 2 } else { 1 };
            let hashes = (start..c.len()).take_while(|&k| c[k] == '#').count();
            if c.get(start + hashes) != Some(&'"') {
                // `r#ident`, a raw identifier.
                out.push(c[i]);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let mut k = start + hashes + 1;
            while k < c.len() && !at(k, &close) {
                k += 1;
            }
            let end = (k + close.chars().count()).min(c.len());
            blank_range(&mut out, i, end);
            i = end;
        } else if c[i] == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            let end = (k + 1).min(c.len());
            blank_range(&mut out, i, end);
            i = end;
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{7f}'), not a lifetime ('a).
            let end = if c.get(i + 1) == Some(&'\\') {
                (i + 2..c.len().min(i + 12)).find(|&k| c[k] == '\'')
            } else {
                (c.get(i + 2) == Some(&'\'')).then_some(i + 2)
            };
            match end {
                Some(e) => {
                    blank_range(&mut out, i, e + 1);
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The name of the function a (blanked) line starts, if it starts one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("pub(") {
            rest = &r[r.find(')')? + 1..];
        } else if let Some(word) = ["pub ", "const ", "async ", "unsafe ", "extern ", "default "]
            .iter()
            .find(|w| rest.starts_with(*w))
        {
            rest = &rest[word.len()..];
        } else {
            break;
        }
        rest = rest.trim_start();
    }
    let rest = rest.strip_prefix("fn ")?.trim_start();
    let end = rest
        .find(|x: char| !(x.is_alphanumeric() || x == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The line where the item starting at `from` ends: its body's closing brace, or `None` when it
/// has no body (a `;` first, outside parentheses and brackets: `fn f(x: [u8; 4]);`).
fn item_end(lines: &[&str], from: usize) -> Option<usize> {
    let (mut braces, mut nesting) = (0i32, 0i32);
    let mut opened = false;
    for (n, line) in lines.iter().enumerate().skip(from) {
        for x in line.chars() {
            match x {
                '{' => {
                    braces += 1;
                    opened = true;
                }
                '}' => braces -= 1,
                '(' | '[' => nesting += 1,
                ')' | ']' => nesting -= 1,
                ';' if !opened && nesting == 0 => return None,
                _ => {}
            }
            if opened && braces == 0 {
                return Some(n);
            }
        }
    }
    None
}

/// Every function of a file over `limit` lines: (line of its `fn`, name, length).
fn long_functions(text: &str, limit: usize) -> Vec<(usize, String, usize)> {
    let code = blank(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut test_only = false;
    let mut n = 0;
    while n < lines.len() {
        let line = lines[n].trim_start();
        if line.starts_with("#[cfg(test)]") {
            test_only = true;
        } else if test_only && !line.is_empty() && !line.starts_with("#[") {
            // The item `#[cfg(test)]` applies to: skipped whole, whatever it is.
            test_only = false;
            if let Some(end) = item_end(&lines, n) {
                n = end + 1;
                continue;
            }
        } else if let Some(name) = fn_name(line)
            && let Some(end) = item_end(&lines, n)
            && end - n + 1 > limit
        {
            out.push((n + 1, name.to_string(), end - n + 1));
        }
        n += 1;
    }
    out
}

/// The longest a source file may be, in lines.
const FILE_LIMIT: usize = 800;

/// The words a longer file's opening `//!` comment must hold, with its reason, to be let off.
const WHOLE: &str = "reads better whole";

/// Whether a file's opening comment (the `//!` lines it starts with) says why it reads better
/// whole.
fn says_why_whole(text: &str) -> bool {
    text.lines()
        .take_while(|l| l.starts_with("//!"))
        .any(|l| l.contains(WHOLE))
}

/// Every file (name, text) over `limit` lines that does not say why it reads better whole:
/// its name and length.
fn long_files(files: &[(String, String)], limit: usize) -> Vec<(String, usize)> {
    files
        .iter()
        .map(|(name, text)| (name, text, text.lines().count()))
        .filter(|(_, text, len)| *len > limit && !says_why_whole(text))
        .map(|(name, _, len)| (name.clone(), len))
        .collect()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_function_is_over_80_lines_outside_tests() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut long = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.ends_with("_tests.rs") || rel.contains("/tests/") || ALLOWED.contains(&rel.as_str())
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, name, len) in long_functions(&text, LIMIT) {
            long.push(format!("src/{rel}:{line} {name}: {len} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "functions over {LIMIT} lines (split them into named steps, or explain in the file \
         why one reads better whole and let the file off in ALLOWED):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_checker_measures_functions_as_written() {
    // A check that finds nothing could pass by accident: it must find long functions among
    // the things that confuse a brace counter, and not count test code.
    let over = "    let x = 1;\n".repeat(LIMIT - 1);
    let at_limit = "    let x = 1;\n".repeat(LIMIT - 2);
    let text = format!(
        "/// Braces in docs {{ do not count.\n\
         pub(crate) fn declared(buf: [u8; 4]);\n\
         fn tricky<'a>(s: &'a str) -> char {{\n    let _ = \"{{ \\\" {{\";\n    \
         let _ = r#\"}} \"#;\n    /* }} /* nested }} */ */\n    let _ = '{{';\n    \
         let _ = '\\'';\n    '}}'\n}}\n\
         pub unsafe extern \"C\" fn long_one(x: [u8; 2]) {{\n{over}}}\n\
         fn at_the_limit() {{\n{at_limit}}}\n\
         #[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{over}{over}    }}\n}}\n\
         fn after_tests() {{\n{over}}}\n"
    );
    // Lines: the doc 1, `declared` 2, `tricky` 3 to 10, `long_one` from 11 (LIMIT + 1 lines),
    // `at_the_limit` (LIMIT lines), the test module (its attribute, `mod`, a function of
    // 2 * (LIMIT - 1) + 2 lines, `}`), then `after_tests`.
    let long_one = 11;
    let after_tests = long_one + (LIMIT + 1) + LIMIT + 2 + (2 * (LIMIT - 1) + 2) + 1;
    let found = long_functions(&text, LIMIT);
    assert_eq!(
        found,
        [
            (long_one, "long_one".to_string(), LIMIT + 1),
            (after_tests, "after_tests".to_string(), LIMIT + 1),
        ]
    );
}

#[test]
fn no_source_file_is_over_800_lines_unless_it_says_why() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    assert!(paths.len() > 100, "found only {} files", paths.len());
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            (format!("src/{rel}"), std::fs::read_to_string(p).unwrap())
        })
        .collect();
    let long: Vec<String> = long_files(&files, FILE_LIMIT)
        .into_iter()
        .map(|(name, len)| format!("{name}: {len} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "files over {FILE_LIMIT} lines (split them by subject, or say in the file's opening //! \
         comment why it {WHOLE}):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_checker_measures_files_as_written() {
    // One line over is caught, the limit itself is not, and only a file's opening comment lets
    // it off: the words further down, or in a plain comment, do not.
    let body = |n: usize| "let x = 1;\n".repeat(n);
    let excuse = format!("//! The state table {WHOLE}: one match, read top to bottom.\n");
    let files = [
        ("over", body(FILE_LIMIT + 1)),
        ("at_limit", body(FILE_LIMIT)),
        ("excused", format!("//! Doc.\n{excuse}{}", body(FILE_LIMIT))),
        (
            "excuse_too_late",
            format!("//! Doc.\n{}{excuse}", body(FILE_LIMIT)),
        ),
        (
            "plain_comment",
            format!("// It {WHOLE}.\n{}", body(FILE_LIMIT)),
        ),
    ]
    .map(|(n, t)| (n.to_string(), t));
    assert_eq!(
        long_files(&files, FILE_LIMIT),
        [
            ("over".to_string(), FILE_LIMIT + 1),
            ("excuse_too_late".to_string(), FILE_LIMIT + 2),
            ("plain_comment".to_string(), FILE_LIMIT + 1),
        ]
    );
}

//! Reading the input: the main file, then the files its `[include] files =` patterns match
//! (relative to its directory, sorted, into the same sections, as supervisord reads them). Each
//! file must be a regular file of at most [`FILE_CAP`] bytes of UTF-8, and all of them together
//! at most [`TOTAL_CAP`]: a FIFO, a device or a huge file is refused, never read.

use std::path::{Path, PathBuf};

use super::expand::{Value, expand};
use super::glob::{WALK_LIMITS, glob};
use super::ini::{Ini, Opt};
use super::report::{InputError, Note};
use super::text::{Piece, Text};
use crate::sys::files::{ReadError, read_regular};

/// The largest file read.
pub const FILE_CAP: u64 = 4 << 20;

/// The most read in all, includes included.
pub const TOTAL_CAP: u64 = 16 << 20;

/// The most files an include may add.
const MAX_FILES: usize = 1000;

/// What was read.
#[derive(Debug, Default)]
pub struct Input {
    /// The sections of every file, merged.
    pub ini: Ini,
    /// The files read, the main one first.
    pub files: Vec<PathBuf>,
    /// Notes on the reading (patterns that matched nothing, nested includes).
    pub notes: Vec<Note>,
}

/// Reads `main` and what it includes.
pub fn read_input(main: &Path) -> Result<Input, Vec<InputError>> {
    let mut input = Input::default();
    let mut total = 0u64;
    let text = read_text(main, FILE_CAP, &mut total).map_err(|e| vec![e])?;
    input.ini.read(main, &text)?;
    input.files.push(main.to_path_buf());
    let Some(include) = input.ini.section("include").cloned() else {
        return Ok(input);
    };
    let Some(files) = include.get("files", &input.ini.defaults).cloned() else {
        return Err(vec![InputError::at(
            main,
            include.line,
            "[include] has no files setting".into(),
            "add files = conf.d/*.conf (patterns relative to this file), or remove [include]",
        )]);
    };
    let patterns = include_patterns(main, &files, &mut input.notes).map_err(|e| vec![e])?;
    // Matched against the main file's directory as given, so that the report names the
    // included files as the user would; %(here)s is the absolute directory.
    let base = main.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut errors = Vec::new();
    for pattern in patterns.split_whitespace() {
        let found = match glob(&base, pattern, WALK_LIMITS) {
            Ok(found) => found,
            Err(e) => {
                errors.push(InputError::at(
                    &files.file,
                    files.line,
                    format!("[include] files: {e}"),
                    "name the directories the files are in (conf.d/*.conf), not a pattern over the whole tree",
                ));
                return Err(errors);
            }
        };
        if found.is_empty() {
            input.notes.push(Note::at(
                &files.file,
                files.line,
                "[include] files",
                format!("no file matches {pattern:?} here (supervisord skips it too)"),
                "copy the included files next to this one (or run the import where they are)",
            ));
            continue;
        }
        for path in found {
            if input.files.len() > MAX_FILES {
                errors.push(InputError::at(
                    &files.file,
                    files.line,
                    format!("[include] files matches more than {MAX_FILES} files"),
                    "include fewer files",
                ));
                return Err(errors);
            }
            include_one(&mut input, &files, path, &mut total, &mut errors);
        }
    }
    if errors.is_empty() {
        Ok(input)
    } else {
        Err(errors)
    }
}

/// `[include] files` expanded as supervisord expands it at start: `%(here)s` is the main
/// file's absolute directory, `%(ENV_X)s` the variable X of the import's environment (which
/// stands for supervisord's; each value used is said in a note). An unset variable is an
/// error, as supervisord refuses to start on it. Returns the patterns.
fn include_patterns(main: &Path, files: &Opt, notes: &mut Vec<Note>) -> Result<String, InputError> {
    let here = absolute(main)
        .parent()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let used = std::cell::RefCell::new(Vec::<(String, Option<String>)>::new());
    let lookup = |k: &str| match k {
        "here" => Some(Value::Str(here.clone())),
        "host_node_name" => Some(Value::Text(Text(vec![Piece::Env("HOSTNAME".into())]))),
        k => {
            let name = k.strip_prefix("ENV_")?;
            let value = std::env::var(name).ok();
            used.borrow_mut().push((name.to_string(), value.clone()));
            value.map(Value::Str)
        }
    };
    let expanded = expand(&files.value, &lookup);
    let used = used.into_inner();
    if let Some((name, _)) = used.iter().find(|(_, v)| v.is_none()) {
        return Err(InputError::at(
            &files.file,
            files.line,
            format!(
                "[include] files: %(ENV_{name})s names the environment variable {name}, which is not set (supervisord would refuse to start: \"Format string … contains names ('ENV_{name}') which cannot be expanded\")"
            ),
            &format!(
                "run the import with {name} set as supervisord would have it at start ({name}=… ctrlinit import …), or write the patterns out"
            ),
        ));
    }
    for (name, value) in &used {
        let value = value.as_deref().unwrap_or_default();
        let note = Note::at(
            &files.file,
            files.line,
            "[include] files",
            format!(
                "%(ENV_{name})s expanded from the import's environment: {name}={value:?} (supervisord expands it from its own, at start)"
            ),
            format!(
                "if supervisord runs with another {name}, import again with {name} set to that"
            ),
        );
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
    match expanded {
        Ok((text, _)) => text.as_static().ok_or_else(|| {
            InputError::at(
                &files.file,
                files.line,
                "[include] files names the host name, which the import cannot know".into(),
                "write the patterns out",
            )
        }),
        Err(e) => Err(InputError::at(
            &files.file,
            files.line,
            format!(
                "[include] files: {}",
                e.message("here, host_node_name, ENV_<variable>")
            ),
            "write the patterns with %(here)s or %(ENV_NAME)s only, %% for a literal %",
        )),
    }
}

/// Reads one included file into `input` (a directory is skipped and said; an `[include]` of
/// its own is ignored, as supervisord ignores it, and said).
fn include_one(
    input: &mut Input,
    files: &Opt,
    path: PathBuf,
    total: &mut u64,
    errors: &mut Vec<InputError>,
) {
    if path.is_dir() {
        input.notes.push(Note::at(
            &files.file,
            files.line,
            "[include] files",
            format!(
                "{} is a directory; skipped (as supervisord does)",
                path.display()
            ),
            "match files, e.g. conf.d/*.conf",
        ));
        return;
    }
    let left = TOTAL_CAP.saturating_sub(*total);
    let text = match read_text(&path, FILE_CAP.min(left), total) {
        Ok(text) => text,
        Err(e) => {
            errors.push(e);
            return;
        }
    };
    let include_files = |ini: &Ini| {
        ini.section("include")
            .and_then(|s| s.get("files", &[]).cloned())
    };
    let before = include_files(&input.ini);
    if let Err(mut e) = input.ini.read(&path, &text) {
        errors.append(&mut e);
    }
    let after = include_files(&input.ini);
    if after != before
        && let Some(nested) = after
    {
        input.notes.push(Note::at(
            &nested.file,
            nested.line,
            "[include] files",
            "an included file cannot include others (supervisord ignores this one)",
            "list its patterns in the main file's [include]",
        ));
    }
    input.files.push(path);
}

/// `path` made absolute against the working directory (not resolving links).
pub fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir()
        .map(|d| d.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// One file as UTF-8 text, read up to `cap` bytes; its size is added to `total`.
fn read_text(path: &Path, cap: u64, total: &mut u64) -> Result<String, InputError> {
    let bytes = read_regular(path, cap).map_err(|e| {
        let fix = match &e {
            ReadError::TooLarge(..) => format!(
                "the import reads files up to {} MiB each and {} MiB in all: split or trim it",
                FILE_CAP >> 20,
                TOTAL_CAP >> 20
            ),
            ReadError::NotRegular(_) => "give the path of a regular file".into(),
            ReadError::Io(_) => "check the path and that it is readable".into(),
        };
        InputError::file(path, format!("cannot read the file: {e}"), &fix)
    })?;
    *total += bytes.len() as u64;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = memchr::memchr_iter(b'\n', &e.as_bytes()[..valid]).count() + 1;
        InputError::at(
            path,
            line,
            "the file is not valid UTF-8".into(),
            "save it as UTF-8",
        )
    })
}

//! Reading the layout under ROOT, bounded and confined: symbolic links are resolved as the
//! image would resolve them (an absolute target starts again at ROOT), one that climbs above
//! ROOT is refused, and so is a chain of more than [`MAX_HOPS`] links. Files are read only when
//! regular and at most [`FILE_CAP`] bytes, [`TOTAL_CAP`] in all; directories yield at most
//! [`MAX_ENTRIES`] names each and [`TOTAL_ENTRIES`] in all. The walk has no recursion of its
//! own: the layouts have a fixed depth (`etc/s6-overlay/s6-rc.d/NAME/dependencies.d/DEP` is
//! the deepest), so its depth is bounded by the readers that call it.

use std::path::{Component, Path, PathBuf};

use crate::import::{InputError, Note};
use crate::sys::files::{ReadError, read_regular};

/// The most a file of the layout may hold (scripts, one-line settings).
pub const FILE_CAP: u64 = 256 << 10;
/// The most read in all.
pub const TOTAL_CAP: u64 = 16 << 20;
/// Names read from one directory.
pub const MAX_ENTRIES: usize = 1000;
/// Names read in all.
pub const TOTAL_ENTRIES: usize = 20_000;
/// Symbolic links followed to resolve one path.
pub const MAX_HOPS: usize = 32;

/// What is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else (a FIFO, a device, a socket).
    Other,
}

/// A file's contents as the readers use them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    /// UTF-8 text with no NUL byte.
    Text(String),
    /// Bytes that are not such text; the words say why.
    Binary(&'static str),
}

/// Why a directory's names were not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListError {
    /// More than [`MAX_ENTRIES`] names: how many there are.
    TooMany {
        /// The names counted (dot names left out).
        found: usize,
    },
    /// The names read in all would pass [`TOTAL_ENTRIES`].
    TooManyInAll,
    /// It cannot be listed; the words say why.
    Other(String),
}

impl From<String> for ListError {
    fn from(e: String) -> Self {
        ListError::Other(e)
    }
}

/// The layout's root, and what has been read from it.
#[derive(Debug)]
pub struct Tree {
    root: PathBuf,
    read: u64,
    entries: usize,
    /// Files read.
    pub files: usize,
}

impl Tree {
    /// A tree at `root` (which must be a directory).
    pub fn open(root: &Path) -> Result<Tree, String> {
        let meta = std::fs::metadata(root).map_err(|e| format!("cannot read it: {e}"))?;
        if !meta.is_dir() {
            return Err("it is not a directory".into());
        }
        Ok(Tree {
            root: root.to_path_buf(),
            read: 0,
            entries: 0,
            files: 0,
        })
    }

    /// `rel` as the user names it in the report: under ROOT as given.
    pub fn shown(&self, rel: &Path) -> PathBuf {
        self.root.join(rel)
    }

    /// Where `rel` (relative to ROOT) really is, its links resolved inside ROOT; `Ok(None)` when
    /// nothing is there.
    pub fn resolve(&self, rel: &Path) -> Result<Option<PathBuf>, String> {
        let mut done: Vec<std::ffi::OsString> = Vec::new();
        let mut todo: Vec<std::ffi::OsString> = components(rel)?;
        todo.reverse();
        let mut hops = 0;
        while let Some(part) = todo.pop() {
            if part == ".." {
                if done.pop().is_none() {
                    return Err("a path climbs above ROOT".into());
                }
                continue;
            }
            let here: PathBuf = self.root.join(done.iter().collect::<PathBuf>()).join(&part);
            let meta = match std::fs::symlink_metadata(&here) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("cannot read {}: {e}", here.display())),
            };
            if !meta.file_type().is_symlink() {
                done.push(part);
                continue;
            }
            hops += 1;
            if hops > MAX_HOPS {
                return Err(format!("more than {MAX_HOPS} symbolic links to follow"));
            }
            let target = std::fs::read_link(&here)
                .map_err(|e| format!("cannot read the link {}: {e}", here.display()))?;
            if target.is_absolute() {
                done.clear();
            }
            let mut more = components(&target)?;
            more.reverse();
            todo.extend(more);
        }
        Ok(Some(self.root.join(done.iter().collect::<PathBuf>())))
    }

    /// What is at `rel`, if anything (`Err` for a link that escapes or loops).
    pub fn kind(&self, rel: &Path) -> Result<Option<Kind>, String> {
        let Some(real) = self.resolve(rel)? else {
            return Ok(None);
        };
        Ok(std::fs::metadata(&real).ok().map(|m| {
            if m.is_file() {
                Kind::File
            } else if m.is_dir() {
                Kind::Dir
            } else {
                Kind::Other
            }
        }))
    }

    /// Whether `rel` is a directory (a broken or escaping link is not).
    pub fn is_dir(&self, rel: &Path) -> bool {
        matches!(self.kind(rel), Ok(Some(Kind::Dir)))
    }

    /// Whether `rel` is executable by its owner (a script s6 would run as is).
    pub fn executable(&self, rel: &Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        self.resolve(rel)
            .ok()
            .flatten()
            .and_then(|p| std::fs::metadata(p).ok())
            .is_some_and(|m| m.permissions().mode() & 0o100 != 0)
    }

    /// The names in directory `rel`, sorted bytewise as s6 sorts them, dot names left out (s6
    /// ignores them); names that are not UTF-8 are returned apart, to be reported. Past
    /// [`MAX_ENTRIES`] the names are only counted, so the refusal can say how many there are.
    pub fn list(&mut self, rel: &Path) -> Result<(Vec<String>, Vec<String>), ListError> {
        let real = self
            .resolve(rel)?
            .ok_or_else(|| "it does not exist".to_string())?;
        let dir = std::fs::read_dir(&real).map_err(|e| format!("cannot list it: {e}"))?;
        let (mut names, mut odd) = (Vec::new(), Vec::new());
        let mut found = 0;
        for entry in dir {
            let entry = entry.map_err(|e| format!("cannot list it: {e}"))?;
            let name = entry.file_name();
            if name.as_encoded_bytes().starts_with(b".") {
                continue;
            }
            found += 1;
            if found > MAX_ENTRIES {
                continue;
            }
            self.entries += 1;
            if self.entries > TOTAL_ENTRIES {
                return Err(ListError::TooManyInAll);
            }
            match name.into_string() {
                Ok(n) => names.push(n),
                Err(raw) => odd.push(raw.to_string_lossy().into_owned()),
            }
        }
        if found > MAX_ENTRIES {
            return Err(ListError::TooMany { found });
        }
        names.sort();
        odd.sort();
        Ok((names, odd))
    }

    /// The names in directory `rel`; nothing when it is missing; a note when it cannot be listed,
    /// and for each name that is not UTF-8. Over a cap it is an error, as `s6-rc-compile` stops
    /// on input it cannot take whole: leaving names out would drop services or dependencies
    /// and still exit 0.
    pub fn list_or_note(
        &mut self,
        rel: &Path,
        notes: &mut Vec<Note>,
        errors: &mut Vec<InputError>,
    ) -> Vec<String> {
        if !self.is_dir(rel) {
            return Vec::new();
        }
        match self.list(rel) {
            Ok((names, odd)) => {
                for o in odd {
                    notes.push(Note::at(
                        &self.shown(rel),
                        1,
                        "name",
                        format!("{o:?} is not a UTF-8 name: left out"),
                        "rename it",
                    ));
                }
                names
            }
            Err(ListError::TooMany { found }) => {
                errors.push(InputError::file(
                    &self.shown(rel),
                    format!(
                        "{found} names in this directory, more than the import reads ({MAX_ENTRIES} a directory): none of them imported"
                    ),
                    &format!(
                        "remove what the image does not run until at most {MAX_ENTRIES} are left, or write the rest as [program.NAME] tables by hand"
                    ),
                ));
                Vec::new()
            }
            Err(ListError::TooManyInAll) => {
                errors.push(InputError::file(
                    &self.shown(rel),
                    format!(
                        "the directories listed so far hold more than the import reads ({TOTAL_ENTRIES} names in all)"
                    ),
                    "remove what the image does not run, or write the rest as [program.NAME] tables by hand",
                ));
                Vec::new()
            }
            Err(ListError::Other(e)) => {
                notes.push(Note::at(
                    &self.shown(rel),
                    1,
                    "directory",
                    format!("{e}: left out"),
                    "",
                ));
                Vec::new()
            }
        }
    }

    /// The contents of file `rel`, within the caps.
    pub fn read(&mut self, rel: &Path) -> Result<Contents, String> {
        let real = self
            .resolve(rel)?
            .ok_or_else(|| "it does not exist".to_string())?;
        let left = TOTAL_CAP.saturating_sub(self.read);
        let bytes = read_regular(&real, FILE_CAP.min(left)).map_err(|e| match e {
            ReadError::TooLarge(..) if left < FILE_CAP => {
                format!("the files read so far reach the limit of {TOTAL_CAP} bytes in all")
            }
            other => other.to_string(),
        })?;
        self.read += bytes.len() as u64;
        self.files += 1;
        if bytes.contains(&0) {
            return Ok(Contents::Binary(
                "it holds a NUL byte (a binary, not a script)",
            ));
        }
        Ok(match String::from_utf8(bytes) {
            Ok(s) => Contents::Text(s),
            Err(_) => Contents::Binary("it is not UTF-8 text"),
        })
    }
}

/// `path`'s parts, `.` left out; a root or prefix part is dropped (the caller restarts at ROOT).
fn components(path: &Path) -> Result<Vec<std::ffi::OsString>, String> {
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p.to_os_string()),
            Component::ParentDir => out.push("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_resolve_inside_root_and_escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("etc/a")).unwrap();
        std::fs::write(root.join("etc/a/run"), "#!/bin/sh\n").unwrap();
        std::fs::write(dir.path().join("secret"), "outside").unwrap();
        symlink("/etc/a", root.join("etc/abs")).unwrap();
        symlink("a/run", root.join("etc/rel")).unwrap();
        symlink("../../secret", root.join("etc/out")).unwrap();
        symlink("loop", root.join("etc/loop")).unwrap();
        let mut t = Tree::open(&root).unwrap();
        // An absolute target is the image's: it starts again at ROOT, not at this machine's /.
        assert_eq!(
            t.read(Path::new("etc/abs/run")).unwrap(),
            Contents::Text("#!/bin/sh\n".into())
        );
        assert!(t.read(Path::new("etc/rel")).is_ok());
        let err = t.read(Path::new("etc/out")).unwrap_err();
        assert!(err.contains("climbs above ROOT"), "{err}");
        let err = t.read(Path::new("etc/loop")).unwrap_err();
        assert!(err.contains("symbolic links"), "{err}");
        assert_eq!(t.kind(Path::new("etc/none")).unwrap(), None);
    }

    #[test]
    fn nul_and_non_utf8_are_said_not_read_as_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("nul"), b"#!/bin/sh\0x").unwrap();
        std::fs::write(dir.path().join("latin"), b"echo caf\xe9\n").unwrap();
        let big = std::fs::File::create(dir.path().join("big")).unwrap();
        big.set_len(FILE_CAP + 1).unwrap();
        let mut t = Tree::open(dir.path()).unwrap();
        assert!(matches!(t.read(Path::new("nul")), Ok(Contents::Binary(w)) if w.contains("NUL")));
        assert!(
            matches!(t.read(Path::new("latin")), Ok(Contents::Binary(w)) if w.contains("UTF-8"))
        );
        assert!(
            t.read(Path::new("big"))
                .unwrap_err()
                .contains("over the limit")
        );
    }
}

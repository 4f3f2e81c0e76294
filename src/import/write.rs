//! Writing the output: each file into the output directory (created if missing) through a
//! temporary file renamed into place, so a file is never half written; or all of them to
//! standard output, each under a `# ==> NAME <==` line.

use std::io::Write;
use std::path::Path;

use super::toml_out::OutFile;

/// Writes `files` into `dir`; the error names the file that could not be written.
pub fn write_dir(dir: &Path, files: &[OutFile]) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the directory {}: {e}", dir.display()))?;
    for f in files {
        let path = dir.join(&f.name);
        if path.is_dir() {
            return Err(format!(
                "cannot write {}: it is a directory",
                path.display()
            ));
        }
        let tmp = dir.join(format!(".{}.tmp", f.name));
        let written = std::fs::File::create(&tmp)
            .and_then(|mut file| {
                file.write_all(f.render().as_bytes())?;
                file.sync_all()
            })
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("cannot write {}: {e}", path.display()));
        }
    }
    Ok(())
}

/// Every file as one text, for standard output.
pub fn render_all(files: &[OutFile]) -> String {
    let mut out = String::new();
    for (i, f) in files.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("# ==> {} <==\n", f.name));
        out.push_str(&f.render());
    }
    out
}

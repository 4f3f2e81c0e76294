//! Loading a `conf.d/` directory: every `*.toml` in lexical order, then the checks that span
//! files (one `[init]`, unique names, dependencies that exist, no cycles).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use toml::de::DeTable;

use super::error::{ConfigError, ConfigErrors};
use super::exec_limits::{self, EnvFiles};
use super::external_table::{LocatedExternal, check_externals, read_external};
use super::graph::Graph;
use super::init_table::read_init;
use super::instances;
use super::names::{short, valid_name};
use super::reader::{Reader, get};
use super::schema::{DependencyDraft, ProgramDraft};
use super::spec::{
    Condition, Config, Dependency, InitSettings, Kind, ProgramSpec, RestartPolicy, StdioMode,
};
use crate::sys::files::{ReadError, read_regular};

/// Name of the program made from a `--` command.
pub const MAIN_PROGRAM: &str = "main";

/// What to load and with which environment.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The directory whose `*.toml` files are the configuration (`--config-dir`,
    /// `/etc/ctrlinit/conf.d` by default).
    pub dir: PathBuf,
    /// A command given after `--`: run as the `main` program.
    pub main_command: Option<Vec<String>>,
    /// The environment to interpolate from; `None` is ctrlinit's own.
    pub env: Option<HashMap<String, String>>,
}

/// Settings given on the command line or in the environment, which win over the files (so one
/// image runs with different mounts, and tests use private paths).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The control socket's path from `--socket` or `CTRLINIT_SOCKET`, instead of `[init]
    /// socket`; `None` when neither is given.
    pub socket: Option<PathBuf>,
    /// The log directory from `CTRLINIT_LOG_DIR`, instead of `[init] log_dir`; `None` when it is
    /// unset or empty.
    pub log_dir: Option<PathBuf>,
    /// The crash directory from `CTRLINIT_CRASH_DIR`, instead of `[init] crash_dir`; `None` when
    /// it is unset or empty.
    pub crash_dir: Option<PathBuf>,
}

impl Overrides {
    /// `socket` from the command line, the directories from the environment.
    pub fn from_env(socket: Option<PathBuf>) -> Self {
        Overrides {
            socket,
            // Set but empty (`-e CTRLINIT_LOG_DIR=`) means not set, as in a shell's ${VAR:-…}.
            log_dir: std::env::var_os("CTRLINIT_LOG_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
            crash_dir: std::env::var_os("CTRLINIT_CRASH_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
        }
    }

    /// Applies them to a loaded config.
    pub fn apply(&self, config: &mut Config) {
        let chosen = &mut config.init.chosen;
        if let Some(s) = &self.socket {
            config.init.socket = crate::sys::init::resolve(s);
            chosen.socket = true;
        }
        if let Some(d) = &self.log_dir {
            config.init.log_dir = crate::sys::init::resolve(d);
            chosen.log_dir = true;
        }
        if let Some(d) = &self.crash_dir {
            config.init.crash_dir = crate::sys::init::resolve(d);
            chosen.crash_dir = true;
        }
    }
}

/// Loads `opts` and applies `overrides`.
pub fn load_with(opts: &LoadOptions, overrides: &Overrides) -> Result<Config, ConfigErrors> {
    let mut config = load_dir(opts)?;
    overrides.apply(&mut config);
    Ok(config)
}

/// The environment as the interpolation sees it.
type Lookup = dyn Fn(&str) -> Option<String>;

/// A program draft with the file it came from.
struct Located {
    draft: ProgramDraft,
    file: PathBuf,
    line: usize,
}

/// The largest config file read, in bytes (a larger one is an error, not read in part).
pub const FILE_CAP: u64 = 4 << 20;

/// The most read from one config directory in all, in bytes: a directory of many files cannot
/// make ctrlinit hold more than this.
pub const TOTAL_CAP: u64 = 16 << 20;

/// What the files held, before the checks that span them.
#[derive(Default)]
struct Drafts {
    /// `[init]` and where it was defined.
    init: Option<(InitSettings, String)>,
    programs: Vec<Located>,
    /// `[external.NAME]` tables.
    externals: Vec<LocatedExternal>,
}

/// Loads and validates the configuration, returning every problem at once.
pub fn load_dir(opts: &LoadOptions) -> Result<Config, ConfigErrors> {
    load_dir_as(opts, false)
}

/// Loads as `check --build` does, where the image is built: the container's environment is
/// not known there, so a variable that is unset (with no default) is a note, not an error,
/// and the values that depend on it are left to be checked at start.
pub fn load_for_build(opts: &LoadOptions) -> Result<Config, ConfigErrors> {
    load_dir_as(opts, true)
}

/// Whether `e` is a variable the environment did not give (`${X}`, `${X:?…}`).
fn unset_variable(e: &ConfigError) -> bool {
    e.message.starts_with("environment variable ")
        && (e.message.contains("is not set") || e.message.contains("is required"))
}

fn load_dir_as(opts: &LoadOptions, build: bool) -> Result<Config, ConfigErrors> {
    let lookup = lookup_of(opts);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut drafts = Drafts::default();
    let files = config_files(
        &opts.dir,
        opts.main_command.is_some(),
        &mut errors,
        &mut warnings,
    );
    let mut total = 0u64;
    for file in files {
        let left = TOTAL_CAP.saturating_sub(total);
        let Some(bytes) = read_bytes(&file, left, &mut errors) else {
            continue;
        };
        total += bytes.len() as u64;
        let Some(text) = utf8(&file, bytes, &mut errors) else {
            continue;
        };
        read_file(&file, &text, lookup.as_ref(), &mut errors, &mut drafts);
    }
    let init = drafts.init.map(|(s, _)| s).unwrap_or_default();
    let mut programs = drafts.programs;
    if let Some(cmd) = &opts.main_command {
        add_main_program(cmd, init.main_stdio, &mut programs, &mut errors);
    }
    let external_names: HashSet<String> = drafts
        .externals
        .iter()
        .map(|e| e.spec.name.clone())
        .collect();
    let specs = check_programs(programs, &init, &external_names, &mut errors);
    let externals = check_externals(drafts.externals, &specs, &mut errors);
    if specs.is_empty() && errors.is_empty() {
        errors.push(file_error(
            &opts.dir,
            None,
            "no programs are configured".into(),
            Some(
                "add a [program.NAME] table to a .toml file here, or run `ctrlinit -- CMD ARGS`"
                    .into(),
            ),
        ));
    }
    check_cycles(&specs, &mut errors);
    if build {
        // Said as notes, with where; the rest of the config is checked as usual.
        for e in errors.iter().filter(|e| unset_variable(e)) {
            let at = match e.line {
                Some(l) => format!("{}:{l}", e.file.display()),
                None => e.file.display().to_string(),
            };
            warnings.push(format!(
                "note: {at}: {}: {}; unknown at build time, {} is checked at start",
                e.key, e.message, e.key
            ));
        }
        errors.retain(|e| !unset_variable(e));
    }
    if !errors.is_empty() {
        return Err(said_once_in_order(errors, warnings));
    }
    // Into a list of its own: `collect` would reuse the specs' buffer (hundreds of bytes a
    // spec) to hold pointers, and keep all of it for the life of the configuration.
    let mut programs = Vec::with_capacity(specs.len());
    programs.extend(specs.into_iter().map(std::sync::Arc::new));
    Ok(Config {
        init,
        programs,
        externals,
        warnings,
    })
}

/// Where interpolation reads variables: the map `opts` gives (so a caller such as a benchmark
/// or the fuzzer loads with a fixed environment), else ctrlinit's own environment.
fn lookup_of(opts: &LoadOptions) -> Box<Lookup> {
    match &opts.env {
        Some(map) => {
            let map = map.clone();
            Box::new(move |k| map.get(k).cloned())
        }
        None => Box::new(|k| std::env::var(k).ok()),
    }
}

/// A config file's bytes, at most [`FILE_CAP`] and at most `left` of the directory's
/// [`TOTAL_CAP`]; `None` (with the error said) when it cannot be read or is too large.
fn read_bytes(file: &Path, left: u64, errors: &mut Vec<ConfigError>) -> Option<Vec<u8>> {
    match read_regular(file, FILE_CAP.min(left)) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            let fix = match e {
                ReadError::TooLarge(..) if left < FILE_CAP => format!(
                    "the files of a config directory are read up to {} MiB in all: split the rest out, or remove it",
                    TOTAL_CAP >> 20
                ),
                ReadError::TooLarge(..) => format!(
                    "a config file is read up to {} MiB: split it, or remove what is not configuration",
                    FILE_CAP >> 20
                ),
                ReadError::NotRegular(_) => {
                    "config files must be regular files: replace it with one, or remove it".into()
                }
                ReadError::Io(_) => "make it readable by ctrlinit".into(),
            };
            let why = format!("cannot read the file: {e}");
            errors.push(file_error(file, None, why, Some(fix)));
            None
        }
    }
}

/// A file's bytes as text; `None` (with the line of the first bad byte) when they are not
/// UTF-8, which TOML requires.
fn utf8(file: &Path, bytes: Vec<u8>, errors: &mut Vec<ConfigError>) -> Option<String> {
    match String::from_utf8(bytes) {
        Ok(t) => Some(t),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let line = memchr::memchr_iter(b'\n', &e.as_bytes()[..valid]).count() + 1;
            let why = "the file is not valid UTF-8 (TOML must be)".into();
            let fix = "save it as UTF-8".into();
            errors.push(file_error(file, Some(line), why, Some(fix)));
            None
        }
    }
}

/// The errors as reported, in file and line order. Duplicates go: the instances of one table
/// make the same mistakes (a dependency that is not defined, a cycle through their group), and
/// each is said once.
fn said_once_in_order(mut errors: Vec<ConfigError>, warnings: Vec<String>) -> ConfigErrors {
    let mut seen = HashSet::new();
    errors.retain(|e| seen.insert(e.clone()));
    errors.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    ConfigErrors { errors, warnings }
}

/// Reads one file's `[init]` and `[program.NAME]` tables into `drafts`.
fn read_file(
    file: &Path,
    text: &str,
    lookup: &Lookup,
    errors: &mut Vec<ConfigError>,
    drafts: &mut Drafts,
) {
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            let line = e.span().map(|s| line_of(text, s.start));
            errors.push(file_error(
                file,
                line,
                format!("invalid TOML: {}", e.message().trim()),
                Some("fix the syntax at this line".into()),
            ));
            return;
        }
    };
    let mut r = Reader::new(file, text, lookup, errors);
    r.reject_unknown_keys(doc.get_ref(), "", &["init", "program", "external"]);
    if let Some(v) = get(doc.get_ref(), "init") {
        let here = r.location(&v.span());
        match &drafts.init {
            Some((_, first)) => r.error(
                &v.span(),
                "init",
                format!("[init] is defined again (first at {first})"),
                Some("keep one [init] table across all files".into()),
            ),
            None => {
                if let Some(settings) = read_init(&mut r, v) {
                    drafts.init = Some((settings, here));
                }
            }
        }
    }
    if let Some(v) = get(doc.get_ref(), "program")
        && let Some(table) = r.table(v, "program")
    {
        for (name, pv) in table.iter() {
            let name_str: &str = name.get_ref();
            let line = r.line_of(name.span().start);
            for draft in instances::read_table(&mut r, name_str, name.span(), pv) {
                drafts.programs.push(Located {
                    draft,
                    file: file.to_path_buf(),
                    line,
                });
            }
        }
    }
    read_externals(&mut r, doc.get_ref(), file, drafts);
}

/// Reads the `[external.NAME]` tables of one file into `drafts`.
fn read_externals(r: &mut Reader<'_>, doc: &DeTable<'_>, file: &Path, drafts: &mut Drafts) {
    let Some(v) = get(doc, "external") else {
        return;
    };
    let Some(table) = r.table(v, "external") else {
        return;
    };
    for (name, ev) in table.iter() {
        let line = r.line_of(name.span().start);
        let at = format!("{}:{line}", file.display());
        if let Some(spec) = read_external(r, name.get_ref(), ev, at) {
            drafts.externals.push(LocatedExternal {
                spec,
                file: file.to_path_buf(),
                line,
            });
        }
    }
}

/// The program made from a command given after `--`.
fn add_main_program(
    cmd: &[String],
    stdio: StdioMode,
    programs: &mut Vec<Located>,
    errors: &mut Vec<ConfigError>,
) {
    if let Some(existing) = programs.iter().find(|p| p.draft.spec.name == MAIN_PROGRAM) {
        errors.push(file_error(
            &existing.file,
            Some(existing.line),
            format!("the name `{MAIN_PROGRAM}` is taken by the command given after --"),
            Some(format!("rename [program.{MAIN_PROGRAM}]")),
        ));
    }
    let mut spec = ProgramSpec::new(MAIN_PROGRAM, cmd.to_vec(), Kind::Service);
    spec.main = true;
    spec.restart = RestartPolicy::Never;
    spec.stdio = stdio;
    spec.passthrough = true;
    spec.defined_at = "the command line (after --)".into();
    programs.push(Located {
        draft: ProgramDraft {
            spec,
            deps: Vec::new(),
            after: Vec::new(),
            max_cores: None,
            max_reports: None,
            inherit_env: None,
            lines: Default::default(),
        },
        file: PathBuf::from("--"),
        line: 0,
    });
}

/// The `*.toml` entries of `dir` in lexical order. A symbolic link that leads nowhere (dangling,
/// or a loop) is skipped with a warning; what is not a regular file is an error, read later.
fn config_files(
    dir: &Path,
    dir_optional: bool,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<String>,
) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir_optional => return Vec::new(),
        Err(e) => {
            errors.push(file_error(
                dir,
                None,
                format!("cannot read the config directory: {e}"),
                Some("mount the conf.d directory there, pass --config-dir DIR or set CTRLINIT_CONFIG_DIR".into()),
            ));
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for path in entries.filter_map(|e| e.ok()).map(|e| e.path()) {
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && let Err(e) = std::fs::metadata(&path) {
            let why = if e.raw_os_error() == Some(libc::ELOOP) {
                "a symbolic link that loops".to_string()
            } else {
                match std::fs::read_link(&path) {
                    Ok(to) => format!("a symbolic link to {}, which does not exist", to.display()),
                    Err(_) => format!("a symbolic link that cannot be followed ({e})"),
                }
            };
            warnings.push(format!("{} is {why}; skipped", path.display()));
            continue;
        }
        files.push(path);
    }
    files.sort();
    files
}

/// Settles defaults and cross-program references; returns the specs sorted by name.
fn check_programs(
    programs: Vec<Located>,
    init: &InitSettings,
    externals: &HashSet<String>,
    errors: &mut Vec<ConfigError>,
) -> Vec<ProgramSpec> {
    // Where each name was first defined, as messages say it ("at f:3", "as an instance of …").
    let mut first_seen: HashMap<String, String> = HashMap::new();
    let mut kinds: HashMap<String, Kind> = HashMap::new();
    // Instanced tables: the names of their instances, in index order.
    let mut groups: HashMap<String, Vec<String>> = HashMap::new();
    // Tables whose name was taken already: none of their instances is kept.
    let mut taken_tables: HashSet<(PathBuf, usize)> = HashSet::new();
    let mut keep = vec![true; programs.len()];
    for (i, p) in programs.iter().enumerate() {
        let name = &p.draft.spec.name;
        let here = format!("{}:{}", p.file.display(), p.line);
        let table = (p.file.clone(), p.line);
        if taken_tables.contains(&table) {
            keep[i] = false;
            continue;
        }
        if let Some(instance) = &p.draft.spec.instance
            && instance.index == 0
        {
            let group = &instance.group;
            if let Some(first) = first_seen.get(group) {
                errors.push(defined_twice(p, group, first));
                taken_tables.insert(table);
                keep[i] = false;
                continue;
            }
            first_seen.insert(group.clone(), format!("at {here}"));
            groups.insert(group.clone(), Vec::new());
        }
        if let Some(first) = first_seen.get(name) {
            keep[i] = false;
            // The command after `--` already has its own error ("the name is taken").
            if p.file != Path::new("--") {
                errors.push(defined_twice(p, name, first));
            }
            continue;
        }
        let first = match &p.draft.spec.instance {
            Some(instance) => format!("as an instance of [program.{}] at {here}", instance.group),
            None => format!("at {here}"),
        };
        first_seen.insert(name.clone(), first);
        if valid_name(name) {
            kinds.insert(name.clone(), p.draft.spec.kind);
        }
        if let Some(instance) = &p.draft.spec.instance
            && let Some(members) = groups.get_mut(&instance.group)
        {
            members.push(name.clone());
        }
    }
    let mut specs = Vec::new();
    let mut env_files = EnvFiles::new();
    let known = Known {
        kinds: &kinds,
        groups: &groups,
        externals,
    };
    for (Located { draft, file, .. }, keep) in programs.into_iter().zip(keep) {
        if !keep {
            continue;
        }
        let spec = finish_spec(&draft, init, &known, &file, errors);
        exec_limits::check(&spec, &draft.lines, &file, &mut env_files, errors);
        specs.push(spec);
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs
}

/// A program's spec with what `[init]` gives it and its dependencies resolved.
fn finish_spec(
    draft: &ProgramDraft,
    init: &InitSettings,
    known: &Known<'_>,
    file: &Path,
    errors: &mut Vec<ConfigError>,
) -> ProgramSpec {
    let mut spec = draft.spec.clone();
    spec.max_cores = draft.max_cores.unwrap_or(init.max_cores);
    spec.max_reports = draft.max_reports.unwrap_or(init.max_reports);
    spec.inherit_env = draft.inherit_env.unwrap_or(init.inherit_env);
    spec.depends_on = resolve_deps(&spec, &draft.deps, known, file, errors, "depends_on");
    spec.after = resolve_deps(&spec, &draft.after, known, file, errors, "after")
        .into_iter()
        .map(|d| d.name)
        .collect();
    // A shared name that is a program's (or an instanced table's) would make `restart NAME`
    // mean two things.
    if let Some(g) = &spec.member_of
        && (known.kinds.contains_key(g) || known.groups.contains_key(g))
    {
        let (_, line) = split_location(&spec.defined_at);
        errors.push(ConfigError {
            file: file.to_path_buf(),
            line,
            key: spec.written_as("member_of"),
            message: format!("`{g}` is the name of a program; member_of needs a name of its own"),
            fix: Some(format!(
                "choose another name than `{g}` (a program named so answers to it already)"
            )),
        });
    }
    spec
}

/// `name` (a program's, or an instanced table's) defined again by `p`.
fn defined_twice(p: &Located, name: &str, first: &str) -> ConfigError {
    let fix = if p.draft.spec.instance.is_some() || first.starts_with("as an instance") {
        "give each program one name: the instances of [program.NAME] with instances = N are NAME-0 … NAME-<N-1>"
    } else {
        "give each program one [program.NAME] table across all files"
    };
    ConfigError {
        key: format!("program.{}", short(name)),
        ..file_error(
            &p.file,
            Some(p.line),
            format!("program `{name}` is defined twice (first {first})"),
            Some(fix.into()),
        )
    }
}

/// The names a dependency may name: programs (with their types) and instanced tables.
struct Known<'a> {
    kinds: &'a HashMap<String, Kind>,
    groups: &'a HashMap<String, Vec<String>>,
    /// `[external.NAME]` names: each a node of its own, always waited for as `ready`.
    externals: &'a HashSet<String>,
}

/// The dependencies of `spec` under `relation` (`depends_on`, or `after`: ordering only); one
/// on an instanced table is one on each of its instances. Messages and keys name the table the
/// dependency was written in, so the instances of one table say one thing (reported once).
fn resolve_deps(
    spec: &ProgramSpec,
    deps: &[DependencyDraft],
    known: &Known<'_>,
    file: &Path,
    errors: &mut Vec<ConfigError>,
    relation: &str,
) -> Vec<Dependency> {
    let name = spec.instance.as_ref().map_or(&spec.name, |i| &i.group);
    let line = |d: &DependencyDraft| Some(d.line);
    let key =
        |d: &DependencyDraft| format!("program.{}.{relation}.{}", short(name), short(&d.name));
    let verb = verb_of(relation);
    let mut out = Vec::new();
    for d in deps {
        let targets: Vec<(&str, Kind)> = match (known.kinds.get(&d.name), known.groups.get(&d.name))
        {
            (Some(kind), _) => vec![(d.name.as_str(), *kind)],
            (None, Some(members)) => members
                .iter()
                .filter_map(|m| Some((m.as_str(), *known.kinds.get(m)?)))
                .collect(),
            (None, None) if known.externals.contains(&d.name) => {
                if let Some(external) = external_dependency(d, file, key(d), errors) {
                    out.push(external);
                }
                continue;
            }
            (None, None) => {
                errors.push(ConfigError {
                    file: file.to_path_buf(),
                    line: line(d),
                    key: key(d),
                    message: format!("`{name}` {verb} `{}`, which is not defined", d.name),
                    fix: Some(missing_dependency_fix(name, &d.name, known)),
                });
                continue;
            }
        };
        for (target, kind) in targets {
            let condition = d.condition.unwrap_or(match kind {
                Kind::Service => Condition::Ready,
                Kind::Oneshot => Condition::Completed,
            });
            if condition == Condition::Completed && kind == Kind::Service {
                errors.push(ConfigError {
                    file: file.to_path_buf(),
                    line: line(d),
                    key: key(d),
                    message: format!("`{}` is a service and never completes", d.name),
                    fix: Some(r#"wait for "started" or "ready" instead"#.into()),
                });
                break;
            }
            if target == spec.name {
                let message = self_dependency(name, d.name == spec.name, verb);
                errors.push(ConfigError {
                    file: file.to_path_buf(),
                    line: line(d),
                    key: key(d),
                    message,
                    fix: Some("a program cannot depend on itself".into()),
                });
                continue;
            }
            if out.iter().any(|x: &Dependency| x.name == target) {
                continue;
            }
            out.push(Dependency {
                name: target.to_string(),
                condition,
                restart: d.restart,
            });
        }
    }
    out
}

/// How a message says `relation`: `depends_on` requires, `after` only orders.
fn verb_of(relation: &str) -> &'static str {
    if relation == "after" {
        "is ordered after"
    } else {
        "depends on"
    }
}

/// The message for a program `name` that depends on (or is ordered after) itself, by its own
/// name (`direct`) or by its table's name, which takes in its own instances.
fn self_dependency(name: &str, direct: bool, verb: &str) -> String {
    if direct {
        format!("dependency cycle: {name} -> {name}")
    } else {
        format!("dependency cycle: `{name}` {verb} its own instances")
    }
}

/// The fix for a dependency on an undefined program: the closest defined name (a typo, most
/// likely), else the names there are. The dependent itself is never offered.
fn missing_dependency_fix(dependent: &str, missing: &str, known: &Known<'_>) -> String {
    // An instanced program is offered by its table's name, not by each instance's.
    let instance = |n: &str| {
        known
            .groups
            .values()
            .any(|members| members.iter().any(|m| m == n))
    };
    let mut others: Vec<&str> = known
        .kinds
        .keys()
        .map(String::as_str)
        .filter(|n| !instance(n))
        .chain(known.groups.keys().map(String::as_str))
        .chain(known.externals.iter().map(String::as_str))
        .filter(|n| *n != dependent)
        .collect();
    others.sort_unstable();
    let closest = others
        .iter()
        .map(|n| (strsim::levenshtein(n, missing), *n))
        .filter(|(d, n)| *d <= 2.max(missing.len().min(n.len()) / 3))
        .min();
    match (closest, others.is_empty()) {
        (Some((_, n)), _) => format!("did you mean `{n}`? Otherwise define [program.{missing}]"),
        (None, true) => format!("define [program.{missing}], or remove the dependency"),
        (None, false) => format!(
            "define [program.{missing}], or depend on one of: {}",
            others.join(", ")
        ),
    }
}

/// A dependency on `[external.NAME]`: `ready` (or `started`, the same for an external); an
/// external never completes.
fn external_dependency(
    d: &DependencyDraft,
    file: &Path,
    key: String,
    errors: &mut Vec<ConfigError>,
) -> Option<Dependency> {
    if d.condition == Some(Condition::Completed) {
        errors.push(ConfigError {
            file: file.to_path_buf(),
            line: Some(d.line),
            key,
            message: format!("`{}` is an external dependency and never completes", d.name),
            fix: Some(r#"wait for "ready" (its check passes) instead"#.into()),
        });
        return None;
    }
    Some(Dependency {
        name: d.name.clone(),
        condition: Condition::Ready,
        restart: d.restart,
    })
}

fn check_cycles(specs: &[ProgramSpec], errors: &mut Vec<ConfigError>) {
    let graph = Graph::new(specs);
    for cycle in graph.cycles() {
        let path: Vec<&str> = cycle.iter().map(|&i| specs[i].name.as_str()).collect();
        let first = &specs[cycle[0]];
        let (file, line) = split_location(&first.defined_at);
        errors.push(ConfigError {
            file,
            line,
            key: format!("program.{}.depends_on", short(&first.name)),
            message: format!("dependency cycle: {}", path.join(" -> ")),
            fix: Some("remove one of these dependencies (depends_on or after)".into()),
        });
    }
}

fn split_location(at: &str) -> (PathBuf, Option<usize>) {
    match at.rsplit_once(':') {
        Some((file, line)) => (PathBuf::from(file), line.parse().ok()),
        None => (PathBuf::from(at), None),
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    memchr::memchr_iter(b'\n', &text.as_bytes()[..end]).count() + 1
}

fn file_error(
    file: &Path,
    line: Option<usize>,
    message: String,
    fix: Option<String>,
) -> ConfigError {
    ConfigError {
        file: file.to_path_buf(),
        line,
        key: String::new(),
        message,
        fix,
    }
}

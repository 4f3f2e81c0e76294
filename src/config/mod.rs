//! Configuration: the typed settings ctrlinit runs from ([`spec`]), their loading from a
//! `conf.d/` directory of TOML files ([`load`]), and the dependency graph of a configuration
//! ([`graph`]: cycles, start levels, closures).
//!
//! Loading is all-or-nothing: [`load_dir`] either returns a complete, validated [`Config`] or every
//! problem it found (file, line, key and the fix), so nothing starts from a half-valid config.
//! Values are interpolated from the environment (`${VAR}`, `${VAR:-default}`, `${VAR:?message}`)
//! before they are typed.

#![warn(missing_docs)]

mod checks;
pub mod describe;
pub mod descriptors;
pub mod env_file;
mod error;
mod exec_limits;
mod external_spec;
mod external_table;
pub mod graph;
mod health;
mod identity;
mod init_table;
pub mod instances;
mod interpolate;
pub mod limits;
mod limits_table;
mod load;
pub mod names;
mod network;
pub mod preflight;
mod reader;
mod schema;
pub mod spec;
mod supervisord_keys;
mod targets;
mod units;

pub use error::{ConfigError, ConfigErrors};
pub use exec_limits::{EXEC_BUDGET, MAX_ARG_STRLEN};

/// Every key each kind of table accepts, by the table's name as the book's configuration block
/// (docs/src/reference/config.md) writes it: a test holds that block to this list, so no key
/// goes undocumented.
pub fn known_keys() -> [(&'static str, &'static [&'static str]); 7] {
    [
        ("init", init_table::INIT_KEYS),
        ("init.network", network::NETWORK_KEYS),
        ("program.api", schema::PROGRAM_KEYS),
        ("program.api.health", health::HEALTH_KEYS),
        ("program.api.log", schema::LOG_KEYS),
        ("program.api.limits", limits_table::LIMITS_KEYS),
        ("external.config-api", external_table::EXTERNAL_KEYS),
    ]
}
pub use identity::resolve_group;
pub use interpolate::interpolate;
pub use load::{
    FILE_CAP, LoadOptions, MAIN_PROGRAM, Overrides, TOTAL_CAP, load_dir, load_for_build, load_with,
};
pub use spec::*;
pub use units::parse_size;

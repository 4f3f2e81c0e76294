//! The config loader (`ctrlinit::config::load_dir`) on arbitrary TOML text.
//!
//! The input is split into files of one conf.d directory at lines `#@file`; a first line `#@main`
//! adds a `--` command. Non-UTF-8 inputs are skipped (see `config_bytes`). A loaded config must
//! also be one the supervisor can run (see `ctrlinit_fuzz::check_loaded`).
#![no_main]

use std::cell::RefCell;

use ctrlinit_fuzz::{ConfigDir, check_config_toml};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static DIR: RefCell<ConfigDir> = RefCell::new(ConfigDir::new());
}

fuzz_target!(|data: &[u8]| {
    DIR.with(|d| check_config_toml(&mut d.borrow_mut(), data));
});

//! The config loader (`ctrlinit::config::load_dir`) on arbitrary bytes: not UTF-8, NULs, BOMs,
//! lone CRs. Same file splitting as `config_toml` (`#@file` lines, a first line `#@main`).
#![no_main]

use std::cell::RefCell;

use ctrlinit_fuzz::{ConfigDir, check_config_bytes};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static DIR: RefCell<ConfigDir> = RefCell::new(ConfigDir::new());
}

fuzz_target!(|data: &[u8]| {
    DIR.with(|d| check_config_bytes(&mut d.borrow_mut(), data));
});

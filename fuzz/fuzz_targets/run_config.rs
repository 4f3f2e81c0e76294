//! A config the loader accepts, driven through the pure core and the log thread (see
//! `ctrlinit_fuzz::check_run`): names, log settings and console formatting as a start meets them.
#![no_main]

use std::cell::RefCell;

use ctrlinit_fuzz::{ConfigDir, check_run};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static DIR: RefCell<ConfigDir> = RefCell::new(ConfigDir::new());
}

fuzz_target!(|data: &[u8]| {
    DIR.with(|d| check_run(&mut d.borrow_mut(), data));
});

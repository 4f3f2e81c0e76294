//! `interpolate`, `parse_size`, `parse_duration`, `parse_signal` and `signal_name` on arbitrary
//! strings, with round-trip properties.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ctrlinit_fuzz::check_units(data));

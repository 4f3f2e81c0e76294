//! The log line framer (`ctrlinit::logs::frame::Framer`): a stream and its read boundaries are
//! decoded from the input (see `ctrlinit_fuzz::decode_framer_input`); the lines delivered must be
//! the stream's lines, no byte lost or duplicated, whatever the read boundaries.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ctrlinit_fuzz::check_framer(data));

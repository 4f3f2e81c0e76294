//! The control-socket request decoder (`ctrlinit::api::protocol::decode_request`) on arbitrary
//! bytes; accepted requests must survive an encode/decode round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ctrlinit_fuzz::check_protocol(data));

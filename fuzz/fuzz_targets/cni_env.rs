//! Fuzz how ipam reads a CNI call from its environment (`CNI_COMMAND`, `CNI_CONTAINERID`,
//! `CNI_IFNAME`, `CNI_ARGS` with `IP=` and `IgnoreUnknown`): arbitrary `KEY=VALUE` lines give a
//! call or an error with CNI's code for a bad environment (4), never a panic.

#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let env: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
    match ipam::cni::call_from(|k| env.get(k).map(|v| v.to_string())) {
        Ok(call) => {
            let _ = format!("{:?}", call.requested);
        }
        Err(e) => assert_eq!(e.code, 4, "{e}"),
    }
});

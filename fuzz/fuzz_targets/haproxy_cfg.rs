//! Fuzz lb-proxy's haproxy.cfg reader: arbitrary text gives a configuration or errors with a
//! place inside the text, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count();
    if let Err(errors) = lb_proxy::config::parse_str(&text, "fuzz.cfg") {
        assert!(!errors.is_empty());
        for (location, message) in &errors.0 {
            assert!(!message.is_empty());
            assert!(location.line <= lines.max(1), "{location}: {message}");
        }
    }
});

//! Fuzz vrrpd's keepalived.conf reader: arbitrary text must give a configuration or errors
//! with a place, never a panic; and every error names `fuzz.conf` and a line within the text
//! (or one of the files it includes).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count();
    if let Err(errors) = vrrpd::config::parse_str(&text, "fuzz.conf") {
        assert!(!errors.is_empty());
        for (location, message) in &errors.0 {
            assert!(!message.is_empty());
            if location.file == "fuzz.conf" {
                assert!(location.line <= lines.max(1), "{location}: {message}");
            }
        }
    }
});

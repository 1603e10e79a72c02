//! Fuzz how vrrpd reads a `track_file`'s value as keepalived does (`strtol(buf, NULL, 0)` of
//! its first 127 bytes): any bytes give a value within keepalived's range (32 bits, or 2^31)
//! or none, never a panic, and a plain decimal number after C's blanks reads as itself.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vrrpd::daemon::track_files::{is_c_space, value};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(&data[..data.len().min(127)]);
    let read = value(&text);
    if let Some(v) = read {
        assert!((i64::from(i32::MIN)..=i64::from(i32::MAX) + 1).contains(&v), "{v}");
    }
    let t = text.trim_start_matches(is_c_space);
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let digits = &t[..end];
    if digits.starts_with(|c: char| ('1'..='9').contains(&c)) {
        if let Ok(n) = digits.parse::<i64>() {
            if n <= i64::from(i32::MAX) + 1 {
                assert_eq!(read, Some(n), "{text:?}");
            }
        }
    }
});

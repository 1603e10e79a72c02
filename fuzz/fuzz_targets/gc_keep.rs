//! Fuzz the reader of `ipam gc --keep` files (attachments, `CONTAINERID/IFNAME` a line): any
//! text gives a set of attachments or an error naming a line of the text, never a panic; every
//! attachment read is one line's, trimmed, with one `/` between two non-empty parts.

#![no_main]

use libfuzzer_sys::fuzz_target;

use ipam::cni::gc::parse_keep;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_keep(text) {
        Ok(keep) => {
            for a in &keep {
                let (id, ifname) = a.split_once('/').expect("CONTAINERID/IFNAME");
                assert!(!id.is_empty() && !ifname.is_empty() && !ifname.contains('/'));
                assert_eq!(a.trim(), a);
                assert!(text.contains(a.as_str()));
            }
        }
        Err((line, why)) => {
            assert!(line >= 1 && line <= text.lines().count(), "line {line}");
            assert!(why.contains("CONTAINERID/IFNAME"), "{why}");
        }
    }
});

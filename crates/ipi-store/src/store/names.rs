//! Pool and owner names as one segment of a path or a key, and back.

/// A pool or owner name as one safe path segment or key segment: letters, digits, `-`, `_` and
/// `.` stay (but a leading `.`), every other byte becomes `%XX`.
pub fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, b) in name.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        if plain {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The name [`escape`] made `text` from; `None` when `text` is no escaped name.
pub fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_to_one_segment_and_back() {
        for name in [
            "netconfig/CtlPlane/subnet1",
            ".hidden",
            "a b%c",
            "ctr-1/eth0",
            "é",
        ] {
            let e = escape(name);
            assert!(!e.contains('/') && !e.starts_with('.'), "{e}");
            assert_eq!(unescape(&e).as_deref(), Some(name));
        }
        assert_eq!(escape("plain-name_1.2"), "plain-name_1.2");
        assert_eq!(unescape("%G1"), None);
        assert_eq!(unescape("%4"), None);
    }
}

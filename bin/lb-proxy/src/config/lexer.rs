//! haproxy.cfg's words, as haproxy 2.6 splits a line (`parse_line`): blanks separate, `#`
//! outside quotes ends the line, single quotes keep everything as written, double quotes
//! group, and a backslash outside single quotes escapes: `\r`, `\n`, `\t` and `\xNN` stand for
//! their bytes (a `tcp-check send` of `PING\r\n`), any other character for itself.

/// The words of `line`, or why it has none (an open quote, a short `\x`).
pub fn words(line: &str) -> Result<Vec<String>, String> {
    ipi_core::place::words_with(line, Some('#'), ipi_core::place::Escapes::Haproxy)
}

/// The bytes a word stands for: each character below 256 one byte (what `\xNN` made), others
/// their UTF-8.
pub fn bytes(word: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(word.len());
    for c in word.chars() {
        match u8::try_from(u32::from(c)) {
            Ok(b) => out.push(b),
            Err(_) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_haproxy_splits_them() {
        assert_eq!(
            words("  timeout  connect 10s # why").unwrap(),
            ["timeout", "connect", "10s"]
        );
        assert_eq!(
            words(r#"log-format "%ci:%cp a" x"#).unwrap(),
            ["log-format", "%ci:%cp a", "x"]
        );
        assert_eq!(
            words(r"tcp-check send PING\r\n").unwrap(),
            ["tcp-check", "send", "PING\r\n"]
        );
        assert_eq!(
            words(r"a 'b\r c' d\ e \x41\#").unwrap(),
            ["a", r"b\r c", "d e", "A#"]
        );
        assert_eq!(words(r#""a\"b""#).unwrap(), ["a\"b"]);
        assert_eq!(bytes("\u{ff}A"), [0xff, b'A']);
        assert!(words("bind 'open").is_err());
        assert!(words(r"send \x4").is_err());
        assert!(words(r"send \").is_err());
    }
}

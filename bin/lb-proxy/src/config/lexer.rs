//! haproxy.cfg's words, as haproxy 2.6 splits a line (`parse_line`): blanks separate, `#`
//! outside quotes ends the line, single quotes keep everything as written, double quotes
//! group, and a backslash outside single quotes escapes: `\r`, `\n`, `\t` and `\xNN` stand for
//! their bytes (a `tcp-check send` of `PING\r\n`), any other character for itself; and the
//! formats of its values: times and addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// The words of `line`, or why it has none (an open quote, a short `\x`).
pub fn words(line: &str) -> Result<Vec<String>, String> {
    ipi_core::place::words_with(line, Some('#'), ipi_core::place::Escapes::Haproxy)
}

/// haproxy's time format: a number and a unit (`us`, `ms`, `s`, `m`, `h`, `d`; none = ms).
pub fn duration(text: &str) -> Option<Duration> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    Some(match unit {
        "us" => Duration::from_micros(n),
        "" | "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.checked_mul(60)?),
        "h" => Duration::from_secs(n.checked_mul(3600)?),
        "d" => Duration::from_secs(n.checked_mul(86_400)?),
        _ => return None,
    })
}

/// `ADDR:PORT` as haproxy reads it: `:::9445` (IPv6 any), `:80` or `*:80` (IPv4 any),
/// `[2001:db8::1]:80`, `localhost:50000`.
pub fn address(text: &str) -> Option<(SocketAddr, Option<String>)> {
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let (ip, name) = match host {
        "" | "*" | "0.0.0.0" => (IpAddr::V4(Ipv4Addr::UNSPECIFIED), None),
        "::" => (IpAddr::V6(Ipv6Addr::UNSPECIFIED), None),
        "localhost" => (
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            Some("localhost".to_string()),
        ),
        h => (h.parse().ok()?, None),
    };
    Some((SocketAddr::new(ip, port), name))
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

    #[test]
    fn durations_in_haproxy_units() {
        assert_eq!(duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(duration("1m"), Some(Duration::from_secs(60)));
        assert_eq!(duration("86400s"), Some(Duration::from_secs(86_400)));
        assert_eq!(duration("250"), Some(Duration::from_millis(250)));
        assert_eq!(duration("5us"), Some(Duration::from_micros(5)));
        assert_eq!(duration("2d"), Some(Duration::from_secs(172_800)));
        assert_eq!(duration("1x"), None);
        assert_eq!(duration("s"), None);
    }

    #[test]
    fn addresses_as_haproxy_writes_them() {
        assert_eq!(address(":::9445").unwrap().0, "[::]:9445".parse().unwrap());
        assert_eq!(address(":80").unwrap().0, "0.0.0.0:80".parse().unwrap());
        assert_eq!(address("*:80").unwrap().0, "0.0.0.0:80".parse().unwrap());
        assert_eq!(
            address("[2001:db8::1]:6443").unwrap().0,
            "[2001:db8::1]:6443".parse().unwrap()
        );
        assert_eq!(
            address("10.0.3.211:6443").unwrap().0,
            "10.0.3.211:6443".parse().unwrap()
        );
        let (a, host) = address("localhost:50000").unwrap();
        assert_eq!((a.port(), host.as_deref()), (50000, Some("localhost")));
        assert!(address("nowhere").is_none());
        assert!(address("10.0.0.1:99999").is_none());
    }
}

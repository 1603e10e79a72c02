//! What the etcd store writes and reads back, without an etcd client: the address key
//! segments, the owners' index values and the next hints, and reading them back from keys and
//! values that anything with access to etcd may have written. Every reader says `None` or why
//! for bytes this store never writes, and reads back exactly what it writes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::names::{escape, unescape};
use crate::range::{parse_ip, RangeError};

/// An address as the last segment of its key: family, then fixed-width hex.
pub fn address_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(a) => format!("4-{:08x}", u32::from(a)),
        IpAddr::V6(a) => format!("6-{:032x}", u128::from(a)),
    }
}

/// The address an [`address_key`] segment names; `None` when it names none.
pub fn parse_address_key(segment: &str) -> Option<IpAddr> {
    let (family, hex) = segment.split_once('-')?;
    let plain_hex = hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    match (family, hex.len()) {
        ("4", 8) if plain_hex => u32::from_str_radix(hex, 16)
            .ok()
            .map(|v| IpAddr::V4(Ipv4Addr::from(v))),
        ("6", 32) if plain_hex => u128::from_str_radix(hex, 16)
            .ok()
            .map(|v| IpAddr::V6(Ipv6Addr::from(v))),
        _ => None,
    }
}

/// The address of the record key `key` under `prefix` (`PREFIX/pools/POOL/ips/`).
pub fn address_of(prefix: &str, key: &[u8]) -> Option<IpAddr> {
    key.strip_prefix(prefix.as_bytes())
        .and_then(|segment| std::str::from_utf8(segment).ok())
        .and_then(parse_address_key)
}

/// The pool that key `key` under `prefix` (`PREFIX/pools/`) belongs to, and its escaped
/// segment; `None` for a key under no pool, or one whose segment is not as [`escape`] writes
/// it.
pub fn pool_of<'k>(prefix: &str, key: &'k [u8]) -> Option<(String, &'k str)> {
    let rest = std::str::from_utf8(key.strip_prefix(prefix.as_bytes())?).ok()?;
    let (segment, _) = rest.split_once('/')?;
    let pool = unescape(segment).filter(|p| escape(p) == segment)?;
    Some((pool, segment))
}

/// What an owner's index entry and a pool's next hint hold: the address as text.
pub fn index_value(ip: IpAddr) -> String {
    ip.to_string()
}

/// The address an [`index_value`] holds, or why it holds none.
pub fn address_value(value: &[u8]) -> Result<IpAddr, RangeError> {
    parse_ip(&String::from_utf8_lossy(value))
}

/// The first key after every key starting with `prefix` (which ends in `/`, never 0xff).
pub fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_keys_sort_like_addresses_and_read_back() {
        let addresses = [
            "0.0.0.1",
            "192.0.2.9",
            "192.0.2.10",
            "255.255.255.255",
            "::1",
            "2001:db8::1",
        ];
        let keys: Vec<String> = addresses
            .iter()
            .map(|a| address_key(a.parse().unwrap()))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        for (a, k) in addresses.iter().zip(&keys) {
            assert_eq!(parse_address_key(k), Some(a.parse().unwrap()));
        }
        assert_eq!(address_key("192.0.2.1".parse().unwrap()), "4-c0000201");
        for bad in [
            "4-c00002",
            "6-c0000201",
            "4-C0000201",
            "4-+0000201",
            "x-c0000201",
            "c0000201",
        ] {
            assert_eq!(parse_address_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn keys_and_values_read_back_what_is_written() {
        let ip: IpAddr = "2001:db8::7".parse().unwrap();
        let prefix = "/ipi-net/ipam/pools/a/ips/";
        let key = format!("{prefix}{}", address_key(ip));
        assert_eq!(address_of(prefix, key.as_bytes()), Some(ip));
        assert_eq!(address_of("/other/", key.as_bytes()), None);
        assert_eq!(address_value(index_value(ip).as_bytes()), Ok(ip));
        assert_eq!(
            address_value(b" 192.0.2.1\n"),
            Ok("192.0.2.1".parse().unwrap())
        );
        assert_eq!(
            address_value(b"192.0.2.256\n"),
            Err(RangeError::NotIp("192.0.2.256".into()))
        );
        let pools = "/ipi-net/ipam/pools/";
        let key = format!("{pools}{}/ips/4-c0000201", escape("my pool"));
        let (pool, segment) = pool_of(pools, key.as_bytes()).unwrap();
        assert_eq!(
            (pool.as_str(), segment),
            ("my pool", escape("my pool").as_str())
        );
        assert_eq!(pool_of(pools, b"/ipi-net/ipam/pools/no-slash"), None);
    }

    #[test]
    fn prefix_ends_follow_every_key_of_the_prefix() {
        assert_eq!(prefix_end("/a/pools/"), b"/a/pools0");
    }
}

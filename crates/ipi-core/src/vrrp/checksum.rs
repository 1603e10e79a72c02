//! The Internet checksum (RFC 1071) and the pseudo-headers VRRP sums before its message.

use std::net::IpAddr;

use super::{ChecksumMode, Error, Version, PROTOCOL};

/// Adds `data` to a running one's-complement sum as big-endian 16-bit words, padding an odd
/// final byte with zero (RFC 1071 4.1). The sum is kept unfolded in a `u64`: a VRRP message is
/// at most a few kilobytes, and even 64 KiB of 0xFFFF words stays far below `u64::MAX`.
pub(crate) fn sum(mut acc: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(2);
    for word in &mut words {
        if let [hi, lo] = word {
            acc += u64::from(u16::from_be_bytes([*hi, *lo]));
        }
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// Folds the carries back in (end-around carry) and returns the 16-bit one's-complement sum.
pub(crate) fn fold(mut acc: u64) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    // The loop leaves at most 16 bits.
    u16::try_from(acc).unwrap_or(0xFFFF)
}

/// What one VRRP checksum covers besides the message itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coverage {
    /// The message only (v2; v3 IPv4 in [`ChecksumMode::NoPseudoHeader`]).
    Message,
    /// The IPv4 pseudo-header and the message.
    Ipv4PseudoHeader,
    /// The IPv6 pseudo-header (RFC 8200 8.1) and the message.
    Ipv6PseudoHeader,
}

impl Coverage {
    /// The coverage for a message of `version` between `src` and `dst`.
    pub(crate) fn new(
        version: Version,
        src: IpAddr,
        dst: IpAddr,
        mode: ChecksumMode,
    ) -> Result<Self, Error> {
        match (src, dst) {
            // RFC 3768 5.3.8: the v2 checksum is over the VRRP message alone.
            (IpAddr::V4(_), IpAddr::V4(_)) if version == Version::V2 => Ok(Coverage::Message),
            (IpAddr::V4(_), IpAddr::V4(_)) => Ok(match mode {
                ChecksumMode::PseudoHeader => Coverage::Ipv4PseudoHeader,
                ChecksumMode::NoPseudoHeader => Coverage::Message,
            }),
            // RFC 3768 covers IPv4 only; VRRP for IPv6 starts with v3.
            (IpAddr::V6(_), IpAddr::V6(_)) if version == Version::V2 => Err(Error::V2OverIpv6),
            // RFC 5798 5.2.8: over IPv6 the pseudo-header is always summed, whatever the mode.
            (IpAddr::V6(_), IpAddr::V6(_)) => Ok(Coverage::Ipv6PseudoHeader),
            _ => Err(Error::MixedFamilies { src, dst }),
        }
    }

    /// Words for error messages: what the checksum was computed over.
    pub(crate) const fn describe(self) -> &'static str {
        match self {
            Coverage::Message => "over the VRRP message only",
            Coverage::Ipv4PseudoHeader => "over the IPv4 pseudo-header and the VRRP message",
            Coverage::Ipv6PseudoHeader => "over the IPv6 pseudo-header and the VRRP message",
        }
    }
}

/// The checksum of `message` with its checksum field (bytes 6 and 7) taken as zero, as the
/// sender computes it (RFC 5798 5.2.8: "For computing the checksum, the checksum field is set
/// to zero"). `message` shorter than the header sums what there is.
pub(crate) fn vrrp_checksum(message: &[u8], coverage: Coverage, src: IpAddr, dst: IpAddr) -> u16 {
    // The VRRP length in the pseudo-header; a message never approaches 4 GiB, and one that did
    // could only fail its checksum, never panic.
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    let mut acc = 0;
    match (coverage, src, dst) {
        (Coverage::Ipv4PseudoHeader, IpAddr::V4(s), IpAddr::V4(d)) => {
            acc = sum(acc, &s.octets());
            acc = sum(acc, &d.octets());
            acc = sum(acc, &[0, PROTOCOL]);
            // The IPv4 pseudo-header length is 16 bits (RFC 768's layout, as UDP and TCP use);
            // an IPv4 payload cannot exceed it.
            let len16 = u16::try_from(len).unwrap_or(u16::MAX);
            acc = sum(acc, &len16.to_be_bytes());
        }
        (Coverage::Ipv6PseudoHeader, IpAddr::V6(s), IpAddr::V6(d)) => {
            // RFC 8200 8.1: source, destination, 32-bit upper-layer length, 3 zero bytes, next
            // header.
            acc = sum(acc, &s.octets());
            acc = sum(acc, &d.octets());
            acc = sum(acc, &len.to_be_bytes());
            acc = sum(acc, &[0, 0, 0, PROTOCOL]);
        }
        _ => {}
    }
    // Bytes 0..6 and 8.. without the checksum field: splitting at an even offset keeps the
    // 16-bit word alignment.
    let (head, rest) = message.split_at(message.len().min(6));
    acc = sum(acc, head);
    acc = sum(acc, rest.get(2..).unwrap_or(&[]));
    !fold(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        assert_eq!(
            fold(sum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])),
            0xddf2
        );
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(0, &[0x12])), 0x1200);
        assert_eq!(fold(sum(0, &[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn short_messages_do_not_panic() {
        let v4 = IpAddr::from([192, 0, 2, 1]);
        for len in 0..10 {
            let message = vec![0xFF; len];
            let _ = vrrp_checksum(&message, Coverage::Ipv4PseudoHeader, v4, v4);
        }
    }
}

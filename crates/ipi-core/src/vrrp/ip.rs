//! From an IP datagram to a VRRP advertisement: Linux raw IPv4 sockets deliver the IP header,
//! and captured frames are dissected this way.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::ah::{self, Covered};
use super::checksum;
use super::{ChecksumMode, Error, Packet, Repr, PROTOCOL};

const IPV4_MIN_HEADER_LEN: usize = 20;
const IPV6_HEADER_LEN: usize = 40;

/// IPv6 next-header values that are extension headers (RFC 8200 4, and the IANA "IPv6
/// Extension Header Types" registry): Hop-by-Hop, Routing, Fragment, ESP, AH, Destination
/// Options, Mobility, HIP, Shim6 and the two experimental values.
const IPV6_EXTENSION_HEADERS: [u8; 11] = [0, 43, 44, 50, 51, 60, 135, 139, 140, 253, 254];

/// `N` bytes of `bytes` from `at`, if there are that many.
fn array<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// One IP datagram split into the facts VRRP's receive checks need and the VRRP message bytes,
/// before any VRRP parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawDatagram<'a> {
    /// The IP source address.
    pub src: IpAddr,
    /// The IP destination address (the multicast group, or this host for unicast).
    pub dst: IpAddr,
    /// The IPv4 TTL or IPv6 hop limit.
    pub hop_limit: u8,
    /// The VRRP message, exactly: the IP payload, or what follows the AH header (link-layer
    /// padding after the IP length is left out).
    pub payload: &'a [u8],
    /// keepalived's AH header (`auth_type AH`, IPv4 protocol 51) with the IP header before it,
    /// for the receiver that holds the key to verify; `None` for protocol 112.
    pub ah: Option<Covered<'a>>,
}

/// One received advertisement with the IP facts the receive checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// The IP source address: the sender's primary address (RFC 5798 5.1.1.1, 5.1.2.1).
    pub src: IpAddr,
    /// The IP destination address.
    pub dst: IpAddr,
    /// The IPv4 TTL or IPv6 hop limit; RFC 5798 7.1 discards anything but 255, which is the
    /// caller's check (the codec reports, it does not judge).
    pub hop_limit: u8,
    /// The advertisement.
    pub repr: Repr,
}

/// Splits an IPv4 or IPv6 datagram carrying VRRP into its addresses, hop limit and payload.
///
/// IPv4: honours the header length (options are skipped) and the total length (trailing
/// link-layer padding is dropped), verifies the header checksum, and rejects fragments and
/// protocols other than 112 and 51 (keepalived's AH header, then VRRP). IPv6: the fixed header with next header 112; extension headers are
/// rejected with [`Error::Ipv6ExtensionHeader`].
pub fn split_datagram(ip: &[u8]) -> Result<RawDatagram<'_>, Error> {
    let first = ip.first().copied().ok_or(Error::Truncated {
        what: "IP header",
        needed: 1,
        got: 0,
    })?;
    match first >> 4 {
        4 => split_ipv4(ip),
        6 => split_ipv6(ip),
        other => Err(Error::BadIpVersion(other)),
    }
}

fn split_ipv4(ip: &[u8]) -> Result<RawDatagram<'_>, Error> {
    let truncated = |needed| Error::Truncated {
        what: "IPv4 header",
        needed,
        got: ip.len(),
    };
    let fixed: [u8; IPV4_MIN_HEADER_LEN] = array(ip, 0).ok_or(truncated(IPV4_MIN_HEADER_LEN))?;
    // RFC 791 3.1: version/IHL, TOS, total length, identification, flags/fragment offset, TTL,
    // protocol, header checksum, source, destination.
    let [ver_ihl, _, tl_hi, tl_lo, _, _, fl_hi, fl_lo, ttl, protocol, ck_hi, ck_lo, addrs @ ..] =
        fixed;
    let [s0, s1, s2, s3, d0, d1, d2, d3] = addrs;

    // RFC 791 3.1: IHL counts 32-bit words, 5 at least; options follow the fixed part.
    let ihl = ver_ihl & 0x0F;
    if ihl < 5 {
        return Err(Error::BadIhl(ihl));
    }
    let header_len = usize::from(ihl) * 4;
    let header = ip.get(..header_len).ok_or(truncated(header_len))?;

    let total = u16::from_be_bytes([tl_hi, tl_lo]);
    if usize::from(total) < header_len {
        return Err(Error::BadTotalLength { total, header_len });
    }
    // Frames shorter than Ethernet's minimum arrive padded: the total length, not the frame,
    // says where the datagram ends.
    let datagram = ip.get(..usize::from(total)).ok_or(Error::Truncated {
        what: "IPv4 datagram (total length)",
        needed: usize::from(total),
        got: ip.len(),
    })?;

    // RFC 791 3.1 / RFC 1071: the header, its checksum field included, sums to all ones. The
    // kernel drops bad headers before a raw socket sees them, so this only bites on captures.
    if checksum::fold(checksum::sum(0, header)) != 0xFFFF {
        // What the sender should have written: the sum with the checksum field (10..12) left out.
        let before = checksum::sum(0, header.get(..10).unwrap_or(&[]));
        let without = checksum::sum(before, header.get(12..).unwrap_or(&[]));
        return Err(Error::BadIpChecksum {
            expected: !checksum::fold(without),
            actual: u16::from_be_bytes([ck_hi, ck_lo]),
        });
    }

    let flags_offset = u16::from_be_bytes([fl_hi, fl_lo]);
    let more_fragments = flags_offset & 0x2000 != 0;
    let offset = (flags_offset & 0x1FFF) * 8;
    if more_fragments || offset != 0 {
        return Err(Error::Fragment {
            offset,
            more_fragments,
        });
    }
    let (ah, payload) = match protocol {
        PROTOCOL => (None, datagram.get(header_len..).unwrap_or(&[])),
        ah::PROTOCOL => {
            let headers = datagram
                .get(..header_len + ah::LEN)
                .ok_or(Error::Truncated {
                    what: "AH header",
                    needed: header_len + ah::LEN,
                    got: datagram.len(),
                })?;
            let rest = datagram.get(header_len + ah::LEN..).unwrap_or(&[]);
            (Some(Covered::new(headers)?), rest)
        }
        other => return Err(Error::NotVrrp(other)),
    };
    Ok(RawDatagram {
        src: IpAddr::V4(Ipv4Addr::new(s0, s1, s2, s3)),
        dst: IpAddr::V4(Ipv4Addr::new(d0, d1, d2, d3)),
        hop_limit: ttl,
        payload,
        ah,
    })
}

fn split_ipv6(ip: &[u8]) -> Result<RawDatagram<'_>, Error> {
    let truncated = Error::Truncated {
        what: "IPv6 header",
        needed: IPV6_HEADER_LEN,
        got: ip.len(),
    };
    // RFC 8200 3: payload length at 4, next header at 6, hop limit at 7, addresses at 8 and 24.
    let payload_len: [u8; 2] = array(ip, 4).ok_or(truncated.clone())?;
    let [next_header, hop_limit]: [u8; 2] = array(ip, 6).ok_or(truncated.clone())?;
    let src: [u8; 16] = array(ip, 8).ok_or(truncated.clone())?;
    let dst: [u8; 16] = array(ip, 24).ok_or(truncated)?;

    if next_header != PROTOCOL {
        return Err(if IPV6_EXTENSION_HEADERS.contains(&next_header) {
            Error::Ipv6ExtensionHeader(next_header)
        } else {
            Error::NotVrrp(next_header)
        });
    }
    let payload_len = usize::from(u16::from_be_bytes(payload_len));
    let end = IPV6_HEADER_LEN + payload_len;
    let payload = ip.get(IPV6_HEADER_LEN..end).ok_or(Error::Truncated {
        what: "IPv6 payload (payload length)",
        needed: end,
        got: ip.len(),
    })?;
    Ok(RawDatagram {
        src: IpAddr::V6(Ipv6Addr::from(src)),
        dst: IpAddr::V6(Ipv6Addr::from(dst)),
        hop_limit,
        payload,
        ah: None,
    })
}

/// Parses one IPv4 or IPv6 datagram carrying a VRRP advertisement: [`split_datagram`], then
/// [`Repr::parse`] with the datagram's addresses as the checksum's pseudo-header.
pub fn parse_datagram(ip: &[u8], mode: ChecksumMode) -> Result<Datagram, Error> {
    let raw = split_datagram(ip)?;
    let packet = Packet::new_checked(raw.payload)?;
    let repr = Repr::parse(&packet, raw.src, raw.dst, mode)?;
    Ok(Datagram {
        src: raw.src,
        dst: raw.dst,
        hop_limit: raw.hop_limit,
        repr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrrp::{Auth, Version};

    fn repr() -> Repr {
        Repr {
            version: Version::V3,
            vrid: 14,
            priority: 40,
            advert_int: 100,
            auth: Auth::None,
            addresses: vec![IpAddr::from([192, 0, 2, 5])],
        }
    }

    /// An IPv4 datagram around `payload`, with `options` and a valid header checksum.
    fn ipv4(payload: &[u8], options: &[u8], flags_offset: u16, protocol: u8) -> Vec<u8> {
        let header_len = 20 + options.len();
        let total = u16::try_from(header_len + payload.len()).unwrap();
        let mut d = vec![0x40 | u8::try_from(header_len / 4).unwrap(), 0];
        d.extend_from_slice(&total.to_be_bytes());
        d.extend_from_slice(&[0x12, 0x34]);
        d.extend_from_slice(&flags_offset.to_be_bytes());
        d.extend_from_slice(&[255, protocol, 0, 0, 192, 0, 2, 11, 224, 0, 0, 18]);
        d.extend_from_slice(options);
        let ck = !checksum::fold(checksum::sum(0, &d));
        d[10..12].copy_from_slice(&ck.to_be_bytes());
        d.extend_from_slice(payload);
        d
    }

    fn payload() -> Vec<u8> {
        repr()
            .to_bytes(
                IpAddr::from([192, 0, 2, 11]),
                IpAddr::from([224, 0, 0, 18]),
                ChecksumMode::PseudoHeader,
            )
            .unwrap()
    }

    #[test]
    fn ipv4_with_options_and_padding() {
        // A router-alert option (RFC 2113) and Ethernet padding after the datagram.
        let mut d = ipv4(&payload(), &[0x94, 0x04, 0, 0], 0, PROTOCOL);
        d.extend_from_slice(&[0; 6]);
        let got = parse_datagram(&d, ChecksumMode::PseudoHeader).unwrap();
        assert_eq!(got.repr, repr());
        assert_eq!(got.hop_limit, 255);
        assert_eq!(got.src, IpAddr::from([192, 0, 2, 11]));
        assert_eq!(got.dst, IpAddr::from([224, 0, 0, 18]));
    }

    #[test]
    fn ipv4_rejections() {
        let p = payload();
        let m = ChecksumMode::PseudoHeader;
        assert_eq!(
            parse_datagram(&ipv4(&p, &[], 0x2000, PROTOCOL), m),
            Err(Error::Fragment {
                offset: 0,
                more_fragments: true
            })
        );
        assert_eq!(
            parse_datagram(&ipv4(&p, &[], 0x0003, PROTOCOL), m),
            Err(Error::Fragment {
                offset: 24,
                more_fragments: false
            })
        );
        // Don't Fragment is fine.
        assert!(parse_datagram(&ipv4(&p, &[], 0x4000, PROTOCOL), m).is_ok());
        assert_eq!(
            parse_datagram(&ipv4(&p, &[], 0, 17), m),
            Err(Error::NotVrrp(17))
        );

        let mut bad_ck = ipv4(&p, &[], 0, PROTOCOL);
        bad_ck[8] = 64;
        assert!(matches!(
            parse_datagram(&bad_ck, m),
            Err(Error::BadIpChecksum { .. })
        ));

        let good = ipv4(&p, &[], 0, PROTOCOL);
        assert!(matches!(
            parse_datagram(&good[..good.len() - 1], m),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            parse_datagram(&good[..19], m),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            parse_datagram(&[], m),
            Err(Error::Truncated { .. })
        ));
        assert_eq!(parse_datagram(&[0x50; 40], m), Err(Error::BadIpVersion(5)));

        let mut ihl = good.clone();
        ihl[0] = 0x44;
        assert_eq!(parse_datagram(&ihl, m), Err(Error::BadIhl(4)));
    }

    #[test]
    fn ipv4_total_length_below_header() {
        let mut d = ipv4(&payload(), &[], 0, PROTOCOL);
        d[2..4].copy_from_slice(&10u16.to_be_bytes());
        d[10..12].fill(0);
        let ck = !checksum::fold(checksum::sum(0, &d[..20]));
        d[10..12].copy_from_slice(&ck.to_be_bytes());
        assert_eq!(
            parse_datagram(&d, ChecksumMode::PseudoHeader),
            Err(Error::BadTotalLength {
                total: 10,
                header_len: 20
            })
        );
    }

    #[test]
    fn ipv6_extension_headers_are_named() {
        let mut d = vec![0x60, 0, 0, 0, 0, 8, 0, 255];
        d.extend_from_slice(&[0; 32]);
        d.extend_from_slice(&[0; 8]);
        assert_eq!(
            parse_datagram(&d, ChecksumMode::PseudoHeader),
            Err(Error::Ipv6ExtensionHeader(0))
        );
        d[6] = 44;
        assert_eq!(
            parse_datagram(&d, ChecksumMode::PseudoHeader),
            Err(Error::Ipv6ExtensionHeader(44))
        );
        d[6] = 58;
        assert_eq!(
            parse_datagram(&d, ChecksumMode::PseudoHeader),
            Err(Error::NotVrrp(58))
        );
        d[6] = PROTOCOL;
        d[5] = 9;
        assert!(matches!(
            parse_datagram(&d, ChecksumMode::PseudoHeader),
            Err(Error::Truncated { needed: 49, .. })
        ));
    }
}

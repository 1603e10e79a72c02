//! Property tests for the VRRP codec: no input makes it panic, and every advertisement that can
//! be sent comes back unchanged through emit and parse, for both versions, both address
//! families and both checksum modes.

// Helpers outside #[test] functions too: in a test, a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipi_core::vrrp::{
    parse_datagram, split_datagram, Auth, ChecksumMode, Error, Packet, Repr, Version, PROTOCOL,
};
use proptest::prelude::*;

fn any_mode() -> impl Strategy<Value = ChecksumMode> {
    prop_oneof![
        Just(ChecksumMode::PseudoHeader),
        Just(ChecksumMode::NoPseudoHeader)
    ]
}

fn any_v4() -> impl Strategy<Value = IpAddr> {
    any::<[u8; 4]>().prop_map(|o| IpAddr::V4(Ipv4Addr::from(o)))
}

fn any_v6() -> impl Strategy<Value = IpAddr> {
    any::<[u8; 16]>().prop_map(|o| IpAddr::V6(Ipv6Addr::from(o)))
}

fn any_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![any_v4(), any_v6()]
}

/// An IPv4 datagram (options, valid header checksum, TTL 255) or an IPv6 one around `payload`.
fn wrap(src: IpAddr, dst: IpAddr, payload: &[u8], ipv4_options: &[u8]) -> Vec<u8> {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let header_len = 20 + ipv4_options.len();
            let total = u16::try_from(header_len + payload.len()).unwrap();
            let ihl = u8::try_from(header_len / 4).unwrap();
            let mut h = vec![0x40 | ihl, 0xC0];
            h.extend_from_slice(&total.to_be_bytes());
            h.extend_from_slice(&[0, 0, 0x40, 0, 255, PROTOCOL, 0, 0]);
            h.extend_from_slice(&s.octets());
            h.extend_from_slice(&d.octets());
            h.extend_from_slice(ipv4_options);
            let mut sum = 0u32;
            for w in h.chunks(2) {
                sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
            }
            while sum > 0xFFFF {
                sum = (sum & 0xFFFF) + (sum >> 16);
            }
            h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            h.extend_from_slice(payload);
            h
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut h = vec![0x60, 0, 0, 0];
            h.extend_from_slice(&u16::try_from(payload.len()).unwrap().to_be_bytes());
            h.extend_from_slice(&[PROTOCOL, 255]);
            h.extend_from_slice(&s.octets());
            h.extend_from_slice(&d.octets());
            h.extend_from_slice(payload);
            h
        }
        _ => unreachable!("test addresses are of one family"),
    }
}

/// A sendable advertisement with its source and destination: v2 over IPv4 with or without a
/// password and whole seconds up to 255 s; v3 over IPv4 or IPv6, up to 4095 cs.
fn any_valid() -> impl Strategy<Value = (Repr, IpAddr, IpAddr)> {
    let v2 = (
        1..=255u8,
        any::<u8>(),
        0..=255u16,
        prop_oneof![Just(Auth::None), any::<[u8; 8]>().prop_map(Auth::Pass)],
        prop::collection::vec(any_v4(), 0..20),
        any_v4(),
        any_v4(),
    )
        .prop_map(|(vrid, priority, secs, auth, addresses, src, dst)| {
            let repr = Repr {
                version: Version::V2,
                vrid,
                priority,
                advert_int: secs * 100,
                auth,
                addresses,
            };
            (repr, src, dst)
        });
    let v3 = (1..=255u8, any::<u8>(), 0..=4095u16, any::<bool>())
        .prop_flat_map(|(vrid, priority, advert_int, ipv6)| {
            let family = if ipv6 {
                any_v6().boxed()
            } else {
                any_v4().boxed()
            };
            (
                Just((vrid, priority, advert_int)),
                prop::collection::vec(family.clone(), 0..20),
                family.clone(),
                family,
            )
        })
        .prop_map(|((vrid, priority, advert_int), addresses, src, dst)| {
            let repr = Repr {
                version: Version::V3,
                vrid,
                priority,
                advert_int,
                auth: Auth::None,
                addresses,
            };
            (repr, src, dst)
        });
    prop_oneof![v2, v3]
}

/// Pokes every accessor of a view, so that a panic anywhere in them would surface.
fn touch<T: AsRef<[u8]>>(p: &Packet<T>) {
    let _ = (
        p.version(),
        p.msg_type(),
        p.vrid(),
        p.priority(),
        p.addr_count(),
    );
    let _ = (
        p.auth_type(),
        p.adver_int_secs(),
        p.rsvd(),
        p.max_adver_int(),
    );
    let _ = (
        p.advert_int_cs(),
        p.checksum(),
        p.addr_field(),
        p.auth_data(),
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        src in any_ip(),
        dst in any_ip(),
        mode in any_mode(),
    ) {
        let unchecked = Packet::new_unchecked(&bytes[..]);
        touch(&unchecked);
        let _ = unchecked.compute_checksum(src, dst, mode);
        let _ = Repr::parse(&unchecked, src, dst, mode);
        if let Ok(p) = Packet::new_checked(&bytes[..]) {
            touch(&p);
            let _ = Repr::parse(&p, src, dst, mode);
        }
        let _ = parse_datagram(&bytes, mode);
        let _ = split_datagram(&bytes);

        // Setters on any buffer, too.
        let mut owned = bytes.clone();
        let mut p = Packet::new_unchecked(&mut owned[..]);
        p.set_max_adver_int(u16::MAX);
        p.set_checksum(0xFFFF);
        p.addr_field_mut().fill(1);
        p.auth_data_mut().fill(2);
        let _ = p.fill_checksum(src, dst, mode);
    }

    /// Arbitrary VRRP bytes behind a valid IP header, so that the VRRP layer of
    /// `parse_datagram` is reached rather than stopped by the IP checks.
    #[test]
    fn arbitrary_payloads_behind_valid_ip_headers_never_panic(
        payload in prop::collection::vec(any::<u8>(), 0..120),
        first in prop_oneof![Just(0x21u8), Just(0x31u8), any::<u8>()],
        ipv6 in any::<bool>(),
        options in prop::collection::vec(any::<u8>(), 0..3).prop_map(|w| vec![1u8; w.len() * 4]),
        mode in any_mode(),
    ) {
        let mut payload = payload;
        if let Some(b) = payload.first_mut() {
            *b = first;
        }
        let (src, dst) = if ipv6 {
            (IpAddr::from([0xfe80, 0, 0, 0, 0, 0, 0, 1]), IpAddr::from([0xff02, 0, 0, 0, 0, 0, 0, 0x12]))
        } else {
            (IpAddr::from([192, 0, 2, 1]), IpAddr::from([224, 0, 0, 18]))
        };
        let d = wrap(src, dst, &payload, &options);
        let _ = parse_datagram(&d, mode);
        // And every truncation of it.
        for cut in 0..d.len() {
            let _ = parse_datagram(&d[..cut], mode);
        }
    }

    /// Valid messages with a few bytes changed: the inputs closest to acceptance.
    #[test]
    fn mutated_valid_messages_never_panic(
        (repr, src, dst) in any_valid(),
        mode in any_mode(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = repr.to_bytes(src, dst, mode).unwrap();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        let p = Packet::new_unchecked(&bytes[..]);
        touch(&p);
        let _ = Repr::parse(&p, src, dst, mode);
        let _ = parse_datagram(&wrap(src, dst, &bytes, &[]), mode);
    }

    #[test]
    fn valid_reprs_round_trip(
        (repr, src, dst) in any_valid(),
        mode in any_mode(),
    ) {
        let bytes = repr.to_bytes(src, dst, mode).unwrap();
        prop_assert_eq!(bytes.len(), repr.buffer_len());
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        prop_assert!(packet.verify_checksum(src, dst, mode).unwrap());
        prop_assert_eq!(&Repr::parse(&packet, src, dst, mode).unwrap(), &repr);

        // Through a whole IP datagram, with IPv4 options for good measure.
        let options: &[u8] = if src.is_ipv4() { &[0x94, 0x04, 0, 0] } else { &[] };
        let d = parse_datagram(&wrap(src, dst, &bytes, options), mode).unwrap();
        prop_assert_eq!(d.src, src);
        prop_assert_eq!(d.dst, dst);
        prop_assert_eq!(d.hop_limit, 255);
        prop_assert_eq!(&d.repr, &repr);

        // Emit is a function of the Repr: parsing and emitting again gives the same bytes.
        prop_assert_eq!(d.repr.to_bytes(src, dst, mode).unwrap(), bytes);
    }

    /// The checksum mode matters only for VRRPv3 over IPv4.
    #[test]
    fn only_v3_ipv4_depends_on_the_mode((repr, src, dst) in any_valid()) {
        let with = repr.to_bytes(src, dst, ChecksumMode::PseudoHeader).unwrap();
        let without = repr.to_bytes(src, dst, ChecksumMode::NoPseudoHeader).unwrap();
        if repr.version == Version::V2 || src.is_ipv6() {
            prop_assert_eq!(with, without);
        } else {
            // Same message, only the checksum may differ.
            prop_assert_eq!(&with[..6], &without[..6]);
            prop_assert_eq!(&with[8..], &without[8..]);
        }
    }

    /// Any single-byte corruption of a valid message is caught (by the checksum if nothing
    /// else): the Internet checksum detects every single-byte error.
    #[test]
    fn single_byte_corruption_is_detected(
        (repr, src, dst) in any_valid(),
        mode in any_mode(),
        at in any::<prop::sample::Index>(),
        delta in 1..=255u8,
    ) {
        let mut bytes = repr.to_bytes(src, dst, mode).unwrap();
        let i = at.index(bytes.len());
        bytes[i] = bytes[i].wrapping_add(delta);
        let parsed = Repr::parse(&Packet::new_unchecked(&bytes[..]), src, dst, mode);
        // Changing the Rsvd nibble of v3 or the authentication data under Auth Type 0 is
        // caught by the checksum too, since both are summed.
        prop_assert!(parsed.is_err(), "{:?}", parsed);
    }

    /// Emit refuses every v2 interval that is not whole seconds, and every v3 interval over
    /// 4095 cs, instead of truncating.
    #[test]
    fn unrepresentable_intervals_are_errors(cs in any::<u16>()) {
        let src = IpAddr::from([192, 0, 2, 1]);
        let dst = IpAddr::from([224, 0, 0, 18]);
        let base = Repr {
            version: Version::V2,
            vrid: 1,
            priority: 100,
            advert_int: cs,
            auth: Auth::None,
            addresses: vec![],
        };
        let v2 = base.to_bytes(src, dst, ChecksumMode::default());
        if cs % 100 == 0 && cs <= 25500 {
            prop_assert!(v2.is_ok());
        } else {
            let is_interval_error = matches!(
                v2,
                Err(Error::IntervalNotWholeSeconds(_) | Error::IntervalTooLong { .. })
            );
            prop_assert!(is_interval_error);
        }
        let v3 = Repr { version: Version::V3, ..base }.to_bytes(src, dst, ChecksumMode::default());
        prop_assert_eq!(v3.is_ok(), cs <= 4095);
    }
}

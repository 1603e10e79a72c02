//! Fuzz the VRRP codec: arbitrary bytes as an IP datagram (`parse_datagram`, both checksum
//! modes) and as a bare VRRP message (`Packet::new_checked` + `Repr::parse`, IPv4 and IPv6
//! addresses, both modes). Nothing may panic, and whatever parses must emit and parse back to
//! the same `Repr`: a parsed advertisement is always one we can send. An AH datagram
//! (keepalived's `auth_type AH`) is verified without panicking, and its message sealed again
//! must split and verify.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipi_core::vrrp::ah::{self, Key, Seal};
use ipi_core::vrrp::{parse_datagram, split_datagram, ChecksumMode, Packet, Repr};
use libfuzzer_sys::fuzz_target;

const MODES: [ChecksumMode; 2] = [ChecksumMode::PseudoHeader, ChecksumMode::NoPseudoHeader];

/// Emit `repr` and parse it back: must succeed and give `repr` again.
fn round_trip(repr: &Repr, src: IpAddr, dst: IpAddr, mode: ChecksumMode) {
    let bytes = repr
        .to_bytes(src, dst, mode)
        .unwrap_or_else(|e| panic!("parsed {repr:?} but cannot emit it: {e}"));
    assert_eq!(bytes.len(), repr.buffer_len());
    let packet = Packet::new_checked(&bytes[..]).expect("emitted message fails check_len");
    let again = Repr::parse(&packet, src, dst, mode).expect("emitted message fails to parse");
    assert_eq!(&again, repr);
}

/// An AH datagram's headers checked under a key, and its message sealed again.
fn ah_round_trip(data: &[u8]) {
    let Ok(raw) = split_datagram(data) else {
        return;
    };
    let Some(header) = raw.ah else { return };
    let key = Key::from_password("fuzz");
    let _ = (header.spi(), header.seq());
    let _ = header.verify(raw.payload, &key, true);
    let _ = header.verify(raw.payload, &key, false);
    let (IpAddr::V4(src), IpAddr::V4(dst)) = (raw.src, raw.dst) else {
        panic!("an AH datagram over IPv6");
    };
    let seal = Seal {
        src,
        dst,
        id: 1,
        seq: header.seq(),
        unicast: false,
    };
    let Ok(mut again) = ah::seal(raw.payload, &seal, &key) else {
        return;
    };
    // The kernel's header checksum, which `split_datagram` checks.
    let sum = again[..20]
        .chunks(2)
        .fold(0u32, |a, w| a + u32::from(u16::from_be_bytes([w[0], w[1]])));
    let folded = (sum & 0xffff) + (sum >> 16);
    let folded = !(((folded & 0xffff) + (folded >> 16)) as u16);
    again[10..12].copy_from_slice(&folded.to_be_bytes());
    let resplit = split_datagram(&again).expect("a sealed datagram splits");
    let header = resplit.ah.expect("a sealed datagram has its AH header");
    assert!(
        header.verify(resplit.payload, &key, false),
        "a sealed datagram verifies"
    );
    assert_eq!(resplit.payload, raw.payload);
}

fuzz_target!(|data: &[u8]| {
    ah_round_trip(data);
    for mode in MODES {
        if let Ok(d) = parse_datagram(data, mode) {
            round_trip(&d.repr, d.src, d.dst, mode);
        }
    }

    let packet = Packet::new_unchecked(data);
    let _ = (
        packet.addr_field(),
        packet.auth_data(),
        packet.advert_int_cs(),
        packet.checksum(),
    );
    if let Ok(packet) = Packet::new_checked(data) {
        let pairs = [
            (
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 11)),
                IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18)),
            ),
            (
                IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1)),
                IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12)),
            ),
        ];
        for (src, dst) in pairs {
            for mode in MODES {
                if let Ok(repr) = Repr::parse(&packet, src, dst, mode) {
                    round_trip(&repr, src, dst, mode);
                }
            }
        }
    }
});

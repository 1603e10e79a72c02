//! keepalived's IPsec Authentication Header for VRRPv2 (`auth_type AH`): RFC 2338 5.3.6.2's
//! Auth Type 2 as keepalived implements it, without an IPsec security association.
//!
//! The datagram is IPv4, protocol 51 (AH), with one AH header (RFC 2402 2) between the IP
//! header and the VRRP message, whose Auth Type is 2 and whose 8 bytes of authentication data
//! are zero:
//!
//! - Next Header 112, Payload Len 4 (24 bytes: 6 words less 2, RFC 2402 2.2), Reserved 0;
//! - SPI: the sender's IPv4 address (keepalived's choice: there is no SA to number, and the
//!   sender's address cannot collide with another sender's);
//! - Sequence Number: one counter per instance, raised before every advert (see
//!   [`SeqCounter`]);
//! - ICV: HMAC-MD5-96 (RFC 2403) keyed with the 8 password bytes keepalived keeps (the
//!   password cut or zero-padded to 8, as for PASS), over the IP header with its mutable fields
//!   zeroed (RFC 2402 3.3.3.1.1.1: TOS, flags and fragment offset, header checksum; and the TTL
//!   for unicast adverts, which may cross routers, as keepalived has it), the AH header with
//!   the ICV zeroed, and the VRRP message.
//!
//! keepalived 2.2.7 sends exactly this; [`seal`] and [`Covered::verify`] are the two halves.

use std::net::Ipv4Addr;

use hmac::{Hmac, Mac};
use md5::Md5;

use super::{Auth, Error, HOP_LIMIT, PASS_LEN, PROTOCOL as VRRP};

/// The IP protocol number of the Authentication Header (RFC 2402 2).
pub const PROTOCOL: u8 = 51;

/// The length of keepalived's AH header: 12 bytes of fields and a 96-bit ICV.
pub const LEN: usize = 24;

/// RFC 2402 2.2: the AH header's length in 32-bit words, minus 2.
const PAYLOAD_LEN: u8 = (LEN / 4 - 2) as u8;

/// HMAC-MD5 cut to 96 bits (RFC 2403 2).
const ICV_LEN: usize = 12;

/// Where the ICV sits in the AH header.
const ICV_AT: usize = LEN - ICV_LEN;

/// The fixed IPv4 header keepalived sends (no options).
const IPV4_HEADER_LEN: usize = 20;

/// keepalived's TOS for adverts: internetwork control (0xc0), as it sends every VRRPv2 advert.
const TOS: u8 = 0xc0;

/// The HMAC key: the 8 bytes keepalived makes of `auth_pass` (see [`Auth::pass`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key([u8; PASS_LEN]);

impl Key {
    /// The key keepalived uses for `auth_pass password` under `auth_type AH`.
    pub fn from_password(password: &str) -> Self {
        match Auth::pass(password) {
            Auth::Pass(bytes) => Key(bytes),
            Auth::None | Auth::Ah => Key([0; PASS_LEN]),
        }
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({})", crate::secret::REDACTED)
    }
}

/// HMAC-MD5-96 of `parts`, in order, keyed with `key`.
fn icv(key: &Key, parts: &[&[u8]]) -> [u8; ICV_LEN] {
    // An HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Md5>::new_from_slice(&key.0) {
        Ok(mac) => mac,
        Err(_) => return [0; ICV_LEN],
    };
    for part in parts {
        mac.update(part);
    }
    let digest = mac.finalize().into_bytes();
    let mut out = [0; ICV_LEN];
    out.copy_from_slice(&digest[..ICV_LEN]);
    out
}

/// A copy of the IP and AH headers with what the ICV does not cover zeroed: TOS (1), flags and
/// fragment offset (6, 7), header checksum (10, 11), the TTL (8) when `unicast`, and the ICV.
fn immutable(headers: &[u8], unicast: bool) -> Vec<u8> {
    let mut copy = headers.to_vec();
    let mut zero = |at: usize| {
        if let Some(b) = copy.get_mut(at) {
            *b = 0;
        }
    };
    for at in [1, 6, 7, 10, 11] {
        zero(at);
    }
    if unicast {
        zero(8);
    }
    let icv_at = headers.len().saturating_sub(ICV_LEN);
    for at in icv_at..headers.len() {
        zero(at);
    }
    copy
}

/// The IP and AH headers of one received AH datagram, as they arrived: what its ICV covers
/// before the VRRP message. Made by [`split_datagram`](super::split_datagram) (or
/// [`Covered::new`] from bytes it made), which checked the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Covered<'a> {
    bytes: &'a [u8],
}

impl<'a> Covered<'a> {
    /// The IPv4 header (any options included) and the AH header after it, checked: protocol
    /// 51, an AH header of keepalived's length whose next header is VRRP.
    pub fn new(bytes: &'a [u8]) -> Result<Self, Error> {
        let ihl = usize::from(bytes.first().copied().unwrap_or(0) & 0x0F) * 4;
        if ihl < IPV4_HEADER_LEN || bytes.len() != ihl + LEN {
            return Err(Error::Truncated {
                what: "IPv4 and AH headers",
                needed: ihl.max(IPV4_HEADER_LEN) + LEN,
                got: bytes.len(),
            });
        }
        if bytes.get(9) != Some(&PROTOCOL) {
            return Err(Error::NotVrrp(bytes.get(9).copied().unwrap_or(0)));
        }
        let ah = &bytes[ihl..];
        // keepalived drops an AH datagram for another protocol; the length is its own.
        if ah[0] != VRRP {
            return Err(Error::NotVrrp(ah[0]));
        }
        if ah[1] != PAYLOAD_LEN {
            return Err(Error::BadAhLength(ah[1]));
        }
        Ok(Covered { bytes })
    }

    fn ah(&self) -> &'a [u8] {
        let from = self.bytes.len().saturating_sub(LEN);
        self.bytes.get(from..).unwrap_or(&[])
    }

    fn word(&self, at: usize) -> u32 {
        let ah = self.ah();
        ah.get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map_or(0, u32::from_be_bytes)
    }

    /// The SPI: keepalived's senders put their own address there.
    pub fn spi(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.word(4))
    }

    /// The sequence number.
    pub fn seq(&self) -> u32 {
        self.word(8)
    }

    /// The bytes as received (for a copy that outlives the receive buffer).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether the ICV is the HMAC-MD5-96 of these headers and `vrrp` (the message after them)
    /// under `key`; `unicast` leaves the TTL out as the sender did. Compared in constant time.
    pub fn verify(&self, vrrp: &[u8], key: &Key, unicast: bool) -> bool {
        let headers = immutable(self.bytes, unicast);
        let want = icv(key, &[&headers, vrrp]);
        let got = self.ah().get(ICV_AT..).unwrap_or(&[]);
        crate::secret::eq(got, &want)
    }
}

/// What one AH advert is sent with, besides its VRRP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seal {
    /// The source address (also the SPI).
    pub src: Ipv4Addr,
    /// The group or a unicast peer.
    pub dst: Ipv4Addr,
    /// The IP identification: the kernel would fill in a zero after the ICV was computed, so
    /// the sender numbers its datagrams itself, from 1, as keepalived does.
    pub id: u16,
    /// The sequence number ([`SeqCounter::send`]).
    pub seq: u32,
    /// A unicast advert: the TTL is left out of the ICV.
    pub unicast: bool,
}

/// The whole IPv4 datagram of one AH advert around `vrrp` (a VRRPv2 message with Auth Type 2),
/// its ICV computed: to be sent as it is on a raw socket with `IP_HDRINCL` (the kernel fills
/// in the header checksum, which the ICV leaves out).
pub fn seal(vrrp: &[u8], seal: &Seal, key: &Key) -> Result<Vec<u8>, Error> {
    let total = IPV4_HEADER_LEN + LEN + vrrp.len();
    let total = u16::try_from(total).map_err(|_| Error::BufferLength {
        needed: usize::from(u16::MAX),
        got: total,
    })?;
    let mut d = Vec::with_capacity(usize::from(total));
    d.extend_from_slice(&[0x45, TOS]);
    d.extend_from_slice(&total.to_be_bytes());
    d.extend_from_slice(&seal.id.to_be_bytes());
    d.extend_from_slice(&[0, 0, HOP_LIMIT, PROTOCOL, 0, 0]);
    d.extend_from_slice(&seal.src.octets());
    d.extend_from_slice(&seal.dst.octets());
    d.extend_from_slice(&[VRRP, PAYLOAD_LEN, 0, 0]);
    d.extend_from_slice(&seal.src.octets());
    d.extend_from_slice(&seal.seq.to_be_bytes());
    d.extend_from_slice(&[0; ICV_LEN]);
    let headers = IPV4_HEADER_LEN + LEN;
    let mac = icv(key, &[&immutable(&d, seal.unicast), vrrp]);
    d[headers - ICV_LEN..headers].copy_from_slice(&mac);
    d.extend_from_slice(vrrp);
    Ok(d)
}

/// keepalived's anti-replay counter: one number per instance for what it sends and what it
/// has accepted, so that a router that takes over goes on from the sequence its group last
/// heard (a new master starting again at 1 would be taken for a replay).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqCounter {
    seq: u32,
    /// Reached 0xFFFFFFFE (136 years of 1 s adverts): the next mastership starts again at 0.
    cycled: bool,
}

impl SeqCounter {
    /// Whether a datagram numbered `seq`, its ICV verified, is new: it must be above every
    /// number sent or accepted so far, and then becomes the last one.
    pub fn accept(&mut self, seq: u32) -> bool {
        if seq <= self.seq {
            return false;
        }
        self.seq = seq;
        true
    }

    /// The number of the next advert sent.
    pub fn send(&mut self) -> u32 {
        if self.seq > 0xFFFF_FFFD {
            self.cycled = true;
        } else {
            self.seq += 1;
        }
        self.seq
    }

    /// A master heard a lower-priority advert numbered `seq`: its next one goes past it, as
    /// keepalived syncs its counter.
    pub fn past(&mut self, seq: u32) {
        self.seq = seq.saturating_add(1);
        self.cycled = false;
    }

    /// The router becomes master: a counter that ran out starts again (keepalived's reset of
    /// its anti-replay state).
    pub fn on_master(&mut self) {
        if self.cycled {
            *self = SeqCounter::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrrp::{split_datagram, ChecksumMode, Packet, Repr, Version};
    use std::net::IpAddr;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 11);
    const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);

    fn vrrp() -> Vec<u8> {
        let repr = Repr {
            version: Version::V2,
            vrid: 51,
            priority: 150,
            advert_int: 100,
            auth: Auth::Ah,
            addresses: vec![IpAddr::from([192, 0, 2, 100])],
        };
        repr.to_bytes(
            IpAddr::V4(SRC),
            IpAddr::V4(GROUP),
            ChecksumMode::PseudoHeader,
        )
        .unwrap()
    }

    fn sealed(seq: u32, unicast: bool) -> Vec<u8> {
        let s = Seal {
            src: SRC,
            dst: GROUP,
            id: 1,
            seq,
            unicast,
        };
        seal(&vrrp(), &s, &Key::from_password("secret")).unwrap()
    }

    /// What keepalived 2.2.7 sent for `auth_type AH`, `auth_pass secret`, VRID 51, priority 150,
    /// one VIP 192.0.2.100 from 192.0.2.11: its first advert as master (IP id 1, sequence 1),
    /// captured with tcpdump on a veth in a network namespace.
    const KEEPALIVED: [u8; 64] = [
        0x45, 0xc0, 0x00, 0x40, 0x00, 0x01, 0x00, 0x00, 0xff, 0x33, 0x18, 0xac, 0xc0, 0x00, 0x02,
        0x0b, 0xe0, 0x00, 0x00, 0x12, 0x70, 0x04, 0x00, 0x00, 0xc0, 0x00, 0x02, 0x0b, 0x00, 0x00,
        0x00, 0x01, 0x4c, 0xd1, 0x7f, 0xc7, 0xb0, 0x83, 0x53, 0xd9, 0xb2, 0x78, 0x17, 0x71, 0x21,
        0x33, 0x96, 0x01, 0x02, 0x01, 0x84, 0x65, 0xc0, 0x00, 0x02, 0x64, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn keepalived_s_advert_verifies_and_ours_is_the_same_bytes() {
        let key = Key::from_password("secret");
        let raw = split_datagram(&KEEPALIVED).unwrap();
        let c = raw.ah.unwrap();
        assert_eq!((c.spi(), c.seq()), (SRC, 1));
        assert!(c.verify(raw.payload, &key, false));
        assert!(!c.verify(raw.payload, &Key::from_password("secreT"), false));
        let s = Seal {
            src: SRC,
            dst: GROUP,
            id: 1,
            seq: 1,
            unicast: false,
        };
        let mut ours = seal(&vrrp(), &s, &key).unwrap();
        // The kernel fills in the header checksum (left out of the ICV).
        set_ip_checksum(&mut ours);
        assert_eq!(ours, KEEPALIVED);
    }

    #[test]
    fn a_datagram_splits_into_its_headers_and_message() {
        let mut d = sealed(9, false);
        set_ip_checksum(&mut d);
        let raw = split_datagram(&d).unwrap();
        let c = raw.ah.unwrap();
        assert_eq!(c.seq(), 9);
        assert_eq!(raw.payload, &vrrp()[..]);
        let packet = Packet::new_checked(raw.payload).unwrap();
        let repr = Repr::parse(&packet, raw.src, raw.dst, ChecksumMode::PseudoHeader).unwrap();
        assert_eq!(repr.auth, Auth::Ah);
        assert!(c.verify(raw.payload, &Key::from_password("secret"), false));
    }

    /// The fields RFC 2402 calls mutable may change on the way; every other byte is covered.
    #[test]
    fn every_covered_byte_counts_and_the_mutable_ones_do_not() {
        let key = Key::from_password("secret");
        let d = sealed(1, false);
        for at in 0..d.len() {
            let mut changed = d.clone();
            changed[at] ^= 0x01;
            let (headers, vrrp) = changed.split_at(IPV4_HEADER_LEN + LEN);
            let ok = Covered::new(headers).is_ok_and(|c| c.verify(vrrp, &key, false));
            let mutable = matches!(at, 1 | 6 | 7 | 10 | 11);
            assert_eq!(ok, mutable, "byte {at} flipped");
        }
        let (headers, vrrp) = d.split_at(IPV4_HEADER_LEN + LEN);
        let c = Covered::new(headers).unwrap();
        assert!(!c.verify(vrrp, &Key::from_password("secreT"), false));
        // A unicast sender leaves the TTL out; a multicast one does not.
        let mut u = sealed(1, true);
        u[8] = 64;
        let (headers, vrrp) = u.split_at(IPV4_HEADER_LEN + LEN);
        assert!(Covered::new(headers).unwrap().verify(vrrp, &key, true));
        assert!(!Covered::new(headers).unwrap().verify(vrrp, &key, false));
    }

    #[test]
    fn other_layouts_are_refused() {
        let d = sealed(1, false);
        let headers = &d[..IPV4_HEADER_LEN + LEN];
        assert!(Covered::new(&headers[..headers.len() - 1]).is_err());
        let mut other = headers.to_vec();
        other[IPV4_HEADER_LEN] = 6;
        assert_eq!(Covered::new(&other), Err(Error::NotVrrp(6)));
        let mut long = headers.to_vec();
        long[IPV4_HEADER_LEN + 1] = 5;
        assert_eq!(Covered::new(&long), Err(Error::BadAhLength(5)));
    }

    #[test]
    fn the_counter_refuses_replays_and_goes_on_from_what_it_heard() {
        let mut c = SeqCounter::default();
        assert_eq!(c.send(), 1);
        assert!(!c.accept(1), "its own number again");
        assert!(c.accept(40));
        assert!(!c.accept(39));
        assert_eq!(c.send(), 41);
        c.past(100);
        assert_eq!(c.send(), 102);
        let mut full = SeqCounter {
            seq: 0xFFFF_FFFE,
            cycled: false,
        };
        assert_eq!(full.send(), 0xFFFF_FFFE);
        full.on_master();
        assert_eq!(full.send(), 1);
    }

    fn set_ip_checksum(d: &mut [u8]) {
        let sum = crate::vrrp::checksum::fold(crate::vrrp::checksum::sum(0, &d[..20]));
        d[10..12].copy_from_slice(&(!sum).to_be_bytes());
    }
}

//! The VRRP advertisement: a zero-copy view ([`Packet`]) and its validated meaning ([`Repr`]).
//!
//! ```text
//! VRRPv2 (RFC 3768 5.1)                         VRRPv3 (RFC 5798 5.1)
//!  0       4       8              16              0       4       8              16
//! +-------+-------+---------------+               +-------+-------+---------------+
//! |Version| Type  | Virtual Rtr ID|               |Version| Type  | Virtual Rtr ID|
//! +-------+-------+---------------+               +-------+-------+---------------+
//! |   Priority    |Count IP Addrs |               |   Priority    |Count IPvX Addr|
//! +---------------+---------------+               +-------+-------+---------------+
//! |   Auth Type   |   Adver Int   |               | Rsvd  |  Max Adver Int (cs)   |
//! +---------------+---------------+               +-------+-----------------------+
//! |           Checksum            |               |           Checksum            |
//! +-------------------------------+               +-------------------------------+
//! |  IPv4 Address(es), 4 bytes each               |  IPv4 (4 bytes) or IPv6 (16 bytes)
//! +-------------------------------+               |  address(es), family as the IP header's
//! |  Authentication Data, 8 bytes |               +-------------------------------+
//! +-------------------------------+
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::Range;

use super::checksum::{self, Coverage};
use super::{Auth, ChecksumMode, Error, Version, PASS_LEN, TYPE_ADVERTISEMENT};

/// Length of the fixed header both versions share: everything up to and including the
/// checksum.
pub const HEADER_LEN: usize = 8;

/// Length of the authentication data that ends every VRRPv2 message (RFC 3768 5.3.10), whatever
/// the Auth Type.
pub const V2_AUTH_DATA_LEN: usize = PASS_LEN;

/// Byte offsets of the header fields.
mod field {
    /// Version (high nibble) and Type (low nibble).
    pub(super) const VER_TYPE: usize = 0;
    /// Virtual Rtr ID.
    pub(super) const VRID: usize = 1;
    /// Priority.
    pub(super) const PRIORITY: usize = 2;
    /// Count IP Addrs (v2) / Count IPvX Addr (v3).
    pub(super) const COUNT: usize = 3;
    /// v2: Auth Type. v3: Rsvd (high nibble) and the top 4 bits of Max Adver Int.
    pub(super) const AUTH_TYPE: usize = 4;
    /// v2: Adver Int in seconds. v3: the low 8 bits of Max Adver Int.
    pub(super) const ADVER_INT: usize = 5;
    /// Checksum, 16 bits.
    pub(super) const CHECKSUM: usize = 6;
}

/// The longest VRRPv2 interval: the 8-bit Adver Int field in seconds (RFC 3768 5.3.7).
const V2_MAX_INTERVAL_CS: u16 = 255 * 100;
/// The longest VRRPv3 interval: the 12-bit Max Adver Int field in centiseconds (RFC 5798 5.2.7).
const V3_MAX_INTERVAL_CS: u16 = 0x0FFF;

/// Bytes per virtual address and the family's name, for the family of `addr`.
const fn family(addr: IpAddr) -> (usize, &'static str) {
    match addr {
        IpAddr::V4(_) => (4, "IPv4"),
        IpAddr::V6(_) => (16, "IPv6"),
    }
}

/// Copies as much of `src` as fits into `dst`; callers have already matched the lengths, this
/// only makes a mismatch impossible to turn into a panic.
fn copy_into(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

/// Whether two checksums are the same one's-complement number: 0x0000 and 0xFFFF are both zero,
/// and a receiver that sums the message with its checksum field in (RFC 1071's check) accepts
/// either.
fn same_checksum(a: u16, b: u16) -> bool {
    a == b || (a == 0 && b == 0xFFFF) || (a == 0xFFFF && b == 0)
}

/// A read/write view of a VRRP message over a buffer holding exactly the message (the IP
/// payload).
///
/// Accessors never panic: on a buffer that [`check_len`](Packet::check_len) has not accepted,
/// missing bytes read as zero, missing slices are empty and writes past the end are dropped.
/// Use [`new_checked`](Packet::new_checked), then [`Repr::parse`] for the semantic checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view of `buffer`, without any check.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// A view of `buffer` after [`check_len`](Packet::check_len).
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the fixed header and, as far as the message itself can tell,
    /// everything the address count implies: for v2, `count` IPv4 addresses and the 8 bytes of
    /// authentication data; for v3 at least `count` IPv4 addresses (whether they are IPv6 only
    /// the IP header tells, so [`Repr::parse`] checks the exact length). An unknown version is
    /// left to `Repr::parse`.
    pub fn check_len(&self) -> Result<(), Error> {
        let got = self.buffer.as_ref().len();
        if got < HEADER_LEN {
            return Err(Error::Truncated {
                what: "VRRP header",
                needed: HEADER_LEN,
                got,
            });
        }
        let addrs = 4 * usize::from(self.addr_count());
        let (what, needed) = match self.version() {
            2 => (
                "VRRPv2 addresses and authentication data",
                HEADER_LEN + addrs + V2_AUTH_DATA_LEN,
            ),
            3 => ("VRRPv3 addresses", HEADER_LEN + addrs),
            // The layout of an unknown version is unknown: Repr::parse names the version.
            _ => return Ok(()),
        };
        if got < needed {
            return Err(Error::Truncated { what, needed, got });
        }
        Ok(())
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The whole message.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn byte(&self, at: usize) -> u8 {
        self.buffer.as_ref().get(at).copied().unwrap_or(0)
    }

    fn slice(&self, range: Range<usize>) -> &[u8] {
        self.buffer.as_ref().get(range).unwrap_or(&[])
    }

    /// The Version field (RFC 3768 5.3.1, RFC 5798 5.2.1).
    pub fn version(&self) -> u8 {
        self.byte(field::VER_TYPE) >> 4
    }

    /// The Type field (RFC 3768 5.3.2, RFC 5798 5.2.2); 1 is an advertisement.
    pub fn msg_type(&self) -> u8 {
        self.byte(field::VER_TYPE) & 0x0F
    }

    /// The Virtual Rtr ID field.
    pub fn vrid(&self) -> u8 {
        self.byte(field::VRID)
    }

    /// The Priority field: 255 for the address owner, 0 for a master that is resigning.
    pub fn priority(&self) -> u8 {
        self.byte(field::PRIORITY)
    }

    /// The Count IP Addrs / Count IPvX Addr field.
    pub fn addr_count(&self) -> u8 {
        self.byte(field::COUNT)
    }

    /// VRRPv2's Auth Type field (RFC 3768 5.3.6). Meaningless for v3.
    pub fn auth_type(&self) -> u8 {
        self.byte(field::AUTH_TYPE)
    }

    /// VRRPv2's Adver Int field, in seconds (RFC 3768 5.3.7). Meaningless for v3.
    pub fn adver_int_secs(&self) -> u8 {
        self.byte(field::ADVER_INT)
    }

    /// VRRPv3's Rsvd nibble (RFC 5798 5.2.6): sent as zero, ignored on receipt.
    pub fn rsvd(&self) -> u8 {
        self.byte(field::AUTH_TYPE) >> 4
    }

    /// VRRPv3's 12-bit Max Adver Int field, in centiseconds (RFC 5798 5.2.7). Meaningless for
    /// v2.
    pub fn max_adver_int(&self) -> u16 {
        u16::from_be_bytes([
            self.byte(field::AUTH_TYPE) & 0x0F,
            self.byte(field::ADVER_INT),
        ])
    }

    /// The advertisement interval in centiseconds, whatever the version: v2's seconds times
    /// 100, v3's Max Adver Int as it is.
    pub fn advert_int_cs(&self) -> u16 {
        if self.version() == 2 {
            u16::from(self.adver_int_secs()) * 100
        } else {
            self.max_adver_int()
        }
    }

    /// The Checksum field.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.byte(field::CHECKSUM), self.byte(field::CHECKSUM + 1)])
    }

    fn addr_range(&self) -> Range<usize> {
        let end = if self.version() == 2 {
            HEADER_LEN + 4 * usize::from(self.addr_count())
        } else {
            self.buffer.as_ref().len()
        };
        HEADER_LEN..end.max(HEADER_LEN)
    }

    fn auth_range(&self) -> Range<usize> {
        if self.version() == 2 {
            let start = HEADER_LEN + 4 * usize::from(self.addr_count());
            start..start + V2_AUTH_DATA_LEN
        } else {
            0..0
        }
    }

    /// The address bytes: for v2 the `count` IPv4 addresses, for v3 everything after the
    /// header. Empty if the buffer is too short.
    pub fn addr_field(&self) -> &[u8] {
        self.slice(self.addr_range())
    }

    /// VRRPv2's 8 bytes of authentication data; empty for v3 or a too-short buffer.
    pub fn auth_data(&self) -> &[u8] {
        self.slice(self.auth_range())
    }

    /// The checksum this message should carry between `src` and `dst`, computed with the
    /// checksum field taken as zero. Fails for an unknown version, VRRPv2 over IPv6 and
    /// mixed-family addresses.
    pub fn compute_checksum(
        &self,
        src: IpAddr,
        dst: IpAddr,
        mode: ChecksumMode,
    ) -> Result<u16, Error> {
        let version = Version::try_from(self.version())?;
        let coverage = Coverage::new(version, src, dst, mode)?;
        Ok(checksum::vrrp_checksum(self.as_bytes(), coverage, src, dst))
    }

    /// Whether the Checksum field is right for a message between `src` and `dst`.
    pub fn verify_checksum(
        &self,
        src: IpAddr,
        dst: IpAddr,
        mode: ChecksumMode,
    ) -> Result<bool, Error> {
        Ok(same_checksum(
            self.compute_checksum(src, dst, mode)?,
            self.checksum(),
        ))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_byte(&mut self, at: usize, value: u8) {
        if let Some(byte) = self.buffer.as_mut().get_mut(at) {
            *byte = value;
        }
    }

    /// Sets the Version field.
    pub fn set_version(&mut self, version: u8) {
        let old = self.byte(field::VER_TYPE);
        self.set_byte(field::VER_TYPE, (version << 4) | (old & 0x0F));
    }

    /// Sets the Type field.
    pub fn set_msg_type(&mut self, msg_type: u8) {
        let old = self.byte(field::VER_TYPE);
        self.set_byte(field::VER_TYPE, (old & 0xF0) | (msg_type & 0x0F));
    }

    /// Sets the Virtual Rtr ID field.
    pub fn set_vrid(&mut self, vrid: u8) {
        self.set_byte(field::VRID, vrid);
    }

    /// Sets the Priority field.
    pub fn set_priority(&mut self, priority: u8) {
        self.set_byte(field::PRIORITY, priority);
    }

    /// Sets the address count field.
    pub fn set_addr_count(&mut self, count: u8) {
        self.set_byte(field::COUNT, count);
    }

    /// Sets VRRPv2's Auth Type field.
    pub fn set_auth_type(&mut self, auth_type: u8) {
        self.set_byte(field::AUTH_TYPE, auth_type);
    }

    /// Sets VRRPv2's Adver Int field, in seconds.
    pub fn set_adver_int_secs(&mut self, secs: u8) {
        self.set_byte(field::ADVER_INT, secs);
    }

    /// Sets VRRPv3's Rsvd nibble (only the low 4 bits of `rsvd` are used).
    pub fn set_rsvd(&mut self, rsvd: u8) {
        let old = self.byte(field::AUTH_TYPE);
        self.set_byte(field::AUTH_TYPE, (rsvd << 4) | (old & 0x0F));
    }

    /// Sets VRRPv3's Max Adver Int field (only the low 12 bits of `cs` are used), keeping Rsvd.
    pub fn set_max_adver_int(&mut self, cs: u16) {
        let [hi, lo] = cs.to_be_bytes();
        let old = self.byte(field::AUTH_TYPE);
        self.set_byte(field::AUTH_TYPE, (old & 0xF0) | (hi & 0x0F));
        self.set_byte(field::ADVER_INT, lo);
    }

    /// Sets the Checksum field.
    pub fn set_checksum(&mut self, checksum: u16) {
        let [hi, lo] = checksum.to_be_bytes();
        self.set_byte(field::CHECKSUM, hi);
        self.set_byte(field::CHECKSUM + 1, lo);
    }

    /// The address bytes, writable (see [`addr_field`](Packet::addr_field)). Set the version
    /// and count first: they decide where the field ends.
    pub fn addr_field_mut(&mut self) -> &mut [u8] {
        let range = self.addr_range();
        self.buffer.as_mut().get_mut(range).unwrap_or(&mut [])
    }

    /// VRRPv2's authentication data, writable (see [`auth_data`](Packet::auth_data)).
    pub fn auth_data_mut(&mut self) -> &mut [u8] {
        let range = self.auth_range();
        self.buffer.as_mut().get_mut(range).unwrap_or(&mut [])
    }

    /// Computes the checksum (see [`compute_checksum`](Packet::compute_checksum)) and stores it.
    pub fn fill_checksum(
        &mut self,
        src: IpAddr,
        dst: IpAddr,
        mode: ChecksumMode,
    ) -> Result<(), Error> {
        let checksum = self.compute_checksum(src, dst, mode)?;
        self.set_checksum(checksum);
        Ok(())
    }
}

/// One VRRP advertisement, validated: what the protocol means, not how it is laid out.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The protocol version.
    pub version: Version,
    /// The virtual router id, 1 to 255.
    pub vrid: u8,
    /// The sender's priority: 255 for the address owner, 0 for a master that is resigning
    /// (RFC 5798 5.2.4).
    pub priority: u8,
    /// The advertisement interval in centiseconds for both versions: v2's Adver Int seconds
    /// times 100, v3's Max Adver Int as sent.
    pub advert_int: u16,
    /// v2's authentication; always [`Auth::None`] for v3.
    pub auth: Auth,
    /// The virtual addresses, in wire order, all of the IP header's family. RFC 5798 5.2.5
    /// asks for at least one; none is accepted on receipt (keepalived sends that for an
    /// instance without virtual addresses) and can be sent.
    pub addresses: Vec<IpAddr>,
}

impl Repr {
    /// Parses and validates the message in `packet`, sent from `src` to `dst` (the IP header's
    /// addresses: they decide the address family and the checksum's pseudo-header).
    ///
    /// Checks, in order: the lengths the header implies, version 2 or 3, type advertisement,
    /// matching families (and v2 only over IPv4), the exact length for the count, the checksum,
    /// a VRID other than 0 and, for v2, Auth Type 0, 1 or 2. The v3 Rsvd nibble and v2's
    /// authentication data under Auth Type 0 are ignored (RFC 5798 5.2.6, RFC 3768 5.3.10).
    /// Receive checks that depend on configuration (TTL 255, a configured VRID, a matching
    /// password or interval) belong to the caller.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Packet<T>,
        src: IpAddr,
        dst: IpAddr,
        mode: ChecksumMode,
    ) -> Result<Repr, Error> {
        packet.check_len()?;
        let version = Version::try_from(packet.version())?;
        if packet.msg_type() != TYPE_ADVERTISEMENT {
            // RFC 5798 5.2.2: a packet with unknown type MUST be discarded.
            return Err(Error::BadType(packet.msg_type()));
        }
        let coverage = Coverage::new(version, src, dst, mode)?;

        // The count and the family fix the length; a message with bytes to spare or missing is
        // discarded rather than guessed at (FRR does the same).
        let (addr_len, family_name) = family(src);
        let count = packet.addr_count();
        let auth_len = match version {
            Version::V2 => V2_AUTH_DATA_LEN,
            Version::V3 => 0,
        };
        let expected = HEADER_LEN + usize::from(count) * addr_len + auth_len;
        let got = packet.as_bytes().len();
        if got != expected {
            return Err(Error::AddressCountMismatch {
                version,
                count,
                family: family_name,
                expected,
                got,
            });
        }

        // RFC 3768 7.1 / RFC 5798 7.1: MUST verify that the checksum is correct.
        let computed = checksum::vrrp_checksum(packet.as_bytes(), coverage, src, dst);
        if !same_checksum(computed, packet.checksum()) {
            return Err(Error::BadChecksum {
                expected: computed,
                actual: packet.checksum(),
                coverage: coverage.describe(),
            });
        }

        if packet.vrid() == 0 {
            return Err(Error::ZeroVrid);
        }

        let auth = auth_of(packet, version)?;
        let addresses = addresses_of(packet, src, addr_len)?;

        Ok(Repr {
            version,
            vrid: packet.vrid(),
            priority: packet.priority(),
            advert_int: packet.advert_int_cs(),
            auth,
            addresses,
        })
    }

    /// The length of the message [`emit`](Repr::emit) writes: the header, 4 or 16 bytes per
    /// address, and for v2 the 8 bytes of authentication data.
    pub fn buffer_len(&self) -> usize {
        let addrs: usize = self.addresses.iter().map(|a| family(*a).0).sum();
        let auth = match self.version {
            Version::V2 => V2_AUTH_DATA_LEN,
            Version::V3 => 0,
        };
        HEADER_LEN + addrs + auth
    }

    /// Checks that this advertisement can be sent from `src` to `dst`, and returns what its
    /// checksum covers.
    fn check_emit(&self, src: IpAddr, dst: IpAddr, mode: ChecksumMode) -> Result<Coverage, Error> {
        if self.vrid == 0 {
            return Err(Error::ZeroVrid);
        }
        let coverage = Coverage::new(self.version, src, dst, mode)?;
        if self.addresses.len() > usize::from(u8::MAX) {
            return Err(Error::TooManyAddresses(self.addresses.len()));
        }
        let (_, family_name) = family(src);
        if let Some(address) = self.addresses.iter().find(|a| a.is_ipv4() != src.is_ipv4()) {
            return Err(Error::AddressFamilyMismatch {
                address: *address,
                family: family_name,
            });
        }
        match self.version {
            Version::V2 => {
                if self.advert_int % 100 != 0 {
                    return Err(Error::IntervalNotWholeSeconds(self.advert_int));
                }
                if self.advert_int > V2_MAX_INTERVAL_CS {
                    return Err(Error::IntervalTooLong {
                        version: self.version,
                        interval: self.advert_int,
                        max: V2_MAX_INTERVAL_CS,
                    });
                }
            }
            Version::V3 => {
                if self.advert_int > V3_MAX_INTERVAL_CS {
                    return Err(Error::IntervalTooLong {
                        version: self.version,
                        interval: self.advert_int,
                        max: V3_MAX_INTERVAL_CS,
                    });
                }
                if self.auth != Auth::None {
                    return Err(Error::AuthInV3);
                }
            }
        }
        Ok(coverage)
    }

    /// Writes this advertisement, checksum included, into `packet`, whose buffer must be exactly
    /// [`buffer_len`](Repr::buffer_len) bytes, for sending from `src` to `dst`.
    ///
    /// Fails, writing nothing, for what the wire cannot carry: VRID 0, a v2 interval that is not
    /// whole seconds or over 255 s, a v3 interval over 4095 cs, authentication in v3, v2 over
    /// IPv6, addresses of another family than `src` and `dst`, more than 255 addresses.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Packet<T>,
        src: IpAddr,
        dst: IpAddr,
        mode: ChecksumMode,
    ) -> Result<(), Error> {
        let coverage = self.check_emit(src, dst, mode)?;
        let needed = self.buffer_len();
        let got = packet.as_bytes().len();
        if got != needed {
            return Err(Error::BufferLength { needed, got });
        }
        // Checked above: at most 255 addresses, and a v2 interval of at most 255 s.
        let count = u8::try_from(self.addresses.len())
            .map_err(|_| Error::TooManyAddresses(self.addresses.len()))?;

        packet.set_version(self.version.number());
        packet.set_msg_type(TYPE_ADVERTISEMENT);
        packet.set_vrid(self.vrid);
        packet.set_priority(self.priority);
        packet.set_addr_count(count);
        match self.version {
            Version::V2 => {
                let secs =
                    u8::try_from(self.advert_int / 100).map_err(|_| Error::IntervalTooLong {
                        version: self.version,
                        interval: self.advert_int,
                        max: V2_MAX_INTERVAL_CS,
                    })?;
                packet.set_auth_type(self.auth.auth_type());
                packet.set_adver_int_secs(secs);
            }
            Version::V3 => {
                // RFC 5798 5.2.6: Rsvd MUST be zero on transmission.
                packet.set_rsvd(0);
                packet.set_max_adver_int(self.advert_int);
            }
        }
        packet.set_checksum(0);

        let (addr_len, _) = family(src);
        for (chunk, address) in packet
            .addr_field_mut()
            .chunks_exact_mut(addr_len)
            .zip(&self.addresses)
        {
            match address {
                IpAddr::V4(a) => copy_into(chunk, &a.octets()),
                IpAddr::V6(a) => copy_into(chunk, &a.octets()),
            }
        }
        if self.version == Version::V2 {
            // RFC 3768 5.3.10: zero when there is no password.
            let data = match self.auth {
                Auth::None | Auth::Ah => [0; PASS_LEN],
                Auth::Pass(data) => data,
            };
            copy_into(packet.auth_data_mut(), &data);
        }

        let checksum = checksum::vrrp_checksum(packet.as_bytes(), coverage, src, dst);
        packet.set_checksum(checksum);
        Ok(())
    }

    /// [`emit`](Repr::emit) into a new buffer of [`buffer_len`](Repr::buffer_len) bytes.
    pub fn to_bytes(&self, src: IpAddr, dst: IpAddr, mode: ChecksumMode) -> Result<Vec<u8>, Error> {
        let mut packet = Packet::new_unchecked(vec![0; self.buffer_len()]);
        self.emit(&mut packet, src, dst, mode)?;
        Ok(packet.into_inner())
    }
}

/// The authentication a parsed message carries (v2's Auth Type and data; none for v3).
fn auth_of<T: AsRef<[u8]>>(packet: &Packet<T>, version: Version) -> Result<Auth, Error> {
    Ok(match version {
        Version::V3 => Auth::None,
        Version::V2 => match packet.auth_type() {
            0 => Auth::None,
            1 => {
                let data = <[u8; PASS_LEN]>::try_from(packet.auth_data()).map_err(|_| {
                    Error::Truncated {
                        what: "VRRPv2 authentication data",
                        needed: V2_AUTH_DATA_LEN,
                        got: packet.auth_data().len(),
                    }
                })?;
                Auth::Pass(data)
            }
            // RFC 2338 5.3.6.2; the datagram's AH header is checked by the caller, who
            // holds the key (`ah::Covered::verify`).
            2 => Auth::Ah,
            other => return Err(Error::UnsupportedAuthType(other)),
        },
    })
}

/// The addresses of a message whose length was checked, of `src`'s family (`addr_len` bytes
/// each).
fn addresses_of<T: AsRef<[u8]>>(
    packet: &Packet<T>,
    src: IpAddr,
    addr_len: usize,
) -> Result<Vec<IpAddr>, Error> {
    packet
        .addr_field()
        .chunks_exact(addr_len)
        .map(|chunk| match src {
            IpAddr::V4(_) => <[u8; 4]>::try_from(chunk).map(|o| IpAddr::V4(Ipv4Addr::from(o))),
            IpAddr::V6(_) => <[u8; 16]>::try_from(chunk).map(|o| IpAddr::V6(Ipv6Addr::from(o))),
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| Error::Truncated {
            what: "VRRP address",
            needed: addr_len,
            got: 0,
        })
}

impl TryFrom<u8> for Version {
    type Error = Error;

    /// The version for a version field, or [`Error::BadVersion`].
    fn try_from(number: u8) -> Result<Self, Error> {
        match number {
            2 => Ok(Version::V2),
            3 => Ok(Version::V3),
            other => Err(Error::BadVersion(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::from(a)
    }

    fn v6(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn v3_v4() -> Repr {
        Repr {
            version: Version::V3,
            vrid: 14,
            priority: 40,
            advert_int: 100,
            auth: Auth::None,
            addresses: vec![v4([192, 0, 2, 5])],
        }
    }

    #[test]
    fn accessors_on_short_buffers_do_not_panic() {
        for len in 0..HEADER_LEN + 2 {
            let mut bytes = vec![0x21u8; len];
            let mut p = Packet::new_unchecked(&mut bytes[..]);
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
                p.max_adver_int(),
                p.checksum(),
            );
            let _ = (p.addr_field().len(), p.auth_data().len(), p.advert_int_cs());
            p.set_checksum(1);
            p.set_max_adver_int(0xFFFF);
            p.addr_field_mut().fill(0);
            p.auth_data_mut().fill(0);
            assert!(p.check_len().is_err() || len >= HEADER_LEN);
        }
    }

    #[test]
    fn v3_ipv4_checksum_modes_differ_and_each_verifies_only_itself() {
        let (src, dst) = (v4([192, 0, 2, 11]), v4([224, 0, 0, 18]));
        let with = v3_v4()
            .to_bytes(src, dst, ChecksumMode::PseudoHeader)
            .unwrap();
        let without = v3_v4()
            .to_bytes(src, dst, ChecksumMode::NoPseudoHeader)
            .unwrap();
        assert_ne!(with, without);
        let p = Packet::new_checked(&with[..]).unwrap();
        assert!(p
            .verify_checksum(src, dst, ChecksumMode::PseudoHeader)
            .unwrap());
        assert!(!p
            .verify_checksum(src, dst, ChecksumMode::NoPseudoHeader)
            .unwrap());
        let q = Packet::new_checked(&without[..]).unwrap();
        assert!(q
            .verify_checksum(src, dst, ChecksumMode::NoPseudoHeader)
            .unwrap());
        assert!(matches!(
            Repr::parse(&q, src, dst, ChecksumMode::PseudoHeader),
            Err(Error::BadChecksum { .. })
        ));
        // The pseudo-header binds the addresses: another source fails.
        let other = v4([192, 0, 2, 12]);
        assert!(Repr::parse(&p, other, dst, ChecksumMode::PseudoHeader).is_err());
        // Without it they do not matter.
        assert!(Repr::parse(&q, other, dst, ChecksumMode::NoPseudoHeader).is_ok());
    }

    #[test]
    fn v2_and_v6_ignore_the_mode() {
        let (src, dst) = (v4([192, 0, 2, 11]), v4([224, 0, 0, 18]));
        let v2 = Repr {
            version: Version::V2,
            advert_int: 100,
            auth: Auth::pass("secret"),
            ..v3_v4()
        };
        assert_eq!(
            v2.to_bytes(src, dst, ChecksumMode::PseudoHeader).unwrap(),
            v2.to_bytes(src, dst, ChecksumMode::NoPseudoHeader).unwrap()
        );
        let (src6, dst6) = (v6("fe80::1"), v6("ff02::12"));
        let v3 = Repr {
            addresses: vec![v6("2001:db8::7")],
            ..v3_v4()
        };
        assert_eq!(
            v3.to_bytes(src6, dst6, ChecksumMode::PseudoHeader).unwrap(),
            v3.to_bytes(src6, dst6, ChecksumMode::NoPseudoHeader)
                .unwrap()
        );
    }

    #[test]
    fn both_zeros_of_ones_complement_are_accepted() {
        assert!(same_checksum(0, 0xFFFF));
        assert!(same_checksum(0xFFFF, 0));
        assert!(!same_checksum(1, 0xFFFE));
    }

    #[test]
    #[allow(clippy::too_many_lines)] // one case per refusal, side by side
    fn emit_refuses_what_the_wire_cannot_carry() {
        let (src, dst) = (v4([192, 0, 2, 11]), v4([224, 0, 0, 18]));
        let (src6, dst6) = (v6("fe80::1"), v6("ff02::12"));
        let m = ChecksumMode::PseudoHeader;
        let v2 = Repr {
            version: Version::V2,
            ..v3_v4()
        };
        let cases: Vec<(Repr, IpAddr, IpAddr, Error)> = vec![
            (
                Repr {
                    advert_int: 150,
                    ..v2.clone()
                },
                src,
                dst,
                Error::IntervalNotWholeSeconds(150),
            ),
            (
                Repr {
                    advert_int: 25600,
                    ..v2.clone()
                },
                src,
                dst,
                Error::IntervalTooLong {
                    version: Version::V2,
                    interval: 25600,
                    max: 25500,
                },
            ),
            (
                Repr {
                    advert_int: 4096,
                    ..v3_v4()
                },
                src,
                dst,
                Error::IntervalTooLong {
                    version: Version::V3,
                    interval: 4096,
                    max: 4095,
                },
            ),
            (v2.clone(), src6, dst6, Error::V2OverIpv6),
            (v3_v4(), src, dst6, Error::MixedFamilies { src, dst: dst6 }),
            (
                v3_v4(),
                src6,
                dst6,
                Error::AddressFamilyMismatch {
                    address: v4([192, 0, 2, 5]),
                    family: "IPv6",
                },
            ),
            (
                Repr {
                    addresses: vec![v4([192, 0, 2, 5]); 256],
                    ..v3_v4()
                },
                src,
                dst,
                Error::TooManyAddresses(256),
            ),
            (
                Repr {
                    auth: Auth::pass("x"),
                    ..v3_v4()
                },
                src,
                dst,
                Error::AuthInV3,
            ),
            (Repr { vrid: 0, ..v3_v4() }, src, dst, Error::ZeroVrid),
        ];
        for (repr, s, d, want) in cases {
            assert_eq!(repr.to_bytes(s, d, m), Err(want.clone()), "{repr:?}");
            // And nothing is written into a right-sized buffer.
            let mut packet = Packet::new_unchecked(vec![0xAA; repr.buffer_len()]);
            assert_eq!(repr.emit(&mut packet, s, d, m), Err(want));
            assert!(packet.as_bytes().iter().all(|&b| b == 0xAA));
        }
        // Largest representable intervals are fine.
        let max2 = Repr {
            advert_int: 25500,
            ..v2
        };
        assert!(max2.to_bytes(src, dst, m).is_ok());
        let max3 = Repr {
            advert_int: 4095,
            ..v3_v4()
        };
        assert!(max3.to_bytes(src, dst, m).is_ok());
    }

    #[test]
    fn emit_needs_the_exact_buffer_length() {
        let (src, dst) = (v4([192, 0, 2, 11]), v4([224, 0, 0, 18]));
        let repr = v3_v4();
        assert_eq!(repr.buffer_len(), 12);
        for len in [0, 11, 13] {
            let mut packet = Packet::new_unchecked(vec![0; len]);
            assert_eq!(
                repr.emit(&mut packet, src, dst, ChecksumMode::PseudoHeader),
                Err(Error::BufferLength {
                    needed: 12,
                    got: len
                })
            );
        }
    }

    #[test]
    fn parse_names_what_is_wrong() {
        let (src, dst) = (v4([192, 0, 2, 11]), v4([224, 0, 0, 18]));
        let m = ChecksumMode::PseudoHeader;
        let good = v3_v4().to_bytes(src, dst, m).unwrap();
        let parse = |bytes: &[u8]| Repr::parse(&Packet::new_unchecked(bytes), src, dst, m);
        assert_eq!(parse(&good), Ok(v3_v4()));

        assert!(matches!(
            parse(&good[..7]),
            Err(Error::Truncated { needed: 8, .. })
        ));
        let mut bad = good.clone();
        bad[0] = 0x41;
        assert_eq!(parse(&bad), Err(Error::BadVersion(4)));
        // Even when its count would not fit: an unknown version's layout is unknown.
        bad[3] = 200;
        assert_eq!(parse(&bad), Err(Error::BadVersion(4)));
        bad[3] = good[3];
        bad[0] = 0x32;
        assert_eq!(parse(&bad), Err(Error::BadType(2)));
        let mut long = good.clone();
        long.extend_from_slice(&[0, 0, 0, 0]);
        assert!(matches!(
            parse(&long),
            Err(Error::AddressCountMismatch {
                count: 1,
                expected: 12,
                got: 16,
                ..
            })
        ));
        let mut corrupt = good.clone();
        corrupt[2] ^= 1;
        assert!(matches!(parse(&corrupt), Err(Error::BadChecksum { .. })));
        // IPv6 source: one address now needs 16 bytes.
        let r = Repr::parse(
            &Packet::new_unchecked(&good[..]),
            v6("fe80::1"),
            v6("ff02::12"),
            m,
        );
        assert!(matches!(
            r,
            Err(Error::AddressCountMismatch { expected: 24, .. })
        ));
        let r = Repr::parse(&Packet::new_unchecked(&good[..]), src, v6("ff02::12"), m);
        assert!(matches!(r, Err(Error::MixedFamilies { .. })));
    }

    #[test]
    fn v2_auth_types() {
        let (src, dst) = (v4([192, 0, 2, 11]), v4([224, 0, 0, 18]));
        let m = ChecksumMode::PseudoHeader;
        let repr = Repr {
            version: Version::V2,
            auth: Auth::pass("ocp4_api_vip"),
            ..v3_v4()
        };
        let bytes = repr.to_bytes(src, dst, m).unwrap();
        assert_eq!(&bytes[12..], b"ocp4_api");
        let parsed = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap(), src, dst, m);
        assert_eq!(parsed, Ok(repr));

        // Auth Type 2 (IP AH in RFC 2338): the data is not the key, and is sent as zero.
        let mut ah = bytes.clone();
        let mut p = Packet::new_unchecked(&mut ah[..]);
        p.set_auth_type(2);
        p.fill_checksum(src, dst, m).unwrap();
        let r = Repr::parse(&Packet::new_unchecked(&ah[..]), src, dst, m).unwrap();
        assert_eq!(r.auth, Auth::Ah);
        assert_eq!(&r.to_bytes(src, dst, m).unwrap()[12..], &[0; 8]);

        // Auth Type 3 and above are nobody's.
        let mut three = bytes.clone();
        let mut p = Packet::new_unchecked(&mut three[..]);
        p.set_auth_type(3);
        p.fill_checksum(src, dst, m).unwrap();
        let r = Repr::parse(&Packet::new_unchecked(&three[..]), src, dst, m);
        assert_eq!(r, Err(Error::UnsupportedAuthType(3)));

        // Auth Type 0 with junk in the data: ignored (RFC 3768 5.3.10).
        let mut none = bytes.clone();
        let mut p = Packet::new_unchecked(&mut none[..]);
        p.set_auth_type(0);
        p.fill_checksum(src, dst, m).unwrap();
        let r = Repr::parse(&Packet::new_unchecked(&none[..]), src, dst, m).unwrap();
        assert_eq!(r.auth, Auth::None);
    }

    #[test]
    fn v3_rsvd_is_ignored_on_receipt_and_zero_on_emit() {
        let (src, dst) = (v4([192, 0, 2, 11]), v4([224, 0, 0, 18]));
        let m = ChecksumMode::PseudoHeader;
        let mut bytes = v3_v4().to_bytes(src, dst, m).unwrap();
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_rsvd(0xF);
        p.fill_checksum(src, dst, m).unwrap();
        let p = Packet::new_unchecked(&bytes[..]);
        assert_eq!((p.rsvd(), p.max_adver_int()), (0xF, 100));
        let repr = Repr::parse(&p, src, dst, m).unwrap();
        assert_eq!(repr, v3_v4());
        assert_eq!(
            Packet::new_unchecked(repr.to_bytes(src, dst, m).unwrap()).rsvd(),
            0
        );
    }

    #[test]
    fn pass_is_keepalived_strncpy() {
        assert_eq!(Auth::pass("secret"), Auth::Pass(*b"secret\0\0"));
        assert_eq!(Auth::pass("ocp4_api_vip"), Auth::Pass(*b"ocp4_api"));
        assert_eq!(Auth::pass("12345678"), Auth::Pass(*b"12345678"));
        assert_eq!(Auth::pass(""), Auth::Pass([0; 8]));
        assert_eq!(Auth::pass("ab\0cd"), Auth::Pass(*b"ab\0\0\0\0\0\0"));
        // Bytes, not characters: a multi-byte character may be cut.
        assert_eq!(
            Auth::pass("ééééé"),
            Auth::Pass(*b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9")
        );
    }
}

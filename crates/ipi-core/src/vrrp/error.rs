//! What can be wrong with a VRRP advertisement, on the way in or on the way out.

use std::net::IpAddr;

/// Why a datagram or VRRP message was rejected, or why a [`Repr`](super::Repr) cannot be sent.
///
/// Every variant names the field at fault and, where there is one, the value that would be
/// right, so that a counted-and-dropped packet can be logged usefully. Deliberately not
/// `#[non_exhaustive]`: the workspace is its only user, and a receiver that counts rejects by
/// kind (vrrpd's `Reject::of`) must name a new variant rather than miscount it silently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Fewer bytes than a fixed-size part needs.
    #[error("{what} truncated: needs {needed} bytes, only {got} present")]
    Truncated {
        /// The part that did not fit, e.g. "VRRP header".
        what: &'static str,
        /// Bytes that part needs.
        needed: usize,
        /// Bytes that were there.
        got: usize,
    },
    /// The version field is neither 2 nor 3.
    #[error("VRRP version {0} is not supported: expected 2 (RFC 3768) or 3 (RFC 5798)")]
    BadVersion(u8),
    /// The type field is not 1, advertisement: the only type there is (RFC 5798 5.2.2).
    #[error("VRRP message type {0} is unknown: the only type is 1, advertisement")]
    BadType(u8),
    /// VRID 0, which RFC 5798 5.2.3 and RFC 3768 5.3.3 leave out of the valid range 1-255.
    #[error("virtual router id 0 is not valid: it must be 1 to 255")]
    ZeroVrid,
    /// The checksum field does not match the checksum of the message.
    #[error(
        "bad VRRP checksum: the message carries {actual:#06x}, but computed {coverage} it is \
         {expected:#06x}"
    )]
    BadChecksum {
        /// The checksum computed from the message.
        expected: u16,
        /// The checksum the message carries.
        actual: u16,
        /// What the computation covered (for VRRPv3 over IPv4, the other
        /// [`ChecksumMode`](super::ChecksumMode) may be what the sender used).
        coverage: &'static str,
    },
    /// The address count and the message length disagree.
    #[error(
        "{version} message with {count} {family} address(es) must be {expected} bytes long, \
         but is {got}"
    )]
    AddressCountMismatch {
        /// The message's version.
        version: super::Version,
        /// The Count IP Addrs field.
        count: u8,
        /// "IPv4" or "IPv6", from the IP header.
        family: &'static str,
        /// The length the count implies.
        expected: usize,
        /// The actual length.
        got: usize,
    },
    /// Source and destination IP addresses of different families.
    #[error("source {src} and destination {dst} are of different address families")]
    MixedFamilies {
        /// The source address.
        src: IpAddr,
        /// The destination address.
        dst: IpAddr,
    },
    /// A virtual address of another family than the datagram carrying it (RFC 5798 5.2.9:
    /// one advertisement carries addresses of its own IP version only).
    #[error("virtual address {address} is not {family}, the family of the datagram")]
    AddressFamilyMismatch {
        /// The offending address.
        address: IpAddr,
        /// "IPv4" or "IPv6".
        family: &'static str,
    },
    /// VRRPv2 carried over IPv6: RFC 3768 is IPv4 only.
    #[error("VRRPv2 runs over IPv4 only (RFC 3768); VRRP over IPv6 needs version 3")]
    V2OverIpv6,
    /// A VRRPv2 Auth Type other than 0 (none) or 1 (simple text password), e.g. 2 (IP AH).
    #[error(
        "VRRPv2 authentication type {0} is not supported: expected 0 (none), 1 (simple \
         password) or 2 (IP Authentication Header)"
    )]
    UnsupportedAuthType(u8),
    /// A VRRPv3 [`Repr`](super::Repr) with authentication, which v3 does not have.
    #[error("VRRPv3 has no authentication (RFC 5798 removed it): use Auth::None")]
    AuthInV3,
    /// A VRRPv2 interval that is not a whole number of seconds (RFC 3768 5.3.7).
    #[error(
        "VRRPv2 advertisement interval {0} cs is not a whole number of seconds: VRRPv2 sends \
         seconds"
    )]
    IntervalNotWholeSeconds(u16),
    /// An interval longer than the field can hold.
    #[error("{version} advertisement interval {interval} cs exceeds the maximum of {max} cs")]
    IntervalTooLong {
        /// The version whose field is too small.
        version: super::Version,
        /// The requested interval in centiseconds.
        interval: u16,
        /// The largest interval that version can send, in centiseconds.
        max: u16,
    },
    /// More addresses than the 8-bit count field holds.
    #[error("{0} virtual addresses do not fit one advertisement: at most 255")]
    TooManyAddresses(usize),
    /// The buffer given to [`Repr::emit`](super::Repr::emit) is not the message's length.
    #[error("buffer is {got} bytes, the message needs exactly {needed}")]
    BufferLength {
        /// [`Repr::buffer_len`](super::Repr::buffer_len).
        needed: usize,
        /// The buffer's length.
        got: usize,
    },
    /// The IP version nibble is neither 4 nor 6.
    #[error("IP version {0} in the datagram: expected 4 or 6")]
    BadIpVersion(u8),
    /// An IPv4 header length (IHL) below the minimum of 5 words.
    #[error("IPv4 header length {0} (32-bit words) is below the minimum of 5")]
    BadIhl(u8),
    /// An IPv4 total length shorter than the IPv4 header.
    #[error("IPv4 total length {total} is shorter than the {header_len}-byte header")]
    BadTotalLength {
        /// The Total Length field.
        total: u16,
        /// The header length from IHL.
        header_len: usize,
    },
    /// The IPv4 header checksum does not verify.
    #[error(
        "bad IPv4 header checksum: the header carries {actual:#06x}, computed {expected:#06x}"
    )]
    BadIpChecksum {
        /// The checksum computed from the header.
        expected: u16,
        /// The checksum the header carries.
        actual: u16,
    },
    /// An IPv4 fragment: advertisements are far smaller than any MTU and never fragmented, and
    /// a fragment's payload is not a whole message.
    #[error(
        "IPv4 fragment (offset {offset} bytes, more fragments: {more_fragments}): VRRP \
         advertisements are never fragmented"
    )]
    Fragment {
        /// The fragment offset in bytes.
        offset: u16,
        /// The More Fragments flag.
        more_fragments: bool,
    },
    /// An IPv4 protocol or IPv6 next header other than 112 (or 51 with VRRP after it), or an
    /// AH header for another protocol.
    #[error("IP protocol {0} is not VRRP (112)")]
    NotVrrp(u8),
    /// An AH header of another length than keepalived's 24 bytes (Payload Len 4).
    #[error("AH header with Payload Len {0}: keepalived's VRRP AH header has 4 (24 bytes)")]
    BadAhLength(u8),
    /// An IPv6 extension header before the VRRP message.
    #[error(
        "IPv6 extension header (next header {0}) before the VRRP message: advertisements are \
         sent without extension headers, and this parser does not walk them"
    )]
    Ipv6ExtensionHeader(u8),
}

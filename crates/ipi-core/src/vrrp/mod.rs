//! VRRP advertisements (RFC 3768 v2, RFC 5798 v3): the wire codec and the protocol's timer
//! arithmetic.
//!
//! The codec follows smoltcp's `wire` module: [`Packet`] is a zero-copy view over a buffer with
//! field accessors, [`Repr`] is the parsed, validated meaning of one advertisement. Lengths,
//! version, type and checksum are validated once, in [`Repr::parse`]; nothing here panics on any
//! input (accessors on a buffer that [`Packet::check_len`] has not accepted read missing bytes as
//! zero instead of indexing out of bounds).
//!
//! [`parse_datagram`] starts one layer lower, at the IP header, because Linux raw IPv4 sockets
//! hand the header to vrrpd and because captures are dissected that way.
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use ipi_core::vrrp::{Auth, ChecksumMode, Packet, Repr, Version};
//!
//! let src = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 11));
//! let dst = IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18));
//! let repr = Repr {
//!     version: Version::V3,
//!     vrid: 14,
//!     priority: 40,
//!     advert_int: 100,
//!     auth: Auth::None,
//!     addresses: vec![IpAddr::V4(Ipv4Addr::new(192, 0, 2, 5))],
//! };
//! let bytes = repr.to_bytes(src, dst, ChecksumMode::PseudoHeader)?;
//! let packet = Packet::new_checked(&bytes[..])?;
//! assert_eq!(Repr::parse(&packet, src, dst, ChecksumMode::PseudoHeader)?, repr);
//! # Ok::<(), ipi_core::vrrp::Error>(())
//! ```

pub mod ah;
mod checksum;
mod error;
mod ip;
mod packet;
mod protocol;
pub mod timers;

pub use error::Error;
pub use ip::{parse_datagram, split_datagram, Datagram, RawDatagram};
pub use packet::{Packet, Repr, HEADER_LEN, V2_AUTH_DATA_LEN};
pub use protocol::{
    Auth, ChecksumMode, Version, HOP_LIMIT, PASS_LEN, PROTOCOL, TYPE_ADVERTISEMENT,
};

//! What may come in from the link, checked before anything reads a datagram (RFC 6762 11, and
//! what avahi checks): multicast DNS is link-local, so a datagram counts only when its source
//! is on the link (in one of the interface's prefixes, or an IPv6 link-local address), and a
//! response only when it was sent with IP TTL / hop limit 255 (a routed packet arrives with
//! less) from port 5353.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use hickory_proto::op::{Message, MessageType};
use ipnetwork::IpNetwork;

/// The mDNS port.
pub const PORT: u16 = 5353;

/// How a datagram arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Who sent it.
    pub from: SocketAddr,
    /// The destination address in its IP header (a group, or one of ours), when the kernel said.
    pub to: Option<IpAddr>,
    /// Its IP TTL / hop limit, when the kernel said.
    pub ttl: Option<u8>,
}

impl Arrival {
    /// Sent to a multicast group (not to us alone).
    pub fn multicast(&self) -> bool {
        self.to.is_some_and(|a| a.is_multicast())
    }
}

/// Why a datagram was not taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Its source is not on the link.
    OffLink(IpAddr),
    /// A response whose IP TTL was not 255 (or not known).
    Ttl(Option<u8>),
    /// A response from a port other than 5353.
    Port(u16),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::OffLink(a) => write!(f, "source {a} is not on the link"),
            Refused::Ttl(Some(t)) => write!(f, "IP TTL {t}, not 255 (a routed packet)"),
            Refused::Ttl(None) => write!(f, "no IP TTL given by the kernel"),
            Refused::Port(p) => write!(f, "a response from port {p}, not {PORT}"),
        }
    }
}

/// The prefixes of the link a socket listens on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    prefixes: Vec<IpNetwork>,
}

impl Link {
    /// The link of these prefixes (the interface's addresses with their netmasks).
    pub fn new(prefixes: Vec<IpNetwork>) -> Link {
        Link { prefixes }
    }

    /// Whether `address` is on the link: in one of its prefixes, or IPv6 link-local.
    pub fn on_link(&self, address: IpAddr) -> bool {
        let address = match address {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None if (v6.segments()[0] & 0xffc0) == 0xfe80 => return true,
                None => address,
            },
            IpAddr::V4(_) => address,
        };
        self.prefixes.iter().any(|p| p.contains(address))
    }

    /// A query is taken from a source on the link (a legacy querier such as `dig` sends with
    /// any TTL, so the TTL is not asked for).
    pub fn query(&self, a: &Arrival) -> Result<(), Refused> {
        if !self.on_link(a.from.ip()) {
            return Err(Refused::OffLink(a.from.ip()));
        }
        Ok(())
    }

    /// Whether `message` is taken as it arrived: a query as [`Link::query`] says, a response
    /// as [`Link::response`] says.
    pub fn admit(&self, message: &Message, a: &Arrival) -> Result<(), Refused> {
        match message.message_type() {
            MessageType::Query => self.query(a),
            MessageType::Response => self.response(a),
        }
    }

    /// A response is taken from a source on the link, port 5353, sent with TTL 255.
    pub fn response(&self, a: &Arrival) -> Result<(), Refused> {
        self.query(a)?;
        if a.from.port() != PORT {
            return Err(Refused::Port(a.from.port()));
        }
        if a.ttl != Some(255) {
            return Err(Refused::Ttl(a.ttl));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> Link {
        Link::new(vec![
            "192.0.2.10/24".parse().unwrap(),
            "2001:db8::10/64".parse().unwrap(),
        ])
    }

    fn arrival(from: &str, ttl: u8) -> Arrival {
        Arrival {
            from: from.parse().unwrap(),
            to: Some("224.0.0.251".parse().unwrap()),
            ttl: Some(ttl),
        }
    }

    #[test]
    fn the_link_is_its_prefixes_and_ipv6_link_local() {
        let l = link();
        for on in [
            "192.0.2.1",
            "192.0.2.254",
            "2001:db8::99",
            "fe80::1",
            "::ffff:192.0.2.7",
        ] {
            assert!(l.on_link(on.parse().unwrap()), "{on}");
        }
        for off in [
            "198.51.100.1",
            "192.0.3.1",
            "2001:db8:1::1",
            "::ffff:198.51.100.1",
        ] {
            assert!(!l.on_link(off.parse().unwrap()), "{off}");
        }
    }

    #[test]
    fn a_response_needs_the_link_port_5353_and_ttl_255() {
        let l = link();
        assert_eq!(l.response(&arrival("192.0.2.5:5353", 255)), Ok(()));
        assert_eq!(
            l.response(&arrival("192.0.2.5:5353", 64)),
            Err(Refused::Ttl(Some(64)))
        );
        assert_eq!(
            l.response(&arrival("192.0.2.5:40000", 255)),
            Err(Refused::Port(40000))
        );
        let off: IpAddr = "198.51.100.1".parse().unwrap();
        assert_eq!(
            l.response(&arrival("198.51.100.1:5353", 255)),
            Err(Refused::OffLink(off))
        );
        let mut unknown = arrival("192.0.2.5:5353", 255);
        unknown.ttl = None;
        assert_eq!(l.response(&unknown), Err(Refused::Ttl(None)));
    }

    #[test]
    fn a_query_needs_only_the_link() {
        let l = link();
        assert_eq!(l.query(&arrival("192.0.2.5:40000", 1)), Ok(()));
        assert!(l.query(&arrival("198.51.100.1:5353", 255)).is_err());
    }
}

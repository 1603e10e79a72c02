//! Address arithmetic and the spaces addresses are handed out from.
//!
//! Every allocator here (NetConfig subnets, MetalLB pools, CNI ranges) describes what it may
//! hand out as a [`Space`]: ranges walked in order, minus the addresses that must never be given
//! to anyone (the subnet's network and broadcast addresses, its gateway, exclusions).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;

/// An address as a number, so that ranges of both families share one arithmetic.
pub fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The address `value` of the family of `like`; `None` when it does not fit that family.
pub fn from_u128(value: u128, like: IpAddr) -> Option<IpAddr> {
    match like {
        IpAddr::V4(_) => u32::try_from(value)
            .ok()
            .map(|v| IpAddr::V4(Ipv4Addr::from(v))),
        IpAddr::V6(_) => Some(IpAddr::V6(Ipv6Addr::from(value))),
    }
}

/// Why a range or an address cannot be read. Each message quotes what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// The two ends are of different families.
    #[error("{first} and {last} are not of one address family")]
    Families {
        /// The first address given.
        first: IpAddr,
        /// The last address given.
        last: IpAddr,
    },
    /// The first address comes after the last.
    #[error("{first} comes after {last}")]
    Reversed {
        /// The first address given.
        first: IpAddr,
        /// The last address given.
        last: IpAddr,
    },
    /// Not a network (`A/LEN`).
    #[error("{text:?} is not a network: {why}")]
    NotNetwork {
        /// The text.
        text: String,
        /// The network parser's reason.
        why: String,
    },
    /// whereabouts' `FIRST-LAST/LEN` with a length that does not fit.
    #[error("{text:?}: bad prefix length: {why}")]
    BadLength {
        /// The text.
        text: String,
        /// Why.
        why: String,
    },
    /// whereabouts' `FIRST-LAST/LEN` whose network, taken around LAST, leaves FIRST out.
    #[error("{text:?}: {first} is outside {net}")]
    Outside {
        /// The text.
        text: String,
        /// The first address.
        first: IpAddr,
        /// The network around the last.
        net: IpNetwork,
    },
    /// Not an IP address.
    #[error("{0:?} is not an IP address")]
    NotIp(String),
}

/// An inclusive range of addresses of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// The first address.
    pub first: IpAddr,
    /// The last address (inclusive).
    pub last: IpAddr,
}

impl Span {
    /// The range `first`..=`last`: both of one family, `first` not after `last`.
    pub fn new(first: IpAddr, last: IpAddr) -> Result<Self, RangeError> {
        if first.is_ipv4() != last.is_ipv4() {
            return Err(RangeError::Families { first, last });
        }
        if to_u128(first) > to_u128(last) {
            return Err(RangeError::Reversed { first, last });
        }
        Ok(Self { first, last })
    }

    /// One address.
    pub fn single(ip: IpAddr) -> Self {
        Self {
            first: ip,
            last: ip,
        }
    }

    /// Every address of a network, its network and broadcast addresses included.
    pub fn of_network(net: IpNetwork) -> Self {
        Self {
            first: net.network(),
            last: net.broadcast_or_last(),
        }
    }

    /// Reads `A-B` (a range), `A/LEN` (a network) or `A` (one address).
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        let text = text.trim();
        if let Some((a, b)) = text.split_once('-') {
            let first = parse_ip(a)?;
            let last = parse_ip(b)?;
            return Self::new(first, last);
        }
        if text.contains('/') {
            let net: IpNetwork =
                text.parse()
                    .map_err(|e: ipnetwork::IpNetworkError| RangeError::NotNetwork {
                        text: text.to_owned(),
                        why: e.to_string(),
                    })?;
            return Ok(Self::of_network(net));
        }
        parse_ip(text).map(Self::single)
    }

    /// Reads whereabouts' `FIRST-LAST/LEN`: the range and the network of that length around
    /// it; `Ok(None)` when `text` is not of that form.
    pub fn parse_with_length(text: &str) -> Result<Option<(Self, IpNetwork)>, RangeError> {
        let Some((a, rest)) = text.trim().split_once('-') else {
            return Ok(None);
        };
        let Some((b, len)) = rest.split_once('/') else {
            return Ok(None);
        };
        let span = Self::new(parse_ip(a)?, parse_ip(b)?)?;
        let bad_length = |e: ipnetwork::IpNetworkError| RangeError::BadLength {
            text: text.to_owned(),
            why: e.to_string(),
        };
        let net: IpNetwork = format!("{}/{}", span.last, len.trim())
            .parse()
            .map_err(bad_length)?;
        let net = IpNetwork::new(net.network(), net.prefix()).map_err(bad_length)?;
        if !net.contains(span.first) {
            return Err(RangeError::Outside {
                text: text.to_owned(),
                first: span.first,
                net,
            });
        }
        Ok(Some((span, net)))
    }

    /// `ip` is in the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.first.is_ipv4()
            && (to_u128(self.first)..=to_u128(self.last)).contains(&to_u128(ip))
    }

    /// The two ranges share an address.
    pub fn overlaps(&self, other: &Span) -> bool {
        self.first.is_ipv4() == other.first.is_ipv4()
            && to_u128(self.first) <= to_u128(other.last)
            && to_u128(other.first) <= to_u128(self.last)
    }

    /// The number of addresses.
    pub fn len(&self) -> u128 {
        (to_u128(self.last) - to_u128(self.first)).saturating_add(1)
    }

    /// Never true: a range holds at least one address.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// Reads one address; the error quotes the text.
pub fn parse_ip(text: &str) -> Result<IpAddr, RangeError> {
    text.trim()
        .parse()
        .map_err(|_| RangeError::NotIp(text.trim().to_owned()))
}

/// The last address of a network: its broadcast address for IPv4.
trait LastAddress {
    fn broadcast_or_last(&self) -> IpAddr;
}

impl LastAddress for IpNetwork {
    fn broadcast_or_last(&self) -> IpAddr {
        match self {
            IpNetwork::V4(n) => IpAddr::V4(n.broadcast()),
            IpNetwork::V6(n) => {
                let host_bits = 128 - u32::from(n.prefix());
                let mask = if host_bits == 128 {
                    u128::MAX
                } else {
                    (1u128 << host_bits) - 1
                };
                IpAddr::V6(Ipv6Addr::from(u128::from(n.network()) | mask))
            }
        }
    }
}

/// What an allocator may hand out: `spans` walked in order, less what is never handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Space {
    /// Where addresses come from, in the order they are tried.
    pub spans: Vec<Span>,
    /// The subnet: its network address (and, for IPv4, its broadcast address) is never handed
    /// out, and nothing outside it is.
    pub network: Option<IpNetwork>,
    /// The subnet's gateway: never handed out.
    pub gateway: Option<IpAddr>,
    /// Never handed out.
    pub excluded: Vec<Span>,
    /// MetalLB's `avoidBuggyIPs`: no IPv4 address ending in .0 or .255.
    pub avoid_buggy: bool,
}

impl Space {
    /// Addresses from `spans`, with nothing else to avoid.
    pub fn new(spans: Vec<Span>) -> Self {
        Self {
            spans,
            network: None,
            gateway: None,
            excluded: Vec::new(),
            avoid_buggy: false,
        }
    }

    /// Why `ip` must not be handed out from this space as a fixed address, or `None` when it
    /// may be. A subnet's fixed address may lie outside its ranges (as the infra-operator
    /// allows: ranges are for addresses nobody asked for), never outside the subnet.
    pub fn refusal(&self, ip: IpAddr) -> Option<String> {
        if self.network.is_none() && !self.spans.iter().any(|s| s.contains(ip)) {
            let spans: Vec<String> = self.spans.iter().map(ToString::to_string).collect();
            return Some(format!("{ip} is outside {}", spans.join(", ")));
        }
        self.reserved(ip)
    }

    /// Why `ip`, inside the spans, is never handed out; `None` when it may be.
    fn reserved(&self, ip: IpAddr) -> Option<String> {
        if let Some(net) = self.network {
            if !net.contains(ip) {
                return Some(format!("{ip} is outside {net}"));
            }
            if ip == net.network() && net.prefix() < max_prefix(ip) - 1 {
                return Some(format!("{ip} is the network address of {net}"));
            }
            if let IpNetwork::V4(n) = net {
                if IpAddr::V4(n.broadcast()) == ip && n.prefix() < 31 {
                    return Some(format!("{ip} is the broadcast address of {net}"));
                }
            }
        }
        if self.gateway == Some(ip) {
            return Some(format!("{ip} is the gateway"));
        }
        if let Some(span) = self.excluded.iter().find(|s| s.contains(ip)) {
            return Some(if span.first == span.last {
                format!("{ip} is excluded")
            } else {
                format!("{ip} is excluded (by {span})")
            });
        }
        if self.avoid_buggy {
            if let IpAddr::V4(a) = ip {
                let last = a.octets()[3];
                if last == 0 || last == 255 {
                    return Some(format!("{ip} ends in .{last} (avoidBuggyIPs)"));
                }
            }
        }
        None
    }

    /// The first address of `span` at or after `from` that may be handed out, jumping over
    /// excluded ranges rather than stepping through them.
    pub fn next_allowed(&self, span: &Span, from: u128) -> Option<IpAddr> {
        let last = to_u128(span.last);
        let mut at = from.max(to_u128(span.first));
        while at <= last {
            let ip = from_u128(at, span.first)?;
            match self.excluded.iter().find(|s| s.contains(ip)) {
                Some(excluded) => at = to_u128(excluded.last).checked_add(1)?,
                None if self.reserved(ip).is_none() => return Some(ip),
                None => at = at.checked_add(1)?,
            }
        }
        None
    }

    /// The spans as text, for messages about a full space.
    pub fn describe(&self) -> String {
        let spans: Vec<String> = self.spans.iter().map(ToString::to_string).collect();
        spans.join(", ")
    }
}

fn max_prefix(ip: IpAddr) -> u8 {
    if ip.is_ipv4() {
        32
    } else {
        128
    }
}

/// Which free address a pool hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The lowest free one (NetConfig, MetalLB): a release moves the hint back to it.
    Lowest,
    /// The one after the last handed out, wrapping around (host-local's order): a released
    /// address is reused only once the others have been.
    RoundRobin,
}

impl Order {
    /// The order of a pool known only by its name in the store (as `ipam release NAME` knows
    /// the pools it walks): CNI ranges (`cni/...`) hand out round robin, like host-local; every
    /// other pool lowest-first.
    pub fn of_pool(name: &str) -> Self {
        if name.starts_with("cni/") {
            Order::RoundRobin
        } else {
            Order::Lowest
        }
    }
}

/// A pool: a name in the store and the space it hands addresses out from.
#[derive(Debug, Clone)]
pub struct Pool {
    /// The pool's name in the store (`netconfig/NETWORK/SUBNET`, `pool/NAME`, `cni/NET/N`).
    pub name: String,
    /// What it may hand out.
    pub space: Space,
    /// Which free address it hands out.
    pub order: Order,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_ranges_networks_and_addresses() {
        let s = Span::parse("172.17.0.80-172.17.0.90").unwrap();
        assert_eq!(
            (s.first, s.last, s.len()),
            (ip("172.17.0.80"), ip("172.17.0.90"), 11)
        );
        let n = Span::parse("2001:db8::/126").unwrap();
        assert_eq!((n.first, n.last), (ip("2001:db8::"), ip("2001:db8::3")));
        assert_eq!(Span::parse("192.0.2.9").unwrap().len(), 1);
        let err = |text: &str| Span::parse(text).unwrap_err();
        assert_eq!(
            err("192.0.2.9-192.0.2.1"),
            RangeError::Reversed {
                first: ip("192.0.2.9"),
                last: ip("192.0.2.1")
            }
        );
        assert!(err("192.0.2.9-192.0.2.1")
            .to_string()
            .contains("comes after"));
        assert!(matches!(
            err("192.0.2.1-2001:db8::1"),
            RangeError::Families { .. }
        ));
        assert!(err("192.0.2.1-2001:db8::1").to_string().contains("family"));
        assert_eq!(err(" 192.0.2.300"), RangeError::NotIp("192.0.2.300".into()));
        assert!(err("192.0.2.300").to_string().contains("not an IP"));
    }

    #[test]
    fn parses_ranges_with_a_prefix_length() {
        let (s, net) = Span::parse_with_length("192.0.2.225-192.0.2.230/28")
            .unwrap()
            .unwrap();
        assert_eq!((s.first, s.last), (ip("192.0.2.225"), ip("192.0.2.230")));
        assert_eq!(net.to_string(), "192.0.2.224/28");
        assert_eq!(Span::parse_with_length("192.0.2.0/24").unwrap(), None);
        let e = Span::parse_with_length("192.0.2.1-192.0.2.30/28").unwrap_err();
        assert!(matches!(e, RangeError::Outside { .. }), "{e:?}");
        assert!(e.to_string().contains("outside"), "{e}");
        assert!(Span::parse_with_length("192.0.2.1-192.0.2.3/33").is_err());
    }

    #[test]
    fn never_hands_out_network_broadcast_gateway_or_excluded() {
        let net: IpNetwork = "192.0.2.0/29".parse().unwrap();
        let space = Space {
            spans: vec![Span::of_network(net)],
            network: Some(net),
            gateway: Some(ip("192.0.2.1")),
            excluded: vec![Span::parse("192.0.2.3-192.0.2.4").unwrap()],
            avoid_buggy: false,
        };
        let span = space.spans[0];
        let mut got = Vec::new();
        let mut from = 0;
        while let Some(a) = space.next_allowed(&span, from) {
            got.push(a);
            from = to_u128(a) + 1;
        }
        assert_eq!(got, vec![ip("192.0.2.2"), ip("192.0.2.5"), ip("192.0.2.6")]);
        assert!(space
            .refusal(ip("192.0.2.7"))
            .unwrap()
            .contains("broadcast"));
        assert!(space.refusal(ip("192.0.2.4")).unwrap().contains("excluded"));
        assert!(space.refusal(ip("192.0.2.9")).unwrap().contains("outside"));
    }

    #[test]
    fn point_to_point_networks_use_both_addresses() {
        let net: IpNetwork = "192.0.2.0/31".parse().unwrap();
        let mut space = Space::new(vec![Span::of_network(net)]);
        space.network = Some(net);
        assert_eq!(space.refusal(ip("192.0.2.0")), None);
        assert_eq!(space.refusal(ip("192.0.2.1")), None);
    }

    #[test]
    fn avoids_buggy_addresses_when_asked() {
        let mut space = Space::new(vec![Span::parse("198.51.100.255-198.51.101.1").unwrap()]);
        space.avoid_buggy = true;
        assert_eq!(
            space.next_allowed(&space.spans[0].clone(), 0),
            Some(ip("198.51.101.1"))
        );
    }
}

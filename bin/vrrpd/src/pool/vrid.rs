//! The VRIDs of a pool's instances. VRIDs are 1-255 per interface and family (RFC 5798 5.2.3),
//! so each family of the pool has its own 255, less those the cluster's API and Ingress
//! instances use on the interface.
//!
//! An address's VRID must not depend on which other addresses are reserved, or a reservation
//! added or released would renumber (and so restart, and move) the others: it is the
//! address's place in its pool (its offset over the pool's ranges of its family), taken modulo
//! the free VRIDs. Only when two reserved addresses meet on one VRID (a pool larger than the
//! VRIDs free) does the later one, in address order, take the next free one.

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipi_store::range::{to_u128, Span};

/// The place of `ip` among the addresses of `spans` of its family, from 0; `None` outside.
pub fn offset(spans: &[Span], ip: IpAddr) -> Option<u128> {
    let mut before: u128 = 0;
    for span in spans.iter().filter(|s| s.first.is_ipv4() == ip.is_ipv4()) {
        if span.contains(ip) {
            return Some(before + (to_u128(ip) - to_u128(span.first)));
        }
        before = before.saturating_add(span.len());
    }
    None
}

/// The VRIDs for `addresses` (one family, in address order, each with its offset), avoiding
/// `reserved`; `Err(free)` when there are more addresses than free VRIDs.
pub fn choose(addresses: &[(IpAddr, u128)], reserved: &BTreeSet<u8>) -> Result<Vec<u8>, usize> {
    let free: Vec<u8> = (1..=255u8).filter(|v| !reserved.contains(v)).collect();
    if addresses.len() > free.len() {
        return Err(free.len());
    }
    let mut taken = vec![false; free.len()];
    let mut out = Vec::with_capacity(addresses.len());
    for (_, offset) in addresses {
        let start = usize::try_from(offset % free.len() as u128).unwrap_or(0);
        // There is a free one: fewer addresses than VRIDs.
        let slot = (0..free.len())
            .map(|k| (start + k) % free.len())
            .find(|s| !taken[*s])
            .unwrap_or(start);
        taken[slot] = true;
        out.push(free[slot]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn offsets_run_over_the_ranges_of_a_family() {
        let spans = [
            Span::parse("192.0.2.10-192.0.2.19").unwrap(),
            Span::parse("2001:db8::/126").unwrap(),
            Span::parse("198.51.100.0/30").unwrap(),
        ];
        assert_eq!(offset(&spans, ip("192.0.2.10")), Some(0));
        assert_eq!(offset(&spans, ip("198.51.100.1")), Some(11));
        assert_eq!(offset(&spans, ip("2001:db8::3")), Some(3));
        assert_eq!(offset(&spans, ip("203.0.113.1")), None);
    }

    #[test]
    fn a_vrid_does_not_change_when_others_come_and_go() {
        let reserved = BTreeSet::from([124, 75]);
        let all: Vec<(IpAddr, u128)> = (0..30u8)
            .map(|i| (IpAddr::from([192, 0, 2, i]), u128::from(i)))
            .collect();
        let every = choose(&all, &reserved).unwrap();
        assert!(!every.contains(&124) && !every.contains(&75));
        assert_eq!(every.iter().collect::<BTreeSet<_>>().len(), 30);
        let some: Vec<_> = all.iter().copied().step_by(3).collect();
        let fewer = choose(&some, &reserved).unwrap();
        for (k, v) in fewer.iter().enumerate() {
            assert_eq!(*v, every[k * 3]);
        }
    }

    #[test]
    fn more_addresses_than_vrids_is_refused_and_a_meeting_takes_the_next() {
        let reserved = BTreeSet::from([1]);
        let many: Vec<(IpAddr, u128)> = (0..255u32)
            .map(|i| (IpAddr::from(i.to_be_bytes()), u128::from(i)))
            .collect();
        assert_eq!(choose(&many, &reserved), Err(254));
        let two = [(ip("192.0.2.1"), 0), (ip("192.0.2.2"), 254)];
        assert_eq!(choose(&two, &reserved).unwrap(), [2, 3]);
    }
}

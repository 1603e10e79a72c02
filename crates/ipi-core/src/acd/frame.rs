//! Ethernet frames for the address's owner and for whoever asks whether it is owned: the
//! gratuitous ARP and unsolicited neighbour advertisement that announce an address (vrrpd's),
//! the ARP probe and the duplicate-address-detection solicitation that ask (RFC 5227 2.1.1,
//! RFC 4862 5.4.2), and the parser of what comes back ([`parse`]).
//!
//! Frames are built with `pnet_packet`, whole, for an `AF_PACKET` socket
//! ([`super::socket`]): a frame bypasses the IP stack, so it can be sent from an address the
//! interface does not hold yet (or, for the probes, from no address at all).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use pnet_datalink::MacAddr;
use pnet_packet::arp::{ArpHardwareTypes, ArpOperations, ArpPacket, MutableArpPacket};
use pnet_packet::ethernet::{EtherTypes, EthernetPacket, MutableEthernetPacket};
use pnet_packet::icmpv6::ndp::{MutableNeighborAdvertPacket, NdpOptionTypes, NeighborAdvertFlags};
use pnet_packet::icmpv6::{Icmpv6Code, Icmpv6Packet, Icmpv6Types};
use pnet_packet::ip::IpNextHeaderProtocols;
use pnet_packet::ipv4::Ipv4Packet;
use pnet_packet::ipv6::{Ipv6Packet, MutableIpv6Packet};
use pnet_packet::Packet;

/// An Ethernet hardware address.
pub type Mac = [u8; 6];

const ETHERNET_HEADER_LEN: usize = 14;
const ARP_LEN: usize = 28;
const IPV6_HEADER_LEN: usize = 40;
/// ICMPv6 header (4) + reserved/flags (4) + target (16): an NA's or NS's fixed part.
const ND_LEN: usize = 24;
/// Type, length (in units of 8 bytes: 1) and a 6-byte MAC (RFC 4861 4.6.1).
const LLA_OPTION_LEN: usize = 8;
/// RFC 4861 7.1.1, 7.1.2: neighbour discovery messages travel with hop limit 255.
const ND_HOP_LIMIT: u8 = 255;
/// ff02::1, all nodes (RFC 4291 2.7.1).
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// VRRP's IP protocol number (RFC 5798 5.1.1.4).
const VRRP_PROTOCOL: u8 = 112;

/// The Ethernet broadcast address.
const BROADCAST: MacAddr = MacAddr(0xff, 0xff, 0xff, 0xff, 0xff, 0xff);

fn mac_addr(mac: Mac) -> MacAddr {
    let [a, b, c, d, e, f] = mac;
    MacAddr::new(a, b, c, d, e, f)
}

fn octets(mac: MacAddr) -> Mac {
    [mac.0, mac.1, mac.2, mac.3, mac.4, mac.5]
}

/// The gratuitous ARP request keepalived broadcasts for `vip` (RFC 826 packet format; RFC 5227
/// 3 announcement with sender = target protocol address).
pub fn gratuitous_arp_frame(mac: Mac, vip: Ipv4Addr) -> Vec<u8> {
    arp_request(mac, vip, BROADCAST, vip)
}

/// The ARP probe for `target` (RFC 5227 2.1.1): a broadcast request whose sender protocol
/// address is 0.0.0.0 ("so as to avoid polluting ARP caches in other hosts on the same link
/// in the case where the address turns out to be already in use by another host") and whose
/// target hardware address is zero.
pub fn arp_probe_frame(mac: Mac, target: Ipv4Addr) -> Vec<u8> {
    arp_request(mac, Ipv4Addr::UNSPECIFIED, MacAddr::zero(), target)
}

fn arp_request(mac: Mac, sender: Ipv4Addr, target_hw: MacAddr, target: Ipv4Addr) -> Vec<u8> {
    let mac = mac_addr(mac);
    let mut frame = vec![0u8; ETHERNET_HEADER_LEN + ARP_LEN];
    let (header, body) = frame.split_at_mut(ETHERNET_HEADER_LEN);
    if let Some(mut arp) = MutableArpPacket::new(body) {
        arp.set_hardware_type(ArpHardwareTypes::Ethernet);
        arp.set_protocol_type(EtherTypes::Ipv4);
        arp.set_hw_addr_len(6);
        arp.set_proto_addr_len(4);
        arp.set_operation(ArpOperations::Request);
        arp.set_sender_hw_addr(mac);
        arp.set_sender_proto_addr(sender);
        arp.set_target_hw_addr(target_hw);
        arp.set_target_proto_addr(target);
    }
    write_ethernet_header(header, BROADCAST, mac, EtherTypes::Arp);
    frame
}

/// The unsolicited neighbour advertisement for `vip` (RFC 4861 4.4, 7.2.6), from `vip` to
/// ff02::1, Override set, with the Target Link-Layer Address option.
pub fn unsolicited_na_frame(mac: Mac, vip: Ipv6Addr, router: bool) -> Vec<u8> {
    let mut flags = NeighborAdvertFlags::Override;
    if router {
        flags |= NeighborAdvertFlags::Router;
    }
    // The option: type 2, length 1 (8 bytes), the MAC (RFC 4861 4.6.1).
    let [a, b, c, d, e, f] = mac;
    let option = [NdpOptionTypes::TargetLLAddr.0, 1, a, b, c, d, e, f];
    let nd = Nd {
        kind: Icmpv6Types::NeighborAdvert.0,
        flags,
        target: vip,
        option: Some(option),
    };
    nd_frame(mac, vip, ALL_NODES, &nd)
}

/// The neighbour solicitation of duplicate address detection for `target` (RFC 4862 5.4.2):
/// from the unspecified address to the target's solicited-node multicast group, without a
/// Source Link-Layer Address option (RFC 4861 7.2.2 forbids one from ::).
pub fn dad_ns_frame(mac: Mac, target: Ipv6Addr) -> Vec<u8> {
    let nd = Nd {
        kind: Icmpv6Types::NeighborSolicit.0,
        flags: 0,
        target,
        option: None,
    };
    nd_frame(mac, Ipv6Addr::UNSPECIFIED, solicited_node(target), &nd)
}

/// The solicited-node multicast group of `address` (RFC 4291 2.7.1): ff02::1:ffXX:XXXX with
/// its low 24 bits.
pub fn solicited_node(address: Ipv6Addr) -> Ipv6Addr {
    let [.., x, y, z] = address.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(x),
        u16::from_be_bytes([y, z]),
    )
}

/// A neighbour discovery message's ICMPv6 part.
struct Nd {
    kind: u8,
    flags: u8,
    target: Ipv6Addr,
    option: Option<[u8; LLA_OPTION_LEN]>,
}

fn nd_frame(mac: Mac, source: Ipv6Addr, destination: Ipv6Addr, nd: &Nd) -> Vec<u8> {
    // RFC 2464 7: IPv6 multicast goes to 33:33 followed by the low 32 bits of the group.
    let [.., g0, g1, g2, g3] = destination.octets();
    let to = MacAddr::new(0x33, 0x33, g0, g1, g2, g3);
    let icmp_len = ND_LEN + nd.option.map_or(0, |o| o.len());
    let mut frame = vec![0u8; ETHERNET_HEADER_LEN + IPV6_HEADER_LEN + icmp_len];
    let (header, rest) = frame.split_at_mut(ETHERNET_HEADER_LEN);
    let (ip, icmp) = rest.split_at_mut(IPV6_HEADER_LEN);

    // NS and NA share the layout up to the target (RFC 4861 4.3, 4.4); an NS's flags are the
    // reserved field, zero.
    if let Some(mut m) = MutableNeighborAdvertPacket::new(icmp) {
        m.set_icmpv6_type(pnet_packet::icmpv6::Icmpv6Type(nd.kind));
        m.set_icmpv6_code(Icmpv6Code(0));
        m.set_flags(nd.flags);
        m.set_target_addr(nd.target);
    }
    if let (Some(option), Some(slot)) = (nd.option, icmp.get_mut(ND_LEN..)) {
        slot.copy_from_slice(&option);
    }
    // RFC 4443 2.3: the checksum covers the IPv6 pseudo-header.
    let checksum = Icmpv6Packet::new(icmp)
        .map(|packet| pnet_packet::icmpv6::checksum(&packet, &source, &destination))
        .unwrap_or(0);
    if let Some(mut m) = MutableNeighborAdvertPacket::new(icmp) {
        m.set_checksum(checksum);
    }

    if let Some(mut ipv6) = MutableIpv6Packet::new(ip) {
        ipv6.set_version(6);
        ipv6.set_payload_length(u16::try_from(icmp_len).unwrap_or(u16::MAX));
        ipv6.set_next_header(IpNextHeaderProtocols::Icmpv6);
        ipv6.set_hop_limit(ND_HOP_LIMIT);
        ipv6.set_source(source);
        ipv6.set_destination(destination);
    }
    write_ethernet_header(header, to, mac_addr(mac), EtherTypes::Ipv6);
    frame
}

fn write_ethernet_header(
    header: &mut [u8],
    destination: MacAddr,
    source: MacAddr,
    ethertype: pnet_packet::ethernet::EtherType,
) {
    if let Some(mut ethernet) = MutableEthernetPacket::new(header) {
        ethernet.set_destination(destination);
        ethernet.set_source(source);
        ethernet.set_ethertype(ethertype);
    }
}

/// What a received frame says about addresses on the link: all that address conflict
/// detection looks at. Everything else is [`None`] from [`parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// An ARP request or reply (RFC 826) for IPv4 over Ethernet.
    Arp {
        /// The frame's Ethernet source.
        source: Mac,
        /// Whether it is a reply.
        reply: bool,
        /// Sender hardware address.
        sender_mac: Mac,
        /// Sender protocol address (0.0.0.0 in a probe).
        sender: Ipv4Addr,
        /// Target protocol address.
        target: Ipv4Addr,
    },
    /// A neighbour advertisement (RFC 4861 4.4).
    Advert {
        /// The frame's Ethernet source.
        source: Mac,
        /// The Target Link-Layer Address option, when present.
        target_mac: Option<Mac>,
        /// The IPv6 source.
        from: Ipv6Addr,
        /// The target address.
        target: Ipv6Addr,
    },
    /// A neighbour solicitation (RFC 4861 4.3).
    Solicit {
        /// The frame's Ethernet source.
        source: Mac,
        /// The IPv6 source (:: for duplicate address detection).
        from: Ipv6Addr,
        /// The target address.
        target: Ipv6Addr,
    },
    /// A VRRP advertisement (RFC 5798 5.1): who sends for which VRID.
    Vrrp {
        /// The frame's Ethernet source.
        source: Mac,
        /// The IP source.
        from: IpAddr,
        /// The virtual router id.
        vrid: u8,
    },
}

impl Seen {
    /// The frame's Ethernet source.
    pub fn source(&self) -> Mac {
        match self {
            Seen::Arp { source, .. }
            | Seen::Advert { source, .. }
            | Seen::Solicit { source, .. }
            | Seen::Vrrp { source, .. } => *source,
        }
    }
}

/// Reads what a received Ethernet frame says; [`None`] for any other frame, and for one that is
/// short, malformed, or breaks a rule its receiver must check (RFC 4861 7.1.1, 7.1.2: hop limit
/// 255, code 0, at least 24 octets, no option of length 0). Never panics.
pub fn parse(frame: &[u8]) -> Option<Seen> {
    let ethernet = EthernetPacket::new(frame)?;
    let source = octets(ethernet.get_source());
    match ethernet.get_ethertype() {
        EtherTypes::Arp => parse_arp(source, ethernet.payload()),
        EtherTypes::Ipv6 => parse_ipv6(source, ethernet.payload()),
        EtherTypes::Ipv4 => parse_ipv4(source, ethernet.payload()),
        _ => None,
    }
}

fn parse_arp(source: Mac, body: &[u8]) -> Option<Seen> {
    let arp = ArpPacket::new(body)?;
    let ethernet_ipv4 = arp.get_hardware_type() == ArpHardwareTypes::Ethernet
        && arp.get_protocol_type() == EtherTypes::Ipv4
        && arp.get_hw_addr_len() == 6
        && arp.get_proto_addr_len() == 4;
    let reply = match arp.get_operation() {
        ArpOperations::Request => false,
        ArpOperations::Reply => true,
        _ => return None,
    };
    ethernet_ipv4.then(|| Seen::Arp {
        source,
        reply,
        sender_mac: octets(arp.get_sender_hw_addr()),
        sender: arp.get_sender_proto_addr(),
        target: arp.get_target_proto_addr(),
    })
}

fn parse_ipv4(source: Mac, body: &[u8]) -> Option<Seen> {
    let ip = Ipv4Packet::new(body)?;
    let header = usize::from(ip.get_header_length()) * 4;
    if ip.get_version() != 4 || header < 20 || ip.get_next_level_protocol().0 != VRRP_PROTOCOL {
        return None;
    }
    let vrid = *body.get(header + 1)?;
    Some(Seen::Vrrp {
        source,
        from: IpAddr::V4(ip.get_source()),
        vrid,
    })
}

fn parse_ipv6(source: Mac, body: &[u8]) -> Option<Seen> {
    let ip = Ipv6Packet::new(body)?;
    let length = usize::from(ip.get_payload_length());
    let payload = body.get(IPV6_HEADER_LEN..IPV6_HEADER_LEN + length)?;
    let from = ip.get_source();
    if ip.get_version() != 6 {
        return None;
    }
    if ip.get_next_header().0 == VRRP_PROTOCOL {
        let vrid = *payload.get(1)?;
        return Some(Seen::Vrrp {
            source,
            from: IpAddr::V6(from),
            vrid,
        });
    }
    if ip.get_next_header() != IpNextHeaderProtocols::Icmpv6 || ip.get_hop_limit() != ND_HOP_LIMIT {
        return None;
    }
    parse_nd(source, from, payload)
}

fn parse_nd(source: Mac, from: Ipv6Addr, icmp: &[u8]) -> Option<Seen> {
    let (fixed, options) = (icmp.get(..ND_LEN)?, icmp.get(ND_LEN..)?);
    if fixed.get(1) != Some(&0) {
        return None;
    }
    let target_octets: [u8; 16] = fixed.get(8..24)?.try_into().ok()?;
    let target = Ipv6Addr::from(target_octets);
    let kind = *fixed.first()?;
    if kind == Icmpv6Types::NeighborSolicit.0 {
        options_valid(options)?;
        Some(Seen::Solicit {
            source,
            from,
            target,
        })
    } else if kind == Icmpv6Types::NeighborAdvert.0 {
        let target_mac = options_valid(options)?;
        Some(Seen::Advert {
            source,
            target_mac,
            from,
            target,
        })
    } else {
        None
    }
}

/// Walks the options (RFC 4861 4.6): `None` when one has length 0 or runs past the end,
/// otherwise the Target Link-Layer Address if there is one.
#[allow(clippy::option_option)]
fn options_valid(mut options: &[u8]) -> Option<Option<Mac>> {
    let mut target_mac = None;
    while !options.is_empty() {
        let kind = *options.first()?;
        let len = usize::from(*options.get(1)?) * 8;
        if len == 0 {
            return None;
        }
        let option = options.get(..len)?;
        if kind == NdpOptionTypes::TargetLLAddr.0 && len == LLA_OPTION_LEN {
            target_mac = option.get(2..8)?.try_into().ok();
        }
        options = options.get(len..)?;
    }
    Some(target_mac)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_packet::icmpv6::ndp::NeighborAdvertPacket;

    const MAC: Mac = [0x02, 0, 0x5e, 0x10, 0x20, 0x30];

    #[test]
    fn garp_is_a_broadcast_request_for_the_vip() {
        let vip = Ipv4Addr::new(192, 0, 2, 5);
        let frame = gratuitous_arp_frame(MAC, vip);
        let ethernet = EthernetPacket::new(&frame).unwrap();
        assert_eq!(ethernet.get_destination(), BROADCAST);
        assert_eq!(
            ethernet.get_source(),
            MacAddr::new(2, 0, 0x5e, 0x10, 0x20, 0x30)
        );
        assert_eq!(ethernet.get_ethertype(), EtherTypes::Arp);
        let arp = ArpPacket::new(ethernet.payload()).unwrap();
        assert_eq!(arp.get_operation(), ArpOperations::Request);
        assert_eq!(arp.get_sender_proto_addr(), vip);
        assert_eq!(arp.get_target_proto_addr(), vip);
        assert_eq!(arp.get_sender_hw_addr(), ethernet.get_source());
        assert_eq!(frame.len(), 42);
    }

    #[test]
    fn arp_probe_comes_from_no_address() {
        let target = Ipv4Addr::new(192, 0, 2, 5);
        let frame = arp_probe_frame(MAC, target);
        let ethernet = EthernetPacket::new(&frame).unwrap();
        assert_eq!(ethernet.get_destination(), BROADCAST);
        let arp = ArpPacket::new(ethernet.payload()).unwrap();
        assert_eq!(arp.get_operation(), ArpOperations::Request);
        assert_eq!(arp.get_sender_proto_addr(), Ipv4Addr::UNSPECIFIED);
        assert_eq!(arp.get_target_hw_addr(), MacAddr::zero());
        assert_eq!(arp.get_target_proto_addr(), target);
        assert_eq!(
            parse(&frame),
            Some(Seen::Arp {
                source: MAC,
                reply: false,
                sender_mac: MAC,
                sender: Ipv4Addr::UNSPECIFIED,
                target
            })
        );
    }

    #[test]
    fn na_is_unsolicited_with_override_and_target_lla() {
        let vip: Ipv6Addr = "2001:db8::5".parse().unwrap();
        let frame = unsolicited_na_frame(MAC, vip, false);
        let ethernet = EthernetPacket::new(&frame).unwrap();
        assert_eq!(
            ethernet.get_destination(),
            MacAddr::new(0x33, 0x33, 0, 0, 0, 1)
        );
        let ip = Ipv6Packet::new(ethernet.payload()).unwrap();
        assert_eq!(ip.get_hop_limit(), 255);
        assert_eq!(ip.get_source(), vip);
        assert_eq!(ip.get_destination(), ALL_NODES);
        assert_eq!(ip.get_payload_length(), 32);
        let na = NeighborAdvertPacket::new(ip.payload()).unwrap();
        assert_eq!(na.get_flags(), NeighborAdvertFlags::Override);
        assert_eq!(na.get_target_addr(), vip);
        assert_eq!(&ip.payload()[24..], &[2, 1, 2, 0, 0x5e, 0x10, 0x20, 0x30]);
        let icmp = Icmpv6Packet::new(ip.payload()).unwrap();
        assert_eq!(
            na.get_checksum(),
            pnet_packet::icmpv6::checksum(&icmp, &vip, &ALL_NODES)
        );
        let routed = unsolicited_na_frame(MAC, vip, true);
        assert_eq!(
            routed[ETHERNET_HEADER_LEN + IPV6_HEADER_LEN + 4],
            0b1010_0000
        );
        assert_eq!(
            parse(&frame),
            Some(Seen::Advert {
                source: MAC,
                target_mac: Some(MAC),
                from: vip,
                target: vip
            })
        );
    }

    #[test]
    fn dad_ns_goes_from_unspecified_to_the_solicited_node_group() {
        let target: Ipv6Addr = "2001:db8::12:3456".parse().unwrap();
        let frame = dad_ns_frame(MAC, target);
        let ethernet = EthernetPacket::new(&frame).unwrap();
        assert_eq!(
            ethernet.get_destination(),
            MacAddr::new(0x33, 0x33, 0xff, 0x12, 0x34, 0x56)
        );
        let ip = Ipv6Packet::new(ethernet.payload()).unwrap();
        let group: Ipv6Addr = "ff02::1:ff12:3456".parse().unwrap();
        assert_eq!(ip.get_source(), Ipv6Addr::UNSPECIFIED);
        assert_eq!(ip.get_destination(), group);
        assert_eq!(ip.get_payload_length(), 24);
        let icmp = Icmpv6Packet::new(ip.payload()).unwrap();
        assert_eq!(icmp.get_icmpv6_type(), Icmpv6Types::NeighborSolicit);
        assert_eq!(
            icmp.get_checksum(),
            pnet_packet::icmpv6::checksum(&icmp, &Ipv6Addr::UNSPECIFIED, &group)
        );
        assert_eq!(
            parse(&frame),
            Some(Seen::Solicit {
                source: MAC,
                from: Ipv6Addr::UNSPECIFIED,
                target
            })
        );
    }

    #[test]
    fn malformed_nd_is_dropped() {
        let target: Ipv6Addr = "2001:db8::5".parse().unwrap();
        let mut frame = unsolicited_na_frame(MAC, target, false);
        // Hop limit below 255: RFC 4861 7.1.2 says drop.
        frame[ETHERNET_HEADER_LEN + 7] = 64;
        assert_eq!(parse(&frame), None);
        let mut frame = unsolicited_na_frame(MAC, target, false);
        // An option of length 0.
        frame[ETHERNET_HEADER_LEN + IPV6_HEADER_LEN + ND_LEN + 1] = 0;
        assert_eq!(parse(&frame), None);
        let frame = unsolicited_na_frame(MAC, target, false);
        for cut in 0..frame.len() {
            assert_eq!(parse(&frame[..cut]), None, "cut at {cut}");
        }
    }
}

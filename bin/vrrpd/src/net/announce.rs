//! Telling the link that a VIP has moved: gratuitous ARP for IPv4, unsolicited neighbour
//! advertisements for IPv6 (RFC 5798 6.4.2 and 6.4.3: "for each IPv4 address associated with
//! the virtual router, broadcast a gratuitous ARP request"; "for each IPv6 address ... send an
//! Unsolicited ND Neighbor Advertisement with the Router Flag (R) set to 1, Override flag (O)
//! set to 1").
//!
//! Both are whole Ethernet frames built here (with `pnet_packet`) and sent through an
//! `AF_PACKET` socket, byte for byte what keepalived sends:
//!
//! - ARP: a broadcast request whose sender and target protocol addresses are both the VIP,
//!   sender hardware address the interface's MAC, target hardware address the broadcast
//!   address (RFC 5227 3 calls this an ARP announcement; an ARP *request* updates the most
//!   caches).
//! - NA: from the VIP to ff02::1 (all nodes), hop limit 255 (RFC 4861 7.1.2: receivers drop
//!   others), Override set, Solicited clear, Router set when asked, and the Target Link-Layer
//!   Address option with the interface's MAC (RFC 4861 7.2.6, 4.6.1). Sending from the VIP
//!   itself works even while the address is tentative, because the frame bypasses the IPv6
//!   stack.
//!
//! A socket is opened for each burst and closed after it: an `AF_PACKET` socket receives every
//! frame of its interface while it is open, and nobody would read them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use pnet_datalink::{Channel, Config, DataLinkSender, MacAddr, NetworkInterface};
use pnet_packet::arp::{ArpHardwareTypes, ArpOperations, MutableArpPacket};
use pnet_packet::ethernet::{EtherTypes, MutableEthernetPacket};
use pnet_packet::icmpv6::ndp::{MutableNeighborAdvertPacket, NdpOptionTypes, NeighborAdvertFlags};
use pnet_packet::icmpv6::{Icmpv6Code, Icmpv6Packet, Icmpv6Types};
use pnet_packet::ip::IpNextHeaderProtocols;
use pnet_packet::ipv6::MutableIpv6Packet;

use super::address::Interface;
use super::error::Error;

const ETHERNET_HEADER_LEN: usize = 14;
const ARP_LEN: usize = 28;
const IPV6_HEADER_LEN: usize = 40;
/// ICMPv6 header (4) + reserved/flags (4) + target (16).
const NA_LEN: usize = 24;
/// Type, length (in units of 8 bytes: 1) and a 6-byte MAC (RFC 4861 4.6.1).
const TARGET_LLA_OPTION_LEN: usize = 8;
/// RFC 4861 7.1.2 / 7.2.6: neighbour discovery messages travel with hop limit 255.
const ND_HOP_LIMIT: u8 = 255;
/// ff02::1, all nodes (RFC 4291 2.7.1).
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// How long a send may wait for room in the interface's queue before it is reported.
const SEND_TIMEOUT: Duration = Duration::from_millis(200);

/// The Ethernet broadcast address.
const BROADCAST: MacAddr = MacAddr(0xff, 0xff, 0xff, 0xff, 0xff, 0xff);

/// Sends gratuitous ARPs and unsolicited NAs on one interface.
#[derive(Debug, Clone)]
pub struct Announcer {
    interface: NetworkInterface,
    mac: [u8; 6],
    router: bool,
}

impl Announcer {
    /// An announcer for `interface`, which must have an Ethernet MAC. The NA's Router flag is
    /// clear until [`Announcer::router_flag`] sets it.
    pub fn new(interface: &Interface) -> Result<Self, Error> {
        let mac = interface.mac.ok_or_else(|| Error::NoMac {
            interface: interface.name.clone(),
        })?;
        let [a, b, c, d, e, f] = mac;
        let interface = NetworkInterface {
            name: interface.name.clone(),
            description: String::new(),
            index: interface.index,
            mac: Some(MacAddr::new(a, b, c, d, e, f)),
            ips: Vec::new(),
            flags: 0,
        };
        Ok(Announcer {
            interface,
            mac,
            router: false,
        })
    }

    /// Sets or clears the Router flag of the NAs. RFC 5798 6.4.2 says set; keepalived sets it
    /// only when the interface forwards IPv6 ([`ipv6_forwarding`]), because a host that
    /// advertises R without routing makes its neighbours use it as a router (RFC 4861 7.2.5).
    pub fn router_flag(mut self, router: bool) -> Self {
        self.router = router;
        self
    }

    /// The interface name.
    pub fn interface(&self) -> &str {
        &self.interface.name
    }

    /// Sends one gratuitous ARP or unsolicited NA for each address, in one burst.
    pub fn announce(&self, vips: &[IpAddr]) -> Result<(), Error> {
        if vips.is_empty() {
            return Ok(());
        }
        let mut sender = self.open()?;
        for vip in vips {
            let (frame, what) = match vip {
                IpAddr::V4(v4) => (gratuitous_arp_frame(self.mac, *v4), "gratuitous ARP"),
                IpAddr::V6(v6) => (
                    unsolicited_na_frame(self.mac, *v6, self.router),
                    "unsolicited NA",
                ),
            };
            let result = sender
                .send_to(&frame, None)
                .unwrap_or_else(|| Err(std::io::Error::other("frame larger than the buffer")));
            result.map_err(Error::io(
                &self.interface.name,
                format!("send {what} for {vip}"),
            ))?;
        }
        tracing::debug!(interface = %self.interface.name, ?vips, "announced");
        Ok(())
    }

    /// Sends one gratuitous ARP for `vip`.
    pub fn gratuitous_arp(&self, vip: Ipv4Addr) -> Result<(), Error> {
        self.announce(&[IpAddr::V4(vip)])
    }

    /// Sends one unsolicited neighbour advertisement for `vip`.
    pub fn unsolicited_na(&self, vip: Ipv6Addr) -> Result<(), Error> {
        self.announce(&[IpAddr::V6(vip)])
    }

    fn open(&self) -> Result<Box<dyn DataLinkSender>, Error> {
        let config = Config {
            promiscuous: false,
            write_timeout: Some(SEND_TIMEOUT),
            ..Config::default()
        };
        let operation = "open AF_PACKET socket (needs CAP_NET_RAW)";
        match pnet_datalink::channel(&self.interface, config) {
            Ok(Channel::Ethernet(sender, _receiver)) => Ok(sender),
            Ok(_) => Err(Error::io(&self.interface.name, operation)(
                std::io::Error::other("not an Ethernet channel"),
            )),
            Err(e) => Err(Error::io(&self.interface.name, operation)(e)),
        }
    }
}

/// Whether `interface` forwards IPv6 (`net.ipv6.conf.<interface>.forwarding`), read from
/// /proc/sys in the caller's network namespace: keepalived's rule for the NA Router flag.
pub fn ipv6_forwarding(interface: &str) -> Result<bool, Error> {
    let path = format!("/proc/sys/net/ipv6/conf/{interface}/forwarding");
    let text =
        std::fs::read_to_string(&path).map_err(Error::io(interface, format!("read {path}")))?;
    Ok(text.trim() != "0")
}

/// The gratuitous ARP request keepalived broadcasts for `vip` (RFC 826 packet format; RFC 5227
/// 3 announcement with sender = target protocol address).
pub fn gratuitous_arp_frame(mac: [u8; 6], vip: Ipv4Addr) -> Vec<u8> {
    let [a, b, c, d, e, f] = mac;
    let mac = MacAddr::new(a, b, c, d, e, f);
    let mut frame = vec![0u8; ETHERNET_HEADER_LEN + ARP_LEN];
    let (header, body) = frame.split_at_mut(ETHERNET_HEADER_LEN);
    if let Some(mut arp) = MutableArpPacket::new(body) {
        arp.set_hardware_type(ArpHardwareTypes::Ethernet);
        arp.set_protocol_type(EtherTypes::Ipv4);
        arp.set_hw_addr_len(6);
        arp.set_proto_addr_len(4);
        arp.set_operation(ArpOperations::Request);
        arp.set_sender_hw_addr(mac);
        arp.set_sender_proto_addr(vip);
        arp.set_target_hw_addr(BROADCAST);
        arp.set_target_proto_addr(vip);
    }
    write_ethernet_header(header, BROADCAST, mac, EtherTypes::Arp);
    frame
}

/// The unsolicited neighbour advertisement for `vip` (RFC 4861 4.4, 7.2.6), from `vip` to
/// ff02::1, Override set, with the Target Link-Layer Address option.
pub fn unsolicited_na_frame(mac: [u8; 6], vip: Ipv6Addr, router: bool) -> Vec<u8> {
    let [a, b, c, d, e, f] = mac;
    let source = MacAddr::new(a, b, c, d, e, f);
    // RFC 2464 7: IPv6 multicast goes to 33:33 followed by the low 32 bits of the group.
    let [.., g0, g1, g2, g3] = ALL_NODES.octets();
    let destination = MacAddr::new(0x33, 0x33, g0, g1, g2, g3);
    let icmp_len = NA_LEN + TARGET_LLA_OPTION_LEN;
    let mut frame = vec![0u8; ETHERNET_HEADER_LEN + IPV6_HEADER_LEN + icmp_len];
    let (header, rest) = frame.split_at_mut(ETHERNET_HEADER_LEN);
    let (ip, icmp) = rest.split_at_mut(IPV6_HEADER_LEN);

    if let Some(mut na) = MutableNeighborAdvertPacket::new(icmp) {
        na.set_icmpv6_type(Icmpv6Types::NeighborAdvert);
        na.set_icmpv6_code(Icmpv6Code(0));
        let mut flags = NeighborAdvertFlags::Override;
        if router {
            flags |= NeighborAdvertFlags::Router;
        }
        na.set_flags(flags);
        na.set_target_addr(vip);
    }
    // The option by hand: type 2, length 1 (8 bytes), the MAC (RFC 4861 4.6.1).
    if let Some(option) = icmp.get_mut(NA_LEN..) {
        option.copy_from_slice(&[2, 1, a, b, c, d, e, f]);
        debug_assert_eq!(option.first(), Some(&NdpOptionTypes::TargetLLAddr.0));
    }
    // RFC 4443 2.3: the checksum covers the IPv6 pseudo-header.
    let checksum = Icmpv6Packet::new(icmp)
        .map(|packet| pnet_packet::icmpv6::checksum(&packet, &vip, &ALL_NODES))
        .unwrap_or(0);
    if let Some(mut na) = MutableNeighborAdvertPacket::new(icmp) {
        na.set_checksum(checksum);
    }

    if let Some(mut ipv6) = MutableIpv6Packet::new(ip) {
        ipv6.set_version(6);
        ipv6.set_payload_length(u16::try_from(icmp_len).unwrap_or(u16::MAX));
        ipv6.set_next_header(IpNextHeaderProtocols::Icmpv6);
        ipv6.set_hop_limit(ND_HOP_LIMIT);
        ipv6.set_source(vip);
        ipv6.set_destination(ALL_NODES);
    }
    write_ethernet_header(header, destination, source, EtherTypes::Ipv6);
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

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_packet::arp::ArpPacket;
    use pnet_packet::ethernet::EthernetPacket;
    use pnet_packet::icmpv6::ndp::NeighborAdvertPacket;
    use pnet_packet::ipv6::Ipv6Packet;
    use pnet_packet::Packet;

    const MAC: [u8; 6] = [0x02, 0, 0x5e, 0x10, 0x20, 0x30];

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
    }
}

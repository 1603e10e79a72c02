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
//! One send-only `AF_PACKET` socket per interface, shared by every announcer on it and opened
//! with protocol 0, so that it receives nothing (a socket for `ETH_P_ALL` would be handed a
//! copy of every frame of the link, and nobody would read them). 1,000 instances on one
//! interface hold one descriptor for their announcements, not one each, and a takeover of all
//! of them opens nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pnet_datalink::MacAddr;
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
    name: String,
    index: u32,
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
        Ok(Announcer {
            name: interface.name.clone(),
            index: interface.index,
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
        &self.name
    }

    /// Sends one gratuitous ARP or unsolicited NA for each address, in one burst.
    pub fn announce(&self, vips: &[IpAddr]) -> Result<(), Error> {
        if vips.is_empty() {
            return Ok(());
        }
        let sender = PacketSender::shared(self.index, &self.name)?;
        for vip in vips {
            let (frame, what) = match vip {
                IpAddr::V4(v4) => (gratuitous_arp_frame(self.mac, *v4), "gratuitous ARP"),
                IpAddr::V6(v6) => (
                    unsolicited_na_frame(self.mac, *v6, self.router),
                    "unsolicited NA",
                ),
            };
            sender
                .send(&frame)
                .map_err(Error::io(&self.name, format!("send {what} for {vip}")))?;
        }
        tracing::debug!(interface = %self.name, ?vips, "announced");
        Ok(())
    }

    /// `repeat` rounds of one message per address, pausing `pause(address)` after each
    /// (keepalived's `vrrp_garp_interval` and `vrrp_gna_interval`); stops at the first failure,
    /// which it returns.
    pub async fn paced(
        &self,
        addresses: &[IpAddr],
        repeat: u32,
        pause: impl Fn(&IpAddr) -> std::time::Duration,
    ) -> Result<(), Error> {
        for _ in 0..repeat {
            for address in addresses {
                self.announce(std::slice::from_ref(address))?;
                let pause = pause(address);
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
        }
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
}

/// A send-only `AF_PACKET` socket bound to one interface (see the [module docs](self)).
#[derive(Debug)]
struct PacketSender {
    fd: OwnedFd,
    index: u32,
}

/// The open senders by network namespace (its inode) and interface index, one per interface:
/// a takeover does not reopen them.
static SENDERS: Mutex<Vec<(SenderKey, Arc<PacketSender>)>> = Mutex::new(Vec::new());

/// A network namespace's inode and an interface index in it.
type SenderKey = (u64, u32);

impl PacketSender {
    /// The sender of interface `index` in the caller's network namespace, opened on first use
    /// and kept.
    fn shared(index: u32, name: &str) -> Result<Arc<PacketSender>, Error> {
        use std::os::unix::fs::MetadataExt;
        let netns = std::fs::metadata("/proc/thread-self/ns/net").map_or(0, |m| m.ino());
        let key = (netns, index);
        let mut senders = SENDERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, s)) = senders.iter().find(|(k, _)| *k == key) {
            return Ok(Arc::clone(s));
        }
        let fd = open_packet_socket(index)
            .map_err(Error::io(name, "open AF_PACKET socket (needs CAP_NET_RAW)"))?;
        let s = Arc::new(PacketSender { fd, index });
        senders.push((key, Arc::clone(&s)));
        Ok(s)
    }

    fn send(&self, frame: &[u8]) -> std::io::Result<()> {
        send_frame(self.fd.as_raw_fd(), self.index, frame)
    }
}

/// `socket(AF_PACKET, SOCK_RAW, 0)` bound to interface `index`: it sends whole Ethernet frames
/// there and, with protocol 0, receives none.
#[allow(unsafe_code)]
fn open_packet_socket(index: u32) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: socket(2) with constant arguments; a non-negative result is a new descriptor
    // that nothing else owns, handed to OwnedFd at once.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a valid descriptor returned above and owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let timeout = libc::timeval {
        tv_sec: 0,
        tv_usec: libc::suseconds_t::try_from(SEND_TIMEOUT.as_micros()).unwrap_or(200_000),
    };
    // SAFETY: SO_SNDTIMEO takes a timeval; the pointer and length describe `timeout`.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            std::ptr::from_ref(&timeout).cast(),
            socklen_of::<libc::timeval>(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let address = link_address(index, [0; 6]);
    // SAFETY: bind(2) with a sockaddr_ll and its length.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::from_ref(&address).cast(),
            socklen_of::<libc::sockaddr_ll>(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Sends one whole Ethernet frame out of interface `index`.
#[allow(unsafe_code)]
fn send_frame(fd: i32, index: u32, frame: &[u8]) -> std::io::Result<()> {
    let mut destination = [0u8; 6];
    if let Some(d) = frame.get(..6) {
        destination.copy_from_slice(d);
    }
    let address = link_address(index, destination);
    // SAFETY: sendto(2) with a buffer and its length, and a sockaddr_ll and its length.
    let sent = unsafe {
        libc::sendto(
            fd,
            frame.as_ptr().cast(),
            frame.len(),
            0,
            std::ptr::from_ref(&address).cast(),
            socklen_of::<libc::sockaddr_ll>(),
        )
    };
    match usize::try_from(sent) {
        Ok(n) if n == frame.len() => Ok(()),
        Ok(n) => Err(std::io::Error::other(format!(
            "sent {n} of {} bytes",
            frame.len()
        ))),
        Err(_) => Err(std::io::Error::last_os_error()),
    }
}

fn link_address(index: u32, destination: [u8; 6]) -> libc::sockaddr_ll {
    let mut addr = [0u8; 8];
    addr[..6].copy_from_slice(&destination);
    libc::sockaddr_ll {
        sll_family: u16::try_from(libc::AF_PACKET).unwrap_or(17),
        // Protocol 0: this socket receives nothing (the frames carry their own EtherType).
        sll_protocol: 0,
        sll_ifindex: i32::try_from(index).unwrap_or(0),
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 6,
        sll_addr: addr,
    }
}

fn socklen_of<T>() -> libc::socklen_t {
    libc::socklen_t::try_from(std::mem::size_of::<T>()).unwrap_or(0)
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

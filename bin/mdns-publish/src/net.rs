//! mDNS sockets and the interface that holds the bind address.

use std::io::IoSliceMut;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::os::fd::{AsRawFd, RawFd};

use ipnetwork::IpNetwork;
use nix::sys::socket::{
    recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use crate::link::{Arrival, Link, PORT};

/// The IPv4 mDNS group.
pub const GROUP_V4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 251);
/// The IPv6 mDNS group.
pub const GROUP_V6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0xfb);

/// What went wrong with an interface or a socket.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The interfaces could not be listed.
    #[error("getifaddrs: {0}")]
    Interfaces(nix::Error),
    /// No interface holds the bind address.
    #[error("no interface holds {0}")]
    NoInterface(IpAddr),
    /// The interface has no index (it went away).
    #[error("{name}: {why}")]
    Index {
        /// The interface.
        name: String,
        /// Why.
        why: nix::Error,
    },
    /// An mDNS socket could not be set up on the interface.
    #[error("{name}: mDNS socket: {why}")]
    Mdns {
        /// The interface.
        name: String,
        /// Why.
        why: std::io::Error,
    },
    /// A socket for one-shot queries could not be set up.
    #[error("query socket: {0}")]
    Query(std::io::Error),
    /// The netlink socket watching links and addresses could not be set up.
    #[error("netlink: {0}")]
    Netlink(nix::Error),
    /// The netlink socket could not be registered with the runtime.
    #[error("netlink: {0}")]
    Register(std::io::Error),
}

/// An interface: its name, index and the addresses worth publishing (no loopback, no
/// IPv6 link-local), the bind address first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Its name (`eth0`).
    pub name: String,
    /// Its index.
    pub index: u32,
    /// Its addresses.
    pub addresses: Vec<IpAddr>,
    /// Up and running.
    pub up: bool,
    /// The link it is on: its addresses' prefixes.
    pub link: Link,
}

/// The interface that holds `bind`, or the one called `name` when given.
pub fn interface(bind: IpAddr, name: Option<&str>) -> Result<Interface, NetError> {
    use nix::net::if_::InterfaceFlags;
    let all: Vec<_> = nix::ifaddrs::getifaddrs()
        .map_err(NetError::Interfaces)?
        .collect();
    let owner = match name {
        Some(n) => n.to_string(),
        None => all
            .iter()
            .find(|i| ip_of(i) == Some(bind))
            .map(|i| i.interface_name.clone())
            .ok_or(NetError::NoInterface(bind))?,
    };
    let mut addresses = vec![];
    let mut up = false;
    let mine = || all.iter().filter(|i| i.interface_name == owner);
    for i in mine() {
        up |= i.flags.contains(InterfaceFlags::IFF_UP)
            && i.flags.contains(InterfaceFlags::IFF_RUNNING);
        if let Some(a) = ip_of(i) {
            let link_local = matches!(a, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80);
            if !a.is_loopback() && !link_local && !addresses.contains(&a) {
                addresses.push(a);
            }
        }
    }
    addresses.sort_by_key(|a| *a != bind);
    let index = nix::net::if_::if_nametoindex(owner.as_str()).map_err(|why| NetError::Index {
        name: owner.clone(),
        why,
    })?;
    let link = Link::new(mine().filter_map(prefix_of).collect());
    Ok(Interface {
        name: owner,
        index,
        addresses,
        up,
        link,
    })
}

/// The link of every interface but loopback: what a browse without `--bind` listens to.
pub fn every_link() -> Result<Link, NetError> {
    let all = nix::ifaddrs::getifaddrs().map_err(NetError::Interfaces)?;
    let prefixes = all
        .filter_map(|i| prefix_of(&i))
        .filter(|p| !p.ip().is_loopback());
    Ok(Link::new(prefixes.collect()))
}

/// An interface address with its netmask, as a prefix.
fn prefix_of(i: &nix::ifaddrs::InterfaceAddress) -> Option<IpNetwork> {
    let mask = i.netmask.as_ref()?;
    let mask = match (mask.as_sockaddr_in(), mask.as_sockaddr_in6()) {
        (Some(m), _) => IpAddr::V4(m.ip()),
        (_, Some(m)) => IpAddr::V6(m.ip()),
        _ => return None,
    };
    IpNetwork::with_netmask(ip_of(i)?, mask).ok()
}

fn ip_of(i: &nix::ifaddrs::InterfaceAddress) -> Option<IpAddr> {
    let a = i.address.as_ref()?;
    if let Some(v4) = a.as_sockaddr_in() {
        return Some(IpAddr::V4(v4.ip()));
    }
    a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
}

/// The mDNS sockets of one interface: port 5353, both groups joined where the interface has
/// an address of the family, TTL / hop limit 255.
pub fn mdns_sockets(iface: &Interface) -> Result<(Option<UdpSocket>, Option<UdpSocket>), NetError> {
    sockets_at(iface, false)
}

/// Sockets like [`mdns_sockets`] but bound to the groups themselves, for `browse --watch`: they
/// hear what is multicast on the link and send from port 5353 (so that answers to them are
/// multicast), and no unicast sent to port 5353 (a legacy query for the node's publisher) is
/// given to them instead of the publisher's socket.
pub fn group_sockets(
    iface: &Interface,
) -> Result<(Option<UdpSocket>, Option<UdpSocket>), NetError> {
    sockets_at(iface, true)
}

fn sockets_at(
    iface: &Interface,
    on_group: bool,
) -> Result<(Option<UdpSocket>, Option<UdpSocket>), NetError> {
    let v4 = iface.addresses.iter().find_map(|a| match a {
        IpAddr::V4(v4) => Some(*v4),
        IpAddr::V6(_) => None,
    });
    let has_v6 = iface.addresses.iter().any(IpAddr::is_ipv6);
    let at = |why: std::io::Error| NetError::Mdns {
        name: iface.name.clone(),
        why,
    };
    let s4 = match v4 {
        None => None,
        Some(local) => {
            let s = socket(Domain::IPV4).map_err(at)?;
            let address = if on_group {
                GROUP_V4
            } else {
                Ipv4Addr::UNSPECIFIED
            };
            s.bind(&SocketAddr::from((address, PORT)).into())
                .map_err(at)?;
            s.join_multicast_v4(&GROUP_V4, &local).map_err(at)?;
            s.set_multicast_if_v4(&local).map_err(at)?;
            s.set_multicast_ttl_v4(255).map_err(at)?;
            s.set_ttl_v4(255).map_err(at)?;
            Some(UdpSocket::from_std(s.into()).map_err(at)?)
        }
    };
    let s6 = if has_v6 {
        let s = socket(Domain::IPV6).map_err(at)?;
        s.set_only_v6(true).map_err(at)?;
        let address = if on_group {
            SocketAddr::V6(SocketAddrV6::new(GROUP_V6, PORT, 0, iface.index))
        } else {
            SocketAddr::from((Ipv6Addr::UNSPECIFIED, PORT))
        };
        s.bind(&address.into()).map_err(at)?;
        s.join_multicast_v6(&GROUP_V6, iface.index).map_err(at)?;
        s.set_multicast_if_v6(iface.index).map_err(at)?;
        s.set_multicast_hops_v6(255).map_err(at)?;
        s.set_unicast_hops_v6(255).map_err(at)?;
        Some(UdpSocket::from_std(s.into()).map_err(at)?)
    } else {
        None
    };
    Ok((s4, s6))
}

/// Receive buffers big enough for a burst of answers (a browse of hundreds of instances
/// brings dozens of datagrams at once); the kernel caps it at net.core.rmem_max.
const RECV_BUFFER: usize = 1 << 20;

fn socket(domain: Domain) -> std::io::Result<Socket> {
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    let _ = s.set_recv_buffer_size(RECV_BUFFER);
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    tell_arrival(&s, domain)?;
    Ok(s)
}

/// Asks the kernel to say, with each datagram, its destination address and IP TTL / hop limit
/// (what [`recv`] reads, and [`Link`] checks).
fn tell_arrival(s: &Socket, domain: Domain) -> std::io::Result<()> {
    if domain == Domain::IPV6 {
        setsockopt(s, sockopt::Ipv6RecvPacketInfo, &true)?;
        setsockopt(s, sockopt::Ipv6RecvHopLimit, &true)?;
    } else {
        setsockopt(s, sockopt::Ipv4PacketInfo, &true)?;
        setsockopt(s, sockopt::Ipv4RecvTtl, &true)?;
    }
    Ok(())
}

/// Waits for a datagram on `socket`: its length in `buf` and how it arrived. A datagram cut to
/// the buffer is an error (`InvalidData`): a part of a DNS message is not read.
pub async fn recv(socket: &UdpSocket, buf: &mut [u8]) -> std::io::Result<(usize, Arrival)> {
    let fd = socket.as_raw_fd();
    socket
        .async_io(Interest::READABLE, || recv_now(fd, buf))
        .await
}

/// [`recv`] on a socket that may be missing (a family the interface has no address of): then
/// it never returns.
pub async fn recv_on(
    socket: Option<&UdpSocket>,
    buf: &mut [u8],
) -> std::io::Result<(usize, Arrival)> {
    match socket {
        Some(s) => recv(s, buf).await,
        None => std::future::pending().await,
    }
}

fn recv_now(fd: RawFd, buf: &mut [u8]) -> std::io::Result<(usize, Arrival)> {
    let mut iov = [IoSliceMut::new(buf)];
    let mut control = nix::cmsg_space!(libc::in6_pktinfo, libc::in_pktinfo, libc::c_int);
    let m = recvmsg::<SockaddrStorage>(fd, &mut iov, Some(&mut control), MsgFlags::empty())?;
    if m.flags.contains(MsgFlags::MSG_TRUNC) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a datagram longer than the receive buffer",
        ));
    }
    let from = m.address.as_ref().and_then(|a| {
        let v4 = a
            .as_sockaddr_in()
            .map(|s| SocketAddr::from((s.ip(), s.port())));
        v4.or_else(|| (a.as_sockaddr_in6()).map(|s| SocketAddr::from((s.ip(), s.port()))))
    });
    let Some(from) = from else {
        return Err(std::io::Error::other("a datagram without a source address"));
    };
    let mut arrival = Arrival {
        from,
        to: None,
        ttl: None,
    };
    for cmsg in m.cmsgs()? {
        match cmsg {
            ControlMessageOwned::Ipv4PacketInfo(i) => {
                arrival.to = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(i.ipi_addr.s_addr))));
            }
            ControlMessageOwned::Ipv6PacketInfo(i) => {
                arrival.to = Some(IpAddr::V6(Ipv6Addr::from(i.ipi6_addr.s6_addr)));
            }
            ControlMessageOwned::Ipv4Ttl(t) | ControlMessageOwned::Ipv6HopLimit(t) => {
                arrival.ttl = u8::try_from(t).ok();
            }
            _ => {}
        }
    }
    Ok((m.bytes, arrival))
}

/// A socket on an ephemeral port for one-shot queries (answers come straight back to it),
/// sending its multicast out of `iface`.
pub fn query_socket(iface: Option<&Interface>, v6: bool) -> Result<UdpSocket, NetError> {
    let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
    let at = NetError::Query;
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP)).map_err(at)?;
    let _ = s.set_recv_buffer_size(RECV_BUFFER);
    s.set_nonblocking(true).map_err(at)?;
    tell_arrival(&s, domain).map_err(at)?;
    if v6 {
        s.set_only_v6(true).map_err(at)?;
        s.bind(&SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)).into())
            .map_err(at)?;
        if let Some(i) = iface {
            s.set_multicast_if_v6(i.index).map_err(at)?;
        }
    } else {
        s.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)).into())
            .map_err(at)?;
        if let Some(IpAddr::V4(a)) = iface.and_then(|i| i.addresses.iter().find(|a| a.is_ipv4())) {
            s.set_multicast_if_v4(a).map_err(at)?;
        }
    }
    UdpSocket::from_std(s.into()).map_err(at)
}

/// Where multicast goes for a family.
pub fn group(v6: bool, index: u32) -> SocketAddr {
    if v6 {
        SocketAddr::V6(SocketAddrV6::new(GROUP_V6, PORT, 0, index))
    } else {
        SocketAddr::from((GROUP_V4, PORT))
    }
}

/// A route netlink socket subscribed to link and address changes: it becomes readable when an
/// interface goes up or down or an address comes or goes (no polling while nothing happens).
pub fn link_watch() -> Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>, NetError> {
    use nix::sys::socket::{
        bind, socket, AddressFamily, NetlinkAddr, SockFlag, SockProtocol, SockType,
    };
    use std::os::fd::AsRawFd;
    let at = NetError::Netlink;
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .map_err(at)?;
    let groups = (libc::RTMGRP_LINK | libc::RTMGRP_IPV4_IFADDR | libc::RTMGRP_IPV6_IFADDR) as u32;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, groups)).map_err(at)?;
    // AsyncFd::new is deprecated because it cannot know that nobody else closes the
    // descriptor while it is registered; here it owns the only handle (an OwnedFd), and its
    // replacement, AsyncFd::register, is unsafe, which this workspace does not allow.
    #[allow(deprecated)]
    let watch = tokio::io::unix::AsyncFd::new(fd);
    watch.map_err(NetError::Register)
}

/// Waits until the watch says something changed, and reads what it said.
pub async fn link_changed(watch: &tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>) {
    use std::os::fd::AsRawFd;
    let Ok(mut guard) = watch.readable().await else {
        return std::future::pending().await;
    };
    let mut buf = [0u8; 8192];
    while nix::sys::socket::recv(
        watch.get_ref().as_raw_fd(),
        &mut buf,
        nix::sys::socket::MsgFlags::empty(),
    )
    .is_ok_and(|n| n > 0)
    {}
    guard.clear_ready();
}

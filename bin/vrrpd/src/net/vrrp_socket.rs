//! Raw sockets for IP protocol 112, one per address family and interface.
//!
//! One socket both sends and receives. It is bound to its interface (`SO_BINDTODEVICE`), so it
//! only sees datagrams that arrived there, and it is *not* bound to an address: a raw IPv4
//! socket bound to an address only receives datagrams addressed to it, which would shut out the
//! multicast group. The source address is chosen per send instead, with an `IP_PKTINFO` /
//! `IPV6_PKTINFO` control message carrying the source and the interface index.
//!
//! What the kernel is asked for, and why:
//!
//! - TTL / hop limit 255 for unicast and multicast: receivers discard anything else
//!   (RFC 3768 5.2.3 and 7.1, RFC 5798 5.1.1.3, 5.1.2.3 and 7.1), which proves the sender is on
//!   the link.
//! - Multicast loop off: our own advertisements must not come back to us as if from a peer.
//! - `IP_MULTICAST_ALL` / `IPV6_MULTICAST_ALL` off: only groups this socket joined are
//!   delivered, not every group some other socket on the host joined.
//! - Membership of 224.0.0.18 / ff02::12 on the interface (RFC 5798 5.1.1.2, 5.1.2.2), unless
//!   the socket is for unicast peers only.
//! - IPv4 receives the IP header with the payload (raw IPv4 sockets always do); IPv6 never
//!   does, so `IPV6_RECVPKTINFO` and `IPV6_RECVHOPLIMIT` deliver the destination and the hop
//!   limit as control messages and [`Received`] looks the same for both families.
//! - IPv6: `IPV6_CHECKSUM` at offset 6. RFC 5798 5.2.8 puts the IPv6 pseudo-header in the VRRP
//!   checksum; with this option the kernel fills the checksum in on send (from the source
//!   address it really used) and drops datagrams whose checksum is wrong on receive, as
//!   keepalived has it do. A bad IPv6 checksum is therefore never seen here.
//! - A receive buffer (`SO_RCVBUF`, forced past `net.core.rmem_max` where the process may) for
//!   a burst of [`BURST`] adverts: 1,000 instances whose masters advertise in the same
//!   millisecond must not overflow the default ~200 datagrams' worth and lose adverts, which a
//!   backup would take for a dead master.
//!
//! - keepalived's `auth_type AH` (VRRPv2 over IPv4 only): a socket of IP protocol 51 of its
//!   own, with `IP_HDRINCL`, because the AH header's ICV covers the IP header: the datagram is
//!   built whole ([`vrrp::ah::seal`]) with an identification of the sender's choosing (the
//!   kernel would fill in a zero after the ICV was computed); the kernel still fills in the
//!   header checksum, which the ICV leaves out.
//!
//! Receiving allocates nothing but the message itself: one 64 KiB buffer per socket is reused.

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::os::fd::AsRawFd;

use ipi_core::vrrp::ah::{self, Covered, Seal};
use ipi_core::vrrp::{self, ChecksumMode, Datagram, Packet, RawDatagram, Repr};
use ipi_core::Family;
use nix::sys::socket::{
    recvmsg, sendmsg, setsockopt, sockopt, ControlMessage, ControlMessageOwned, MsgFlags,
    SockaddrIn, SockaddrIn6,
};
use nix::{setsockopt_impl, sockopt_impl};
use socket2::{Domain, InterfaceIndexOrAddress, Protocol, Socket, Type};
use tokio::io::unix::AsyncFd;

use super::address::{Interface, Netlink};
use super::error::Error;

/// The IPv4 multicast group of VRRP (RFC 5798 5.1.1.2, RFC 3768 5.2.2).
pub const IPV4_GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);

/// The IPv6 multicast group of VRRP (RFC 5798 5.1.2.2), link scope.
pub const IPV6_GROUP: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12);

/// The VRRP multicast group of a family.
pub const fn multicast_group(family: Family) -> IpAddr {
    match family {
        Family::V4 => IpAddr::V4(IPV4_GROUP),
        Family::V6 => IpAddr::V6(IPV6_GROUP),
    }
}

/// The largest IP datagram (and IPv6 payload without jumbograms): a receive buffer this large
/// never truncates.
const RECV_BUFFER: usize = 65_536;

/// How many adverts arriving at once the receive buffer holds (1,000 instances and room).
pub const BURST: usize = 2_048;

/// What the kernel charges a small datagram against the receive buffer (its `truesize`: the
/// data, the headers and the socket buffer's own overhead), with room for IPv6.
const DATAGRAM_TRUESIZE: usize = 1_280;

/// Offset of the checksum in a VRRP message (RFC 5798 5.2.8, RFC 3768 5.3.8).
const VRRP_CHECKSUM_OFFSET: i32 = 6;

sockopt_impl!(
    /// `IPV6_CHECKSUM` (RFC 3542 3.1): the kernel computes and verifies the checksum at this
    /// offset of a raw IPv6 socket's payload, over the IPv6 pseudo-header.
    Ipv6Checksum,
    SetOnly,
    libc::IPPROTO_IPV6,
    libc::IPV6_CHECKSUM,
    i32
);

/// What a [`VrrpSocket`] is opened for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketConfig {
    /// The interface (keepalived's `interface`).
    pub interface: String,
    /// IPv4 (VRRPv2 or v3) or IPv6 (VRRPv3).
    pub family: Family,
    /// The source address of advertisements (keepalived's `unicast_src_ip`). `None`: the
    /// interface's primary IPv4 address, or its IPv6 link-local address (RFC 5798 5.1.1.1,
    /// 5.1.2.1), looked up when the socket is opened.
    pub source: Option<IpAddr>,
    /// Join the VRRP multicast group. Off for a socket that only talks to unicast peers.
    pub multicast: bool,
    /// keepalived's `auth_type AH`: IP protocol 51, datagrams built whole (IPv4 only).
    pub ah: bool,
}

impl SocketConfig {
    /// Multicast mode from the interface's default source address.
    pub fn multicast(interface: impl Into<String>, family: Family) -> Self {
        SocketConfig {
            interface: interface.into(),
            family,
            source: None,
            multicast: true,
            ah: false,
        }
    }

    /// Unicast mode (keepalived's `unicast_peer`) from `source` (`unicast_src_ip`).
    pub fn unicast(interface: impl Into<String>, source: IpAddr) -> Self {
        SocketConfig {
            interface: interface.into(),
            family: Family::of(source),
            source: Some(source),
            multicast: false,
            ah: false,
        }
    }
}

/// One received VRRP datagram: the IP facts the receive checks need and the VRRP message, the
/// same for both families.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The IP source address.
    pub src: IpAddr,
    /// The IP destination address: the VRRP group or one of ours (unicast).
    pub dst: IpAddr,
    /// The TTL (IPv4) or hop limit (IPv6) it arrived with; RFC 5798 7.1 discards all but 255.
    pub hop_limit: u8,
    /// The VRRP message: the IP payload, exactly (after the AH header, if any).
    pub payload: Vec<u8>,
    /// The IP and AH headers of an AH datagram, as received, for the instance's key to verify.
    pub ah: Option<Vec<u8>>,
}

impl Received {
    /// The codec's view before VRRP parsing.
    pub fn raw(&self) -> RawDatagram<'_> {
        RawDatagram {
            src: self.src,
            dst: self.dst,
            hop_limit: self.hop_limit,
            payload: &self.payload,
            // Checked when received: the bytes are what `split_datagram` accepted.
            ah: self.ah.as_deref().and_then(|b| Covered::new(b).ok()),
        }
    }

    /// Parses the VRRP message, verifying length, version, type and checksum: the same
    /// [`Datagram`] that [`vrrp::parse_datagram`] makes from a whole IP datagram.
    pub fn parse(&self, mode: ChecksumMode) -> Result<Datagram, vrrp::Error> {
        let packet = Packet::new_checked(&self.payload[..])?;
        let repr = Repr::parse(&packet, self.src, self.dst, mode)?;
        Ok(Datagram {
            src: self.src,
            dst: self.dst,
            hop_limit: self.hop_limit,
            repr,
        })
    }
}

/// A raw VRRP socket on one interface for one family. See the [module docs](self).
#[derive(Debug)]
pub struct VrrpSocket {
    fd: AsyncFd<Socket>,
    interface: String,
    index: u32,
    family: Family,
    source: IpAddr,
    multicast: bool,
    /// IP protocol 51 with `IP_HDRINCL` (keepalived's AH).
    ah: bool,
    /// The receive buffer, reused (its lock is only held during one `recvmsg`).
    buffer: std::sync::Mutex<Vec<u8>>,
}

impl VrrpSocket {
    /// Looks the interface (and, when not configured, the source address) up and opens the
    /// socket. Needs `CAP_NET_RAW`.
    pub async fn open(netlink: &Netlink, config: &SocketConfig) -> Result<Self, Error> {
        let interface = netlink.interface(&config.interface).await?;
        let source = match config.source {
            Some(source) => source,
            None => match config.family {
                Family::V4 => IpAddr::V4(netlink.primary_ipv4(&interface).await?),
                Family::V6 => IpAddr::V6(netlink.link_local_ipv6(&interface).await?),
            },
        };
        Self::open_on(&interface, source, config.multicast, config.ah)
    }

    /// Opens the socket on a known interface, sending from `source` (whose family is the
    /// socket's); `ah` for keepalived's AH (IPv4 only). Must be called inside a tokio runtime.
    pub fn open_on(
        interface: &Interface,
        source: IpAddr,
        multicast: bool,
        ah: bool,
    ) -> Result<Self, Error> {
        let name = interface.name.as_str();
        let index = interface.index;
        let io = |operation: &str| Error::io(name, operation.to_owned());
        let (domain, family) = match source {
            IpAddr::V4(_) => (Domain::IPV4, Family::V4),
            IpAddr::V6(_) => (Domain::IPV6, Family::V6),
        };
        let protocol = if ah { ah::PROTOCOL } else { vrrp::PROTOCOL };
        let socket = Socket::new(domain, Type::RAW, Some(Protocol::from(i32::from(protocol))))
            .map_err(io(&format!(
                "open raw socket for IP protocol {protocol} (needs CAP_NET_RAW)"
            )))?;
        if ah {
            if family != Family::V4 {
                return Err(Error::io(
                    name,
                    "AH over IPv6 (keepalived's AH is IPv4 only)",
                )(io::Error::from(
                    io::ErrorKind::InvalidInput,
                )));
            }
            socket
                .set_header_included_v4(true)
                .map_err(io("turn IP_HDRINCL on"))?;
        }
        socket
            .bind_device(Some(name.as_bytes()))
            .map_err(io("bind to device (SO_BINDTODEVICE)"))?;
        match source {
            IpAddr::V4(source) => ipv4_options(&socket, source, index, multicast, name)?,
            IpAddr::V6(_) => ipv6_options(&socket, index, multicast, name)?,
        }
        let fd = register(socket).map_err(io("set SO_RCVBUF, O_NONBLOCK and register"))?;
        tracing::debug!(interface = name, %source, multicast, "opened VRRP socket");
        Ok(VrrpSocket {
            fd,
            interface: name.to_owned(),
            index,
            family,
            source,
            multicast,
            ah,
            buffer: std::sync::Mutex::new(vec![0u8; RECV_BUFFER]),
        })
    }

    /// The receive buffer the kernel granted (`SO_RCVBUF`, in its doubled accounting).
    pub fn receive_buffer(&self) -> usize {
        self.fd.get_ref().recv_buffer_size().unwrap_or(0)
    }

    /// The interface name.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The interface index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The address family.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The source address of everything this socket sends.
    pub fn source(&self) -> IpAddr {
        self.source
    }

    /// Whether the socket joined the VRRP multicast group.
    pub fn is_multicast(&self) -> bool {
        self.multicast
    }

    /// Sends one encoded VRRP message (what [`Repr::emit`] wrote for this socket's
    /// [`source`](Self::source) and `dst`) to `dst`: the multicast group or a unicast peer.
    pub async fn send(&self, message: &[u8], dst: IpAddr) -> Result<(), Error> {
        self.check_family(dst, "destination")?;
        let operation = || format!("send {} bytes to {dst}", message.len());
        loop {
            let mut guard = self
                .fd
                .writable()
                .await
                .map_err(Error::io(&self.interface, operation()))?;
            match guard.try_io(|fd| self.send_once(fd.get_ref(), message, dst)) {
                Ok(result) => {
                    return result
                        .map(drop)
                        .map_err(Error::io(&self.interface, operation()))
                }
                Err(_would_block) => continue,
            }
        }
    }

    /// Encodes `repr` once per destination (a VRRPv3 checksum covers the destination address,
    /// RFC 5798 5.2.8) and sends it to each: the group in multicast mode, every peer in unicast
    /// mode. Stops at the first failure.
    pub async fn send_advert(
        &self,
        repr: &Repr,
        destinations: &[IpAddr],
        mode: ChecksumMode,
    ) -> Result<(), Error> {
        for &dst in destinations {
            self.check_family(dst, "destination")?;
            let bytes = repr
                .to_bytes(self.source, dst, mode)
                .map_err(|source| Error::Encode {
                    interface: self.interface.clone(),
                    dst,
                    source,
                })?;
            self.send(&bytes, dst).await?;
        }
        Ok(())
    }

    /// Sends `repr` (Auth Type 2) as keepalived's AH datagrams, one per destination, all with
    /// one sequence number and identification (as keepalived numbers one advert, whatever its
    /// peers); `seal` gives them, with the source and destination filled in here.
    pub async fn send_advert_ah(
        &self,
        repr: &Repr,
        destinations: &[IpAddr],
        key: &ah::Key,
        seal: Seal,
    ) -> Result<(), Error> {
        // Opened for AH only over IPv4 (`open_on`), so the source is IPv4.
        let IpAddr::V4(src) = self.source else {
            return self.check_family(IpAddr::V4(seal.src), "source");
        };
        for &dst in destinations {
            self.check_family(dst, "destination")?;
            let encode = |source| Error::Encode {
                interface: self.interface.clone(),
                dst,
                source,
            };
            let IpAddr::V4(to) = dst else {
                return Err(encode(vrrp::Error::V2OverIpv6));
            };
            let message = repr
                .to_bytes(self.source, dst, ChecksumMode::PseudoHeader)
                .map_err(encode)?;
            let datagram = ah::seal(
                &message,
                &Seal {
                    src,
                    dst: to,
                    unicast: !dst.is_multicast(),
                    ..seal
                },
                key,
            )
            .map_err(encode)?;
            self.send(&datagram, dst).await?;
        }
        Ok(())
    }

    /// Whether the socket carries keepalived's AH (IP protocol 51, datagrams built whole).
    pub fn is_ah(&self) -> bool {
        self.ah
    }

    /// Waits for the next datagram. [`Error::Malformed`] concerns that datagram only (count it
    /// and receive again, see [`Error::is_per_datagram`]); other errors concern the socket.
    pub async fn recv(&self) -> Result<Received, Error> {
        loop {
            let mut guard = self
                .fd
                .readable()
                .await
                .map_err(Error::io(&self.interface, "wait for a datagram"))?;
            match guard.try_io(|fd| self.recv_into_buffer(fd.get_ref())) {
                Ok(result) => return result.map_err(Error::io(&self.interface, "receive"))?,
                Err(_would_block) => continue,
            }
        }
    }

    /// One `recvmsg` into the socket's buffer, decoded.
    fn recv_into_buffer(&self, socket: &Socket) -> io::Result<Result<Received, Error>> {
        let mut buffer = self
            .buffer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let meta = self.recv_once(socket, &mut buffer)?;
        Ok(self.received(meta, &buffer))
    }

    /// The next datagram already waiting in the socket, without waiting: `None` when there is
    /// none. For a caller that must see what has arrived before it acts on a timer.
    pub fn try_recv(&self) -> Option<Result<Received, Error>> {
        // Called on every timer wake-up: most find nothing, so ask before zeroing a buffer
        // (a peek into no room costs no copy). Any other answer goes on to the real receive,
        // which reports it.
        let fd = self.fd.get_ref().as_raw_fd();
        let peek = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
        if nix::sys::socket::recv(fd, &mut [], peek) == Err(nix::errno::Errno::EAGAIN) {
            return None;
        }
        match self.recv_into_buffer(self.fd.get_ref()) {
            Ok(r) => Some(r),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            Err(e) => Some(Err(Error::io(&self.interface, "receive")(e))),
        }
    }

    /// Joins 224.0.0.18 on the socket's own interface without naming a source address
    /// (`IP_MULTICAST_IF` is left alone): for a socket on a `use_vmac` macvlan, whose source
    /// address is on the interface below it (an address elsewhere than the bound device is
    /// refused as `IP_MULTICAST_IF`).
    pub fn join_group_v4(&self) -> Result<(), Error> {
        self.fd
            .get_ref()
            .join_multicast_v4_n(&IPV4_GROUP, &InterfaceIndexOrAddress::Index(self.index))
            .map_err(Error::io(&self.interface, format!("join {IPV4_GROUP}")))
    }

    fn check_family(&self, address: IpAddr, operation: &'static str) -> Result<(), Error> {
        if Family::of(address) == self.family {
            return Ok(());
        }
        Err(Error::WrongFamily {
            interface: self.interface.clone(),
            address,
            expected: match self.family {
                Family::V4 => "IPv4",
                Family::V6 => "IPv6",
            },
            operation,
        })
    }

    fn send_once(&self, socket: &Socket, message: &[u8], dst: IpAddr) -> io::Result<usize> {
        let fd = socket.as_raw_fd();
        let iov = [IoSlice::new(message)];
        match (self.source, dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                // Linux raw_sendmsg takes the source from ipi_spec_dst and the outgoing
                // interface from ipi_ifindex (ip(7) IP_PKTINFO).
                let info = libc::in_pktinfo {
                    ipi_ifindex: i32::try_from(self.index).map_err(io::Error::other)?,
                    ipi_spec_dst: libc::in_addr {
                        s_addr: u32::from(src).to_be(),
                    },
                    ipi_addr: libc::in_addr { s_addr: 0 },
                };
                let address = SockaddrIn::from(SocketAddrV4::new(dst, 0));
                let cmsgs = [ControlMessage::Ipv4PacketInfo(&info)];
                Ok(sendmsg(
                    fd,
                    &iov,
                    &cmsgs,
                    MsgFlags::empty(),
                    Some(&address),
                )?)
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                // RFC 3542 6.1: the source address and outgoing interface for this datagram.
                let info = libc::in6_pktinfo {
                    ipi6_addr: libc::in6_addr {
                        s6_addr: src.octets(),
                    },
                    ipi6_ifindex: self.index,
                };
                // The scope id only counts for link-scope destinations (fe80::/10, ff02::/16).
                let address = SockaddrIn6::from(SocketAddrV6::new(dst, 0, 0, self.index));
                let cmsgs = [ControlMessage::Ipv6PacketInfo(&info)];
                Ok(sendmsg(
                    fd,
                    &iov,
                    &cmsgs,
                    MsgFlags::empty(),
                    Some(&address),
                )?)
            }
            _ => Err(io::Error::from(io::ErrorKind::InvalidInput)),
        }
    }

    fn recv_once(&self, socket: &Socket, buffer: &mut [u8]) -> io::Result<RecvMeta> {
        let fd = socket.as_raw_fd();
        let mut iov = [IoSliceMut::new(buffer)];
        match self.family {
            Family::V4 => {
                let message = recvmsg::<SockaddrIn>(fd, &mut iov, None, MsgFlags::empty())?;
                Ok(RecvMeta {
                    len: message.bytes,
                    truncated: message.flags.contains(MsgFlags::MSG_TRUNC),
                    src: None,
                    dst: None,
                    hop_limit: None,
                })
            }
            Family::V6 => {
                let mut control = nix::cmsg_space!(libc::in6_pktinfo, libc::c_int);
                let message =
                    recvmsg::<SockaddrIn6>(fd, &mut iov, Some(&mut control), MsgFlags::empty())?;
                let mut meta = RecvMeta {
                    len: message.bytes,
                    truncated: message.flags.contains(MsgFlags::MSG_TRUNC),
                    src: message.address.map(|a| IpAddr::V6(a.ip())),
                    dst: None,
                    hop_limit: None,
                };
                for cmsg in message.cmsgs()? {
                    match cmsg {
                        ControlMessageOwned::Ipv6PacketInfo(info) => {
                            meta.dst = Some(IpAddr::V6(Ipv6Addr::from(info.ipi6_addr.s6_addr)));
                        }
                        ControlMessageOwned::Ipv6HopLimit(hops) => {
                            meta.hop_limit = u8::try_from(hops).ok();
                        }
                        _ => {}
                    }
                }
                Ok(meta)
            }
        }
    }

    fn received(&self, meta: RecvMeta, buffer: &[u8]) -> Result<Received, Error> {
        let malformed = |source| Error::Malformed {
            interface: self.interface.clone(),
            source,
        };
        let data = buffer.get(..meta.len).unwrap_or(buffer);
        if meta.truncated {
            return Err(malformed(vrrp::Error::Truncated {
                what: "datagram (cut to the receive buffer)",
                needed: meta.len.saturating_add(1),
                got: meta.len,
            }));
        }
        match self.family {
            Family::V4 => {
                // Raw IPv4 sockets deliver the IP header; the codec validates it.
                let raw = vrrp::split_datagram(data).map_err(malformed)?;
                Ok(Received {
                    src: raw.src,
                    dst: raw.dst,
                    hop_limit: raw.hop_limit,
                    payload: raw.payload.to_vec(),
                    ah: raw.ah.map(|c| c.as_bytes().to_vec()),
                })
            }
            Family::V6 => {
                let missing = |what| Error::MissingControl {
                    interface: self.interface.clone(),
                    what,
                };
                Ok(Received {
                    src: meta.src.ok_or(missing("source address"))?,
                    dst: meta.dst.ok_or(missing("IPV6_PKTINFO"))?,
                    hop_limit: meta.hop_limit.ok_or(missing("IPV6_HOPLIMIT"))?,
                    payload: data.to_vec(),
                    ah: None,
                })
            }
        }
    }
}

/// A socket option to set, and how a refusal is named (`set IP_TTL 255`).
type SocketOption<'a> = (&'a str, &'a dyn Fn() -> io::Result<()>);

/// Sets each option in order, stopping at the first the kernel refuses, which the error names
/// with the interface `name`.
fn set_options(name: &str, options: &[SocketOption<'_>]) -> Result<(), Error> {
    for (what, set) in options {
        set().map_err(Error::io(name, *what))?;
    }
    Ok(())
}

/// TTL 255, no loop, only our groups, the source's interface for multicast and the group
/// joined (see the module docs).
fn ipv4_options(
    socket: &Socket,
    source: Ipv4Addr,
    index: u32,
    multicast: bool,
    name: &str,
) -> Result<(), Error> {
    let ttl = u32::from(vrrp::HOP_LIMIT);
    set_options(
        name,
        &[
            ("set IP_TTL 255", &|| socket.set_ttl_v4(ttl)),
            ("set IP_MULTICAST_TTL 255", &|| {
                socket.set_multicast_ttl_v4(ttl)
            }),
            ("turn IP_MULTICAST_LOOP off", &|| {
                socket.set_multicast_loop_v4(false)
            }),
            ("turn IP_MULTICAST_ALL off", &|| {
                socket.set_multicast_all_v4(false)
            }),
        ],
    )?;
    if !multicast {
        return Ok(());
    }
    let (interface, join) = (
        format!("set IP_MULTICAST_IF {source}"),
        format!("join {IPV4_GROUP}"),
    );
    let group = InterfaceIndexOrAddress::Index(index);
    set_options(
        name,
        &[
            (&interface, &|| socket.set_multicast_if_v4(&source)),
            (&join, &|| socket.join_multicast_v4_n(&IPV4_GROUP, &group)),
        ],
    )
}

/// Hop limit 255, no loop, only our groups, the interface, the control messages receiving
/// needs, the kernel's checksum, and the group joined (see the module docs).
fn ipv6_options(socket: &Socket, index: u32, multicast: bool, name: &str) -> Result<(), Error> {
    let ttl = u32::from(vrrp::HOP_LIMIT);
    let packet_info = || setsockopt(socket, sockopt::Ipv6RecvPacketInfo, &true);
    let hop_limit = || setsockopt(socket, sockopt::Ipv6RecvHopLimit, &true);
    set_options(
        name,
        &[
            ("set IPV6_UNICAST_HOPS 255", &|| {
                socket.set_unicast_hops_v6(ttl)
            }),
            ("set IPV6_MULTICAST_HOPS 255", &|| {
                socket.set_multicast_hops_v6(ttl)
            }),
            ("turn IPV6_MULTICAST_LOOP off", &|| {
                socket.set_multicast_loop_v6(false)
            }),
            ("turn IPV6_MULTICAST_ALL off", &|| {
                socket.set_multicast_all_v6(false)
            }),
            ("set IPV6_MULTICAST_IF", &|| {
                socket.set_multicast_if_v6(index)
            }),
            ("turn IPV6_RECVPKTINFO on", &|| {
                packet_info().map_err(io::Error::from)
            }),
            ("turn IPV6_RECVHOPLIMIT on", &|| {
                hop_limit().map_err(io::Error::from)
            }),
            ("set IPV6_CHECKSUM 6", &|| {
                setsockopt(socket, Ipv6Checksum, &VRRP_CHECKSUM_OFFSET).map_err(io::Error::from)
            }),
        ],
    )?;
    if !multicast {
        return Ok(());
    }
    let join = format!("join {IPV6_GROUP}");
    set_options(
        name,
        &[(&join, &|| socket.join_multicast_v6(&IPV6_GROUP, index))],
    )
}

/// Asks for a receive buffer of `bytes`: `SO_RCVBUFFORCE` (past `net.core.rmem_max`, with
/// CAP_NET_ADMIN) where allowed, else `SO_RCVBUF` (capped at `rmem_max`).
fn set_receive_buffer(socket: &Socket, bytes: usize) -> io::Result<()> {
    if setsockopt(socket, sockopt::RcvBufForce, &bytes).is_ok() {
        return Ok(());
    }
    socket.set_recv_buffer_size(bytes)
}

/// Gives the socket its receive buffer for a burst of adverts, makes it non-blocking and
/// registers it with the tokio reactor.
#[allow(unsafe_code)]
fn register(socket: Socket) -> io::Result<AsyncFd<Socket>> {
    set_receive_buffer(&socket, BURST * DATAGRAM_TRUESIZE)?;
    socket.set_nonblocking(true)?;
    // SAFETY: tokio requires that the descriptor stays open and is not swapped for another
    // while registered. `socket2::Socket` owns its descriptor for its whole life, never
    // replaces it, and the `AsyncFd` owns the `Socket`, deregistering before it closes it.
    unsafe { AsyncFd::register(socket) }.map_err(|e| e.into_parts().1)
}

/// What one `recvmsg` told, before the datagram is looked at.
#[derive(Debug)]
struct RecvMeta {
    len: usize,
    truncated: bool,
    src: Option<IpAddr>,
    dst: Option<IpAddr>,
    hop_limit: Option<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_the_iana_ones() {
        assert_eq!(multicast_group(Family::V4).to_string(), "224.0.0.18");
        assert_eq!(multicast_group(Family::V6).to_string(), "ff02::12");
    }

    #[test]
    fn unicast_config_takes_the_family_of_its_source() {
        let config = SocketConfig::unicast("eth0", "2001:db8::1".parse().unwrap());
        assert_eq!(config.family, Family::V6);
        assert!(!config.multicast);
    }
}

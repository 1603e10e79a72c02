//! Telling the link that a VIP has moved: gratuitous ARP for IPv4, unsolicited neighbour
//! advertisements for IPv6 (RFC 5798 6.4.2 and 6.4.3: "for each IPv4 address associated with
//! the virtual router, broadcast a gratuitous ARP request"; "for each IPv6 address ... send an
//! Unsolicited ND Neighbor Advertisement with the Router Flag (R) set to 1, Override flag (O)
//! set to 1").
//!
//! Both are whole Ethernet frames built by `ipi_core::acd::frame` (shared with the probes of
//! address conflict detection) and sent through an
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
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use ipi_core::acd::frame::{gratuitous_arp_frame, unsolicited_na_frame};
use ipi_core::acd::socket;

use super::address::Interface;
use super::error::Error;

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
        let fd = socket::open_sender(index)
            .map_err(Error::io(name, "open AF_PACKET socket (needs CAP_NET_RAW)"))?;
        let s = Arc::new(PacketSender { fd, index });
        senders.push((key, Arc::clone(&s)));
        Ok(s)
    }

    fn send(&self, frame: &[u8]) -> std::io::Result<()> {
        socket::send_frame(&self.fd, self.index, frame)
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

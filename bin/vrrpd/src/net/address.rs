//! Interfaces and their addresses over rtnetlink: look an interface up, list its addresses,
//! find the source addresses VRRP sends from, and add or remove VIPs.
//!
//! Adding and removing are idempotent, as a daemon that restarts, reloads or races an operator
//! needs: adding an address that is already there and removing one that is gone succeed with
//! [`Outcome::Unchanged`] (logged at debug). IPv6 VIPs are added with `IFA_F_NODAD`, as keepalived
//! does, so that they are usable at once instead of tentative for the duration of duplicate
//! address detection (RFC 4862 5.4): VRRP itself is what keeps two routers from holding a VIP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use futures_util::TryStreamExt;
use rtnetlink::packet_route::address::{
    AddressAttribute, AddressFlags as NlAddressFlags, AddressHeaderFlags, AddressMessage,
    AddressScope, CacheInfo,
};
use rtnetlink::packet_route::link::{LinkAttribute, LinkFlags};
use rtnetlink::packet_route::AddressFamily;
use tokio::task::JoinHandle;

use super::error::{netlink_errno, Error};

/// An rtnetlink connection (`NETLINK_ROUTE`) for address and link requests.
///
/// The connection runs as a task on the current tokio runtime; dropping this aborts it.
#[derive(Debug)]
pub struct Netlink {
    pub(super) handle: rtnetlink::Handle,
    task: JoinHandle<()>,
    /// The `use_vmac` macvlans made through it ([`super::vmac`]).
    pub(super) made: std::sync::Mutex<Made>,
}

/// The `use_vmac` macvlans this process made or took over, and the base interfaces'
/// settings found before the first of them ([`super::vmac`] keeps it).
#[derive(Debug, Default)]
pub struct Made {
    /// The macvlans by name, each with the interfaces whose ARP settings it changed.
    pub(super) vmacs: std::collections::BTreeMap<String, Vec<String>>,
    /// `arp_ignore`, `arp_filter` and `arp_announce` as found, by interface.
    pub(super) saved: std::collections::BTreeMap<String, [String; 3]>,
}

impl Drop for Netlink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An interface as vrrpd needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// The kernel's interface index (`ip link` shows it first).
    pub index: u32,
    /// The interface name.
    pub name: String,
    /// The Ethernet hardware address, if the link has a 6-byte one.
    pub mac: Option<[u8; 6]>,
    /// Administratively up (`IFF_UP`).
    pub admin_up: bool,
    /// Operationally running (`IFF_RUNNING`: carrier and operational state up).
    pub running: bool,
}

/// The address flags vrrpd cares about (`IFA_F_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressFlags {
    /// A secondary IPv4 address: another address of the same subnet was there first.
    pub secondary: bool,
    /// Duplicate address detection has not finished; the kernel will not send from it yet.
    pub tentative: bool,
    /// Duplicate address detection failed; the address is unusable.
    pub dad_failed: bool,
    /// Added without duplicate address detection.
    pub nodad: bool,
    /// Deprecated (preferred lifetime over).
    pub deprecated: bool,
    /// Permanent (configured, not autoconfigured with a lifetime).
    pub permanent: bool,
}

/// One address of an interface, as `ip addr` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceAddress {
    /// The address (`IFA_LOCAL` for IPv4, `IFA_ADDRESS` for IPv6).
    pub address: IpAddr,
    /// The prefix length.
    pub prefix_len: u8,
    /// The IPv4 label (`eth0:vip`), if any.
    pub label: Option<String>,
    /// True for link-scope addresses (IPv6 `fe80::/10`, IPv4 169.254/16 when so configured).
    pub link_scope: bool,
    /// The flags.
    pub flags: AddressFlags,
}

/// A virtual IP address to hold on an interface.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Vip {
    /// The address.
    pub address: IpAddr,
    /// The prefix length: 32 or 128 unless the configuration says otherwise.
    pub prefix_len: u8,
    /// The IPv4 label (keepalived's `label`), shown by `ip addr` and `ifconfig`.
    pub label: Option<String>,
    /// Seconds it stays preferred (keepalived's `preferred_lft`; 0 keeps it out of source
    /// address selection); None: forever.
    pub preferred_lft: Option<u32>,
}

impl Vip {
    /// A host VIP: /32 for IPv4, /128 for IPv6, no label.
    pub fn host(address: IpAddr) -> Self {
        let prefix_len = if address.is_ipv4() { 32 } else { 128 };
        Vip {
            address,
            prefix_len,
            label: None,
            preferred_lft: None,
        }
    }
}

impl std::fmt::Display for Vip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)?;
        if let Some(label) = &self.label {
            write!(f, " label {label}")?;
        }
        if let Some(t) = self.preferred_lft {
            write!(f, " preferred_lft {t}")?;
        }
        Ok(())
    }
}

/// Whether an idempotent operation changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The address was added or removed.
    Changed,
    /// It was already there (add) or already gone (remove).
    Unchanged,
}

impl Netlink {
    /// Opens an rtnetlink socket in the caller's network namespace and spawns its connection
    /// on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (tokio's `spawn` requires one).
    pub fn connect() -> Result<Self, Error> {
        let (connection, handle, _) =
            rtnetlink::new_connection().map_err(Error::io("rtnetlink", "open socket"))?;
        let task = tokio::spawn(connection);
        Ok(Netlink {
            handle,
            task,
            made: std::sync::Mutex::default(),
        })
    }

    /// The interface named `name`.
    pub async fn interface(&self, name: &str) -> Result<Interface, Error> {
        let mut links = self
            .handle
            .link()
            .get()
            .match_name(name.to_owned())
            .execute();
        match links.try_next().await {
            Ok(Some(link)) => Ok(interface_from(link)),
            Ok(None) => Err(Error::NoSuchInterface {
                interface: name.to_owned(),
            }),
            Err(e) if netlink_errno(&e) == Some(libc::ENODEV) => Err(Error::NoSuchInterface {
                interface: name.to_owned(),
            }),
            Err(e) => Err(Error::netlink(name, "look up interface")(e)),
        }
    }

    /// The interface with index `index`.
    pub async fn interface_by_index(&self, index: u32) -> Result<Interface, Error> {
        let mut links = self.handle.link().get().match_index(index).execute();
        let what = format!("interface index {index}");
        match links.try_next().await {
            Ok(Some(link)) => Ok(interface_from(link)),
            Ok(None) => Err(Error::NoSuchInterface { interface: what }),
            Err(e) if netlink_errno(&e) == Some(libc::ENODEV) => {
                Err(Error::NoSuchInterface { interface: what })
            }
            Err(e) => Err(Error::netlink(&what, "look up interface")(e)),
        }
    }

    /// Every address of `interface`, in the kernel's order (for IPv4: primaries before their
    /// secondaries, in the order they were added).
    pub async fn addresses(&self, interface: &Interface) -> Result<Vec<InterfaceAddress>, Error> {
        // Without NETLINK_GET_STRICT_CHK the kernel ignores the index of a dump request and
        // sends every address: rtnetlink filters them here.
        let messages: Vec<AddressMessage> = self
            .handle
            .address()
            .get()
            .set_link_index_filter(interface.index)
            .execute()
            .try_collect()
            .await
            .map_err(Error::netlink(&interface.name, "list addresses"))?;
        Ok(messages.iter().filter_map(address_from).collect())
    }

    /// The interface's primary IPv4 address: the first IPv4 address that is not secondary,
    /// which is what the kernel picks as source on that interface and what VRRPv2/v3 over IPv4
    /// advertise from (RFC 5798 5.1.1.1: "the primary IPv4 address of the interface").
    pub async fn primary_ipv4(&self, interface: &Interface) -> Result<Ipv4Addr, Error> {
        self.addresses(interface)
            .await?
            .into_iter()
            .find_map(|a| match a.address {
                IpAddr::V4(v4) if !a.flags.secondary => Some(v4),
                _ => None,
            })
            .ok_or_else(|| Error::NoAddress {
                interface: interface.name.clone(),
                what: "IPv4 address".to_owned(),
            })
    }

    /// The interface's IPv6 link-local address that can be sent from: VRRPv3 over IPv6 sends
    /// from it (RFC 5798 5.1.2.1). A tentative address (duplicate address detection still
    /// running, about a second after the link comes up) does not count: the kernel refuses to
    /// send from it.
    pub async fn link_local_ipv6(&self, interface: &Interface) -> Result<Ipv6Addr, Error> {
        let addresses = self.addresses(interface).await?;
        let link_locals: Vec<(Ipv6Addr, AddressFlags)> = addresses
            .iter()
            .filter_map(|a| match a.address {
                IpAddr::V6(v6) if is_unicast_link_local(v6) => Some((v6, a.flags)),
                _ => None,
            })
            .collect();
        if let Some((usable, _)) = link_locals
            .iter()
            .find(|(_, f)| !f.tentative && !f.dad_failed)
        {
            return Ok(*usable);
        }
        let what = if link_locals.iter().any(|(_, f)| f.tentative) {
            "usable IPv6 link-local address yet (it is tentative: duplicate address detection is running)"
        } else if link_locals.is_empty() {
            "IPv6 link-local address (is IPv6 disabled on it, or addr_gen_mode none?)"
        } else {
            "usable IPv6 link-local address (duplicate address detection failed)"
        };
        Err(Error::NoAddress {
            interface: interface.name.clone(),
            what: what.to_owned(),
        })
    }

    /// Adds `vip` to `interface`. Already there: [`Outcome::Unchanged`], logged at debug.
    /// IPv6 VIPs are added with `IFA_F_NODAD`.
    pub async fn add_address(&self, interface: &Interface, vip: &Vip) -> Result<Outcome, Error> {
        let mut request = self
            .handle
            .address()
            .add(interface.index, vip.address, vip.prefix_len);
        let message = request.message_mut();
        if vip.address.is_ipv6() {
            // Usable at once, as keepalived adds them: the VRRP election, not DAD, decides
            // who holds the address (RFC 4862 5.4 allows skipping DAD by configuration).
            message.header.flags |= AddressHeaderFlags::Nodad;
            message
                .attributes
                .push(AddressAttribute::Flags(NlAddressFlags::Nodad));
        }
        if let Some(label) = &vip.label {
            message
                .attributes
                .push(AddressAttribute::Label(label.clone()));
        }
        if let Some(preferred) = vip.preferred_lft {
            // As keepalived: valid forever, preferred for this long.
            let mut lifetimes = CacheInfo::default();
            lifetimes.ifa_preferred = preferred;
            lifetimes.ifa_valid = u32::MAX;
            message
                .attributes
                .push(AddressAttribute::CacheInfo(lifetimes));
        }
        match request.execute().await {
            Ok(()) => {
                tracing::debug!(interface = %interface.name, %vip, "added address");
                Ok(Outcome::Changed)
            }
            Err(e) if netlink_errno(&e) == Some(libc::EEXIST) => {
                tracing::debug!(interface = %interface.name, %vip, "address already present");
                Ok(Outcome::Unchanged)
            }
            Err(e) => Err(Error::netlink(
                &interface.name,
                format!("add address {vip}"),
            )(e)),
        }
    }

    /// Removes `vip` from `interface`. Already gone: [`Outcome::Unchanged`], logged at debug.
    pub async fn remove_address(&self, interface: &Interface, vip: &Vip) -> Result<Outcome, Error> {
        let mut message = AddressMessage::default();
        message.header.index = interface.index;
        message.header.prefix_len = vip.prefix_len;
        match vip.address {
            IpAddr::V4(_) => {
                message.header.family = AddressFamily::Inet;
                // The kernel matches IPv4 deletions on IFA_LOCAL and, when given, the label.
                message
                    .attributes
                    .push(AddressAttribute::Local(vip.address));
            }
            IpAddr::V6(_) => {
                message.header.family = AddressFamily::Inet6;
                message
                    .attributes
                    .push(AddressAttribute::Address(vip.address));
            }
        }
        match self.handle.address().del(message).execute().await {
            Ok(()) => {
                tracing::debug!(interface = %interface.name, %vip, "removed address");
                Ok(Outcome::Changed)
            }
            Err(e) if netlink_errno(&e) == Some(libc::EADDRNOTAVAIL) => {
                tracing::debug!(interface = %interface.name, %vip, "address already absent");
                Ok(Outcome::Unchanged)
            }
            Err(e) => Err(Error::netlink(
                &interface.name,
                format!("remove address {vip}"),
            )(e)),
        }
    }
}

/// `fe80::/10`.
fn is_unicast_link_local(address: Ipv6Addr) -> bool {
    address.segments()[0] & 0xffc0 == 0xfe80
}

fn interface_from(link: rtnetlink::packet_route::link::LinkMessage) -> Interface {
    let mut name = String::new();
    let mut mac = None;
    for attribute in &link.attributes {
        match attribute {
            LinkAttribute::IfName(n) => name.clone_from(n),
            LinkAttribute::Address(bytes) => mac = <[u8; 6]>::try_from(bytes.as_slice()).ok(),
            _ => {}
        }
    }
    Interface {
        index: link.header.index,
        name,
        mac,
        admin_up: link.header.flags.contains(LinkFlags::Up),
        running: link.header.flags.contains(LinkFlags::Running),
    }
}

/// The address an address message is about (`IFA_LOCAL`, else `IFA_ADDRESS`).
pub(super) fn address_of(message: &AddressMessage) -> Option<IpAddr> {
    message
        .attributes
        .iter()
        .fold(None, |found, attribute| match attribute {
            AddressAttribute::Local(a) => Some(*a),
            AddressAttribute::Address(a) => found.or(Some(*a)),
            _ => found,
        })
}

fn address_from(message: &AddressMessage) -> Option<InterfaceAddress> {
    // IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer on point-to-point
    // links. IPv6 sends only IFA_ADDRESS unless a peer is configured.
    let address = address_of(message)?;
    let mut label = None;
    let mut flags = None;
    for attribute in &message.attributes {
        match attribute {
            AddressAttribute::Label(l) => label = Some(l.clone()),
            AddressAttribute::Flags(f) => flags = Some(*f),
            _ => {}
        }
    }
    // IFA_FLAGS carries all 32 bits; the header only the low 8 (older kernels send only that).
    let bits = flags.map_or_else(|| u32::from(message.header.flags.bits()), |f| f.bits());
    let has = |flag: NlAddressFlags| bits & flag.bits() != 0;
    Some(InterfaceAddress {
        address,
        prefix_len: message.header.prefix_len,
        label,
        link_scope: message.header.scope == AddressScope::Link,
        flags: AddressFlags {
            secondary: has(NlAddressFlags::Secondary),
            tentative: has(NlAddressFlags::Tentative),
            dad_failed: has(NlAddressFlags::Dadfailed),
            nodad: has(NlAddressFlags::Nodad),
            deprecated: has(NlAddressFlags::Deprecated),
            permanent: has(NlAddressFlags::Permanent),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_vips_are_full_length() {
        assert_eq!(Vip::host("192.0.2.5".parse().unwrap()).prefix_len, 32);
        assert_eq!(Vip::host("2001:db8::5".parse().unwrap()).prefix_len, 128);
    }

    #[test]
    fn link_local_is_fe80_slash_10() {
        assert!(is_unicast_link_local("fe80::1".parse().unwrap()));
        assert!(is_unicast_link_local("febf::1".parse().unwrap()));
        assert!(!is_unicast_link_local("fec0::1".parse().unwrap()));
        assert!(!is_unicast_link_local("2001:db8::1".parse().unwrap()));
    }
}

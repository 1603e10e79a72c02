//! keepalived's VMAC (`use_vmac`, keepalived 2.2.7's vrrp_vmac.c and vrrp_if_config.c): a
//! macvlan in mode private on the instance's interface, with RFC 5798 7.3's virtual router MAC
//! address, holding the VIPs, so that the hosts of the link keep one MAC address for a VIP
//! whichever router holds it.
//!
//! What is done to it, as keepalived does it:
//!
//! - Made down, `addr_gen_mode none` (no EUI-64 link-local address from the virtual MAC,
//!   RFC 5798 7.4), IPv6 off for an IPv4 instance (`disable_ipv6`: nothing but the VIPs' IPv4
//!   on it). An IPv6 instance's gets the base interface's link-local address (nodad), which
//!   its adverts come from (keepalived's `set_link_local_address`), unless
//!   `vmac_xmit_base`; with `keep_addr_on_down 1` (vrrpd's, as its macvlan goes down) the
//!   kernel keeps its addresses while it is down.
//! - On the macvlan: `arp_ignore 1` (ARP answered only for its own addresses, the VIPs),
//!   `accept_local 1`, `rp_filter 0` (what arrives on it for a VIP is answered through the base
//!   interface), `promote_secondaries 1`.
//! - On the base interface (and, when that is itself a macvlan, on the interface below it,
//!   which hears the same broadcasts): `arp_ignore 1` and `arp_filter 1`, so that it does not
//!   answer ARP for a VIP with its own MAC address. The values found are put back when the last
//!   macvlan on it goes.
//! - An interface of the name that is a macvlan on the same base in mode private with the
//!   virtual MAC (left by an earlier run) is taken over as it is; a macvlan that differs is
//!   deleted and made again (keepalived updates one in place and deletes one on another base);
//!   anything else of that name is left alone and the configuration does not run (an error
//!   naming it: vrrpd does not start, a reload is refused), where keepalived picks another
//!   name, which scripts and monitoring written for the configured name miss.
//! - Deleted when vrrpd exits, and at a reload when the new configuration no longer has it.
//!
//! Done differently: keepalived 2.2.7 sets the macvlan up at once and keeps it up in every
//! state. A backup's macvlan then has the virtual MAC too, and its multicast membership makes
//! the kernel send IGMP reports from that MAC (at the join, and at every query of a snooping
//! switch's querier): the link's switches learn the master's MAC at a backup's port, and the
//! VIP's traffic goes there until the master's next advert (keepalived installs nftables rules
//! that move the reports to the base interface; vrrpd installs no firewall rules). vrrpd's
//! macvlan is up only while the instance is master ([`Netlink::set_vmac_up`], the daemon's
//! part), so only the master ever sends from the virtual MAC. A backup hears the group on the
//! base interface meanwhile: a macvlan that is up takes the multicast frames sent from its own
//! MAC address for itself (the kernel's `macvlan_handle_frame` deems them its own, looped
//! back), so keepalived must listen on its macvlan, and vrrpd, whose macvlan is down, gets
//! them on the base interface; a master listens on both (foreign frames reach both, and the
//! daemon takes them from the macvlan's socket only).
//!
//! And: the base interface gets `arp_announce 2`, which keepalived does not set. The VIPs'
//! replies leave through the base interface (its route covers the client), and to find the
//! client's MAC there the kernel asks ARP with the packet's source, the VIP, as sender: every
//! client that answers learns the VIP at the base interface's own MAC, and after a failover
//! keeps sending to the old master until a gratuitous ARP reaches it, which is what `use_vmac`
//! is for avoiding (seen in the lab beside keepalived 2.2.7, whose clients end up so). With
//! `arp_announce 2` the sender is the base interface's own address.
//!
//! And: keepalived moves `net.ipv4.conf.all.rp_filter` to every interface and
//! sets it to 0 when it is not, so that the macvlan's 0 counts (the kernel takes the larger of
//! `all` and the interface's); vrrpd changes no interface but its own and says so in the log
//! when `all` is strict (1), which drops what arrives for the VIPs.

use std::path::PathBuf;

use futures_util::TryStreamExt;
use rtnetlink::packet_route::link::{
    AfSpecInet6, AfSpecUnspec, In6AddrGenMode, InfoData, InfoKind, InfoMacVlan, LinkAttribute,
    LinkInfo, LinkMessage, MacVlanMode,
};
use rtnetlink::{LinkMacVlan, LinkUnspec};

pub use super::address::Made;
use super::address::{Interface, Netlink};
use super::error::{netlink_errno, Error};

/// What the base interfaces get while a macvlan is on them (saved first, put back after):
/// keepalived's `arp_ignore 1` and `arp_filter 1`, and vrrpd's `arp_announce 2` (see the
/// [module docs](self)).
const BASE_KEYS: [&str; 3] = ["arp_ignore", "arp_filter", "arp_announce"];
const BASE_VALUES: [&str; 3] = ["1", "1", "2"];

/// The macvlan an instance wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmacSpec {
    /// Its name.
    pub name: String,
    /// The instance's interface it goes on.
    pub base: String,
    /// Its MAC address (RFC 5798 7.3).
    pub mac: [u8; 6],
    /// For an IPv6 instance: IPv6 stays on, and its addresses stay while it is down.
    pub ipv6: bool,
}

/// What an interface of the wanted name is.
enum Found {
    /// None.
    Absent,
    /// The macvlan wanted, as it is.
    Ours(Interface),
    /// A macvlan, but not on the base, in another mode or with another MAC address.
    OtherMacvlan(u32),
    /// Another kind of interface.
    Foreign(String),
}

impl Netlink {
    /// Makes the macvlan of `spec` (or takes over the one there) and sets it up as the
    /// [module docs](self) say; returns it, up.
    pub async fn ensure_vmac(&self, spec: &VmacSpec) -> Result<Interface, Error> {
        let base = self.interface(&spec.base).await?;
        let below = self.below(&base).await?;
        let lower = below.as_ref().map_or(base.index, |b| b.index);
        let vmac = match self.found(&spec.name, lower, &spec.mac).await? {
            Found::Ours(vmac) => {
                tracing::info!("{}: the macvlan is there already: taken over", spec.name);
                vmac
            }
            Found::Foreign(kind) => {
                return Err(Error::Io {
                    interface: spec.name.clone(),
                    operation: format!("make the use_vmac macvlan on {}", spec.base),
                    source: std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        format!("an interface of this name exists and is {kind}: left alone"),
                    ),
                });
            }
            Found::OtherMacvlan(index) => {
                tracing::info!(
                    "{}: a macvlan of this name differs (base, mode or MAC): made again",
                    spec.name
                );
                self.delete_link(&spec.name, index).await?;
                self.make(spec, &base).await?
            }
            Found::Absent => self.make(spec, &base).await?,
        };
        let mut touched = vec![base.name.clone()];
        touched.extend(below.map(|b| b.name));
        self.arp_settings(&spec.name, &touched)?;
        Ok(vmac)
    }

    /// Sets the macvlan `vmac` up (before a master adds its VIPs) or down (after it removed
    /// them); see the [module docs](self).
    pub async fn set_vmac_up(&self, vmac: &Interface, up: bool) -> Result<(), Error> {
        let message = LinkUnspec::new_with_index(vmac.index);
        let message = if up { message.up() } else { message.down() };
        self.handle
            .link()
            .set(message.build())
            .execute()
            .await
            .map_err(Error::netlink(
                &vmac.name,
                if up { "set up" } else { "set down" },
            ))
    }

    /// The interface below `base` when `base` is itself a macvlan (the kernel puts a macvlan
    /// made on a macvlan on the interface below it).
    async fn below(&self, base: &Interface) -> Result<Option<Interface>, Error> {
        let link = self.link_message(&base.name).await?;
        let Some(link) = link.filter(|l| kind(l).as_deref() == Some("macvlan")) else {
            return Ok(None);
        };
        match parent(&link) {
            Some(index) if index != base.index => Ok(self.interface_by_index(index).await.ok()),
            _ => Ok(None),
        }
    }

    async fn link_message(&self, name: &str) -> Result<Option<LinkMessage>, Error> {
        let mut links = self
            .handle
            .link()
            .get()
            .match_name(name.to_owned())
            .execute();
        match links.try_next().await {
            Ok(link) => Ok(link),
            Err(e) if netlink_errno(&e) == Some(libc::ENODEV) => Ok(None),
            Err(e) => Err(Error::netlink(name, "look up interface")(e)),
        }
    }

    async fn found(&self, name: &str, lower: u32, mac: &[u8; 6]) -> Result<Found, Error> {
        let Some(link) = self.link_message(name).await? else {
            return Ok(Found::Absent);
        };
        let index = link.header.index;
        match kind(&link).as_deref() {
            Some("macvlan") => {}
            Some(other) => return Ok(Found::Foreign(format!("a {other}"))),
            None => return Ok(Found::Foreign("no virtual link".to_string())),
        }
        let same = parent(&link) == Some(lower)
            && private(&link)
            && link
                .attributes
                .iter()
                .any(|a| matches!(a, LinkAttribute::Address(m) if m.as_slice() == mac.as_slice()));
        if same {
            Ok(Found::Ours(self.interface_by_index(index).await?))
        } else {
            Ok(Found::OtherMacvlan(index))
        }
    }

    /// Makes the macvlan, down, without an automatic link-local address and without IPv6.
    async fn make(&self, spec: &VmacSpec, base: &Interface) -> Result<Interface, Error> {
        let message = LinkMacVlan::new(&spec.name, base.index, MacVlanMode::Private)
            .address(spec.mac.to_vec())
            .build();
        self.handle
            .link()
            .add(message)
            .execute()
            .await
            .map_err(Error::netlink(
                &spec.name,
                format!("make a macvlan (mode private) on {}", base.name),
            ))?;
        let vmac = self.interface(&spec.name).await?;
        // Not part of the message that makes the link: the kernel ignores IFLA_AF_SPEC there.
        let gen_mode = LinkUnspec::new_with_index(vmac.index)
            .append_extra_attribute(LinkAttribute::AfSpecUnspec(vec![AfSpecUnspec::Inet6(
                vec![AfSpecInet6::AddrGenMode(In6AddrGenMode::None)],
            )]))
            .build();
        if let Err(e) = self.handle.link().set(gen_mode).execute().await {
            tracing::warn!("{}: addr_gen_mode none: {e}", spec.name);
        }
        if spec.ipv6 {
            // Its link-local address and VIPs are not dropped each time it goes down.
            write_sysctl("ipv6", &spec.name, "keep_addr_on_down", "1")?;
        } else {
            write_sysctl("ipv6", &spec.name, "disable_ipv6", "1")?;
        }
        tracing::info!(
            "{}: macvlan made on {} with {}",
            spec.name,
            base.name,
            mac_text(&spec.mac)
        );
        Ok(vmac)
    }

    /// The macvlan's own settings and those of the interfaces below it (saved first).
    fn arp_settings(&self, vmac: &str, touched: &[String]) -> Result<(), Error> {
        for (key, value) in [
            ("arp_ignore", "1"),
            ("accept_local", "1"),
            ("rp_filter", "0"),
            ("promote_secondaries", "1"),
        ] {
            write_sysctl("ipv4", vmac, key, value)?;
        }
        if read_sysctl("ipv4", "all", "rp_filter").is_ok_and(|v| v == "1") {
            tracing::warn!(
                "{vmac}: net.ipv4.conf.all.rp_filter is 1 (strict), which the macvlan's 0 \
                 cannot lower: what arrives for its VIPs is dropped. Set it to 0 or 2 \
                 (keepalived rewrites it and every interface's; vrrpd does not)"
            );
        }
        let mut made = self.made.lock().map_err(|_| poisoned(vmac))?;
        for name in touched {
            if !made.saved.contains_key(name) {
                let mut found = [String::new(), String::new(), String::new()];
                for (k, key) in BASE_KEYS.iter().enumerate() {
                    found[k] = read_sysctl("ipv4", name, key)?;
                }
                made.saved.insert(name.clone(), found);
            }
            for (key, value) in BASE_KEYS.iter().zip(BASE_VALUES) {
                write_sysctl("ipv4", name, key, value)?;
            }
        }
        made.vmacs.insert(vmac.to_string(), touched.to_vec());
        Ok(())
    }

    /// Deletes every macvlan made (or taken over) whose name `keep` refuses, and puts back the
    /// ARP settings of the interfaces no macvlan is left on. A failure is logged.
    pub async fn remove_vmacs(&self, keep: impl Fn(&str) -> bool) {
        let gone: Vec<String> = match self.made.lock() {
            Ok(made) => made.vmacs.keys().filter(|n| !keep(n)).cloned().collect(),
            Err(_) => return,
        };
        for name in &gone {
            match self.interface(name).await {
                Ok(link) => match self.delete_link(name, link.index).await {
                    Ok(()) => tracing::info!("{name}: macvlan deleted"),
                    Err(e) => tracing::error!("{e}"),
                },
                Err(Error::NoSuchInterface { .. }) => {}
                Err(e) => tracing::error!("{e}"),
            }
        }
        let Ok(mut made) = self.made.lock() else {
            return;
        };
        for name in &gone {
            made.vmacs.remove(name);
        }
        let in_use: Vec<String> = made.vmacs.values().flatten().cloned().collect();
        let free: Vec<String> = (made.saved.keys())
            .filter(|n| !in_use.contains(n))
            .cloned()
            .collect();
        for name in free {
            let Some(found) = made.saved.remove(&name) else {
                continue;
            };
            for (key, value) in BASE_KEYS.iter().zip(&found) {
                if let Err(e) = write_sysctl("ipv4", &name, key, value) {
                    tracing::warn!("{e}");
                }
            }
        }
    }

    async fn delete_link(&self, name: &str, index: u32) -> Result<(), Error> {
        match self.handle.link().del(index).execute().await {
            Ok(()) => Ok(()),
            Err(e) if netlink_errno(&e) == Some(libc::ENODEV) => Ok(()),
            Err(e) => Err(Error::netlink(name, "delete the macvlan")(e)),
        }
    }
}

fn poisoned(name: &str) -> Error {
    Error::Io {
        interface: name.to_string(),
        operation: "record the macvlan".to_string(),
        source: std::io::Error::other("a thread panicked holding the record"),
    }
}

/// The link's kind (`IFLA_INFO_KIND`), if it is a virtual link.
fn kind(link: &LinkMessage) -> Option<String> {
    link.attributes.iter().find_map(|a| match a {
        LinkAttribute::LinkInfo(infos) => infos.iter().find_map(|i| match i {
            LinkInfo::Kind(InfoKind::MacVlan) => Some("macvlan".to_string()),
            LinkInfo::Kind(k) => Some(k.to_string()),
            _ => None,
        }),
        _ => None,
    })
}

/// `IFLA_LINK`: the interface a macvlan is on.
fn parent(link: &LinkMessage) -> Option<u32> {
    link.attributes.iter().find_map(|a| match a {
        LinkAttribute::Link(index) => Some(*index),
        _ => None,
    })
}

fn private(link: &LinkMessage) -> bool {
    link.attributes.iter().any(|a| match a {
        LinkAttribute::LinkInfo(infos) => infos.iter().any(|i| match i {
            LinkInfo::Data(InfoData::MacVlan(data)) => data
                .iter()
                .any(|d| matches!(d, InfoMacVlan::Mode(MacVlanMode::Private))),
            _ => false,
        }),
        _ => false,
    })
}

/// `00:00:5e:00:01:33`.
pub fn mac_text(mac: &[u8; 6]) -> String {
    let hex: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    hex.join(":")
}

fn sysctl_path(family: &str, interface: &str, key: &str) -> PathBuf {
    PathBuf::from(format!("/proc/sys/net/{family}/conf/{interface}/{key}"))
}

fn read_sysctl(family: &str, interface: &str, key: &str) -> Result<String, Error> {
    let path = sysctl_path(family, interface, key);
    std::fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .map_err(Error::io(interface, format!("read {}", path.display())))
}

fn write_sysctl(family: &str, interface: &str, key: &str, value: &str) -> Result<(), Error> {
    let path = sysctl_path(family, interface, key);
    std::fs::write(&path, value).map_err(Error::io(
        interface,
        format!("write {value} to {}", path.display()),
    ))
}

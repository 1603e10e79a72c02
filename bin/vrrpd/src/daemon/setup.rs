//! From the configuration to running parts: interfaces looked up, sockets opened, the state
//! machines built, scripts resolved. Everything that can fail at start fails here, with the
//! instance and the reason.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

use ipi_core::Family;

use super::ah::AhState;
use super::plan::{self, UnitKey};
use super::rx::Expect;
use super::script_security::{self, Notifiers, Readers, Scripts, UserError};
use super::scripts::Identity;
use crate::config::{Config, Location, Vmac, VrrpInstance};
use crate::fsm::{
    InitialState, Instance, InstanceParams, ParamsError, SyncGroup, TrackFile, TrackInterface,
    TrackScript,
};
use crate::net::{
    multicast_group, Announcer, Interface, Netlink, Route, Rule, SocketConfig, Vip, VmacSpec,
    VrrpSocket,
};

/// Why a configuration cannot run. Each names the block at fault.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A user scripts are to run as cannot be.
    #[error(transparent)]
    ScriptUser(#[from] UserError),
    /// An instance cannot start.
    #[error("vrrp_instance {name} ({location}): {source}")]
    Instance {
        /// The instance.
        name: String,
        /// Where it is written.
        location: Location,
        /// Why it cannot start (boxed: a network error is large).
        source: Box<InstanceError>,
    },
    /// A unit without instances (a sync group whose members are missing).
    #[error("{0}: no instance")]
    EmptyUnit(UnitKey),
}

/// Why one instance cannot start.
#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    /// An interface, socket or address.
    #[error(transparent)]
    Net(#[from] crate::net::Error),
    /// A track_script without its vrrp_script.
    #[error("track_script {0} names no vrrp_script")]
    UnknownScript(String),
    /// A track_file entry without its track_file block.
    #[error("track_file {0} names no track_file block")]
    UnknownFile(String),
    /// A track_process without its vrrp_track_process.
    #[error("track_process {0} names no vrrp_track_process")]
    UnknownProcess(String),
    /// Parameters the state machine refuses.
    #[error(transparent)]
    Params(#[from] ParamsError),
}

/// One running VRRP instance: its configuration and the IO it needs.
#[derive(Debug)]
pub struct Vr {
    /// Its configuration.
    pub cfg: VrrpInstance,
    /// The interface it runs on.
    pub interface: Interface,
    /// Index of its socket in [`Parts::sockets`].
    pub socket: usize,
    /// Index of the socket its adverts go out on: [`Vr::socket`], or with `use_vmac` (without
    /// `vmac_xmit_base`) the macvlan's ([`vmac_socket`]).
    pub send_socket: usize,
    /// The `use_vmac` macvlan and its socket (index in [`Parts::sockets`]), which hears the
    /// group while the macvlan is up ([`crate::net::vmac`]).
    pub vmac: Option<(Interface, usize)>,
    /// Whether the macvlan is up: the instance is master (or was, before a reload). While it
    /// is, the adverts that the base interface's socket hears are heard on the macvlan's too,
    /// and taken from there only.
    pub vmac_up: std::cell::Cell<bool>,
    /// The VIPs with the interface each goes on.
    pub vips: Vec<(Interface, Vip)>,
    /// `virtual_routes`, added after the VIPs and removed before them.
    pub routes: Vec<Route>,
    /// `virtual_rules`, added after the routes and removed before them.
    pub rules: Vec<Rule>,
    /// Where adverts go: the group or the unicast peers.
    pub destinations: Vec<IpAddr>,
    /// What its group's adverts must look like.
    pub expect: Expect,
    /// Gratuitous ARP / NA sender (None when the interface has no MAC).
    pub announcer: Option<Announcer>,
    /// keepalived's AH (`auth_type AH`): its key and sequence numbers.
    pub ah: Option<AhState>,
    /// Which unit and member it is.
    pub unit: usize,
    /// Its index within the unit.
    pub member: usize,
}

/// The state machines: a lone instance or a sync group.
#[derive(Debug)]
pub enum Unit {
    /// A lone instance.
    One(Box<Instance>),
    /// A sync group and its name.
    Group(SyncGroup, String),
}

impl Unit {
    /// The instance of member `member` (for status).
    pub fn member(&self, member: usize) -> Option<&Instance> {
        match self {
            Unit::One(i) => (member == 0).then_some(i),
            Unit::Group(g, _) => g.member(member),
        }
    }
}

/// Everything built from a configuration.
#[derive(Debug)]
pub struct Parts {
    /// The instances, in configuration order.
    pub vrs: Vec<Vr>,
    /// The state machines.
    pub units: Vec<Unit>,
    /// The sockets, shared by instances on the same interface, family and source.
    pub sockets: Vec<Arc<VrrpSocket>>,
    /// Resolved track scripts: program and identity, by name.
    pub scripts: Scripts,
    /// Who notify scripts run as.
    pub notify_as: Option<Identity>,
    /// The notify commands that may run (found, and not refused by script security).
    pub notifiers: Notifiers,
    /// The notify FIFOs' readers that may run, by FIFO.
    pub readers: Readers,
    /// Every interface an instance tracks (its own included), and every interface a waiting
    /// instance waits for.
    pub tracked_interfaces: BTreeSet<String>,
    /// Instances that wait for an interface that does not exist (yet): FAULT until it
    /// appears ([`start_waiting`]). A sync group waits whole.
    pub waiting: Vec<Waiting>,
    /// What makes each socket shareable, by [`Parts::sockets`] index.
    socket_keys: Sockets,
}

/// An instance that waits for an interface: keepalived's `dynamic_interfaces`, where a missing
/// interface is a FAULT, not a reason to refuse the whole configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The instance.
    pub name: String,
    /// Its VRID.
    pub vrid: u8,
    /// The interface it waits for.
    pub interface: String,
    /// Why it waits, for the log and the status.
    pub reason: String,
}

impl Parts {
    /// The address an instance sends from.
    pub fn source(&self, vr: &Vr) -> IpAddr {
        self.sockets[vr.socket].source()
    }

    /// Whether socket `socket` serves unicast instances only (it has a unicast source). The
    /// interface's multicast socket also serves unicast instances without a source.
    pub fn is_unicast(&self, socket: usize) -> bool {
        self.socket_keys
            .get(socket)
            .is_some_and(|k| k.unicast_source.is_some())
    }

    /// Whether what instance `vr` heard on `socket` is heard on its macvlan's socket too, and
    /// taken from there: `socket` is the base interface's and the macvlan is up (a master's).
    pub fn heard_on_vmac(&self, vr: usize, socket: usize) -> bool {
        let v = &self.vrs[vr];
        v.vmac.is_some() && socket == v.socket && v.vmac_up.get()
    }

    /// Whether another instance on `vr`'s interface and family has `vr`'s VRID in the other
    /// mode (unicast and multicast are separate VRID spaces): then a datagram of that mode
    /// belongs to it, not to `vr`. Without such a twin it is `vr`'s to check, as before.
    pub fn has_twin(&self, vr: usize) -> bool {
        let link =
            |v: &Vr| (self.socket_keys.get(v.socket)).map(|k| (&k.interface, k.family, k.ah));
        let v = &self.vrs[vr];
        self.vrs.iter().any(|o| {
            o.cfg.vrid == v.cfg.vrid
                && o.cfg.is_unicast() != v.cfg.is_unicast()
                && link(o) == link(v)
        })
    }
}

/// The fsm parameters of an instance whose primary address is `primary`.
/// Only the scripts in `enabled` are tracked.
pub fn params(
    c: &Config,
    i: &VrrpInstance,
    primary: IpAddr,
    enabled: &Scripts,
) -> Result<InstanceParams, InstanceError> {
    let mut p = InstanceParams::new(i.vrid, i.priority, primary);
    p.version = i.effective_version(&c.global);
    p.advert_int_cs = i.advert_int_cs;
    p.preempt = i.preempt;
    p.preempt_delay_cs = i.preempt_delay_cs;
    if let Some(state) = i.state {
        p.initial_state = state;
    } else if i.priority == 255 {
        p.initial_state = InitialState::Master;
    }
    p.garp = i.garp;
    p.lower_prio_no_advert = i.lower_prio_no_advert;
    p.preempt_on_lower_priority = i.preempt_on_lower_priority;
    for t in i
        .track_scripts
        .iter()
        .filter(|t| enabled.contains_key(&t.name))
    {
        let s = c
            .script(&t.name)
            .ok_or_else(|| InstanceError::UnknownScript(t.name.clone()))?;
        let mut ts = TrackScript::new(&s.name, t.weight.unwrap_or(s.weight));
        ts.rise = s.rise;
        ts.fall = s.fall;
        ts.init_fail = s.init_fail;
        p.track_scripts.push(ts);
    }
    for t in &i.track_processes {
        let process = c
            .process(&t.name)
            .ok_or_else(|| InstanceError::UnknownProcess(t.name.clone()))?;
        p.track_scripts.push(TrackScript::new(
            super::processes::key(&t.name),
            t.weight.unwrap_or(process.weight),
        ));
    }
    for t in &i.track_files {
        let file = c
            .file(&t.name)
            .ok_or_else(|| InstanceError::UnknownFile(t.name.clone()))?;
        p.track_files.push(TrackFile {
            name: t.name.clone(),
            weight: t.weight.unwrap_or(file.weight),
        });
    }
    if !i.dont_track_primary && !i.track_interfaces.iter().any(|t| t.name == i.interface) {
        p.track_interfaces
            .push(TrackInterface::new(&i.interface, 0));
    }
    for t in &i.track_interfaces {
        p.track_interfaces
            .push(TrackInterface::new(&t.name, t.weight));
    }
    // Never advertise from an address the interface lost: the source is tracked as an
    // interface of weight 0 (FAULT while it is elsewhere), reported by the daemon's address
    // watch.
    if let Some(name) = source_track(i) {
        p.track_interfaces.push(TrackInterface::new(name, 0));
    }
    p.validate()?;
    Ok(p)
}

/// Builds every part: scripts, then each instance's interface, socket and state machine, then
/// the units. `carried` holds the running units a reload keeps ([`plan::Plan::keeps`]); they
/// replace the state machines built here.
pub async fn build(
    c: &Config,
    netlink: &Netlink,
    carried: BTreeMap<UnitKey, Unit>,
) -> Result<Parts, SetupError> {
    let admitted = script_security::admit(c)?;
    let mut parts = Parts {
        vrs: Vec::new(),
        units: Vec::new(),
        sockets: Vec::new(),
        scripts: admitted.scripts,
        notify_as: admitted.notify_as,
        notifiers: admitted.notifiers,
        readers: admitted.readers,
        tracked_interfaces: BTreeSet::new(),
        waiting: waiting(c, netlink).await?,
        socket_keys: Sockets::default(),
    };
    for w in &parts.waiting {
        parts.tracked_interfaces.insert(w.interface.clone());
    }
    let mut instances: BTreeMap<String, Instance> = BTreeMap::new();
    for i in &c.instances {
        if parts.waiting.iter().any(|w| w.name == i.name) {
            continue;
        }
        let (vr, instance) = vr(c, i, netlink, &mut parts).await.map_err(at(i))?;
        parts.vrs.push(vr);
        instances.insert(i.name.clone(), instance);
    }
    units(c, &mut parts, instances, carried)?;
    Ok(parts)
}

fn at(i: &VrrpInstance) -> impl Fn(InstanceError) -> SetupError + '_ {
    |source| SetupError::Instance {
        name: i.name.clone(),
        location: i.location.clone(),
        source: Box::new(source),
    }
}

/// The instances that must wait for an interface: their own or a VIP's `dev` does not exist.
/// A sync group waits whole (its state machine is built for every member). Any other failure
/// to look an interface up is an error.
async fn waiting(c: &Config, netlink: &Netlink) -> Result<Vec<Waiting>, SetupError> {
    let mut missing: BTreeMap<String, (String, String)> = BTreeMap::new();
    for i in &c.instances {
        let devs = std::iter::once(&i.interface).chain(i.held().filter_map(|v| v.dev.as_ref()));
        for dev in devs {
            match netlink.interface(dev).await {
                Ok(_) => {}
                Err(crate::net::Error::NoSuchInterface { .. }) => {
                    let reason = format!("interface {dev} does not exist (yet)");
                    missing.insert(i.name.clone(), (dev.clone(), reason));
                    break;
                }
                Err(e) => return Err(at(i)(InstanceError::Net(e))),
            }
        }
    }
    let mut out = Vec::new();
    for (_, members) in plan::units(c) {
        let Some((first, (dev, reason))) =
            members.iter().find_map(|m| missing.get(m).map(|w| (m, w)))
        else {
            continue;
        };
        for m in &members {
            let Some(i) = c.instance(m) else { continue };
            let reason = if m == first {
                reason.clone()
            } else {
                format!("its sync group waits for {first}: {reason}")
            };
            out.push(Waiting {
                name: m.clone(),
                vrid: i.vrid,
                interface: dev.clone(),
                reason,
            });
        }
    }
    Ok(out)
}

/// Starts every waiting unit whose interfaces all exist now, appending its instances, sockets
/// and state machine to `parts` (nothing running is touched); returns the instances started.
/// A unit whose start fails again waits on, with the new reason.
pub async fn start_waiting(c: &Config, netlink: &Netlink, parts: &mut Parts) -> Vec<String> {
    let still = match waiting(c, netlink).await {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("{e}");
            return Vec::new();
        }
    };
    let mut started = Vec::new();
    for (key, members) in plan::units(c) {
        let waits = |name: &String| parts.waiting.iter().any(|w| &w.name == name);
        if !members.iter().any(waits) || members.iter().any(|m| still.iter().any(|w| &w.name == m))
        {
            continue;
        }
        let vrs_before = parts.vrs.len();
        let mut instances = BTreeMap::new();
        let mut failed = None;
        for i in members.iter().filter_map(|m| c.instance(m)) {
            match vr(c, i, netlink, parts).await {
                Ok((vr, instance)) => {
                    parts.vrs.push(vr);
                    instances.insert(i.name.clone(), instance);
                }
                Err(e) => {
                    failed = Some(format!("{}", at(i)(e)));
                    break;
                }
            }
        }
        if let Some(reason) = failed {
            parts.vrs.truncate(vrs_before);
            tracing::error!("{key}: cannot start yet: {reason}");
            for w in parts
                .waiting
                .iter_mut()
                .filter(|w| members.contains(&w.name))
            {
                w.reason.clone_from(&reason);
            }
            continue;
        }
        if let Err(e) = push_unit(parts, key, &members, &mut instances, None) {
            tracing::error!("{e}");
            continue;
        }
        parts.waiting.retain(|w| !members.contains(&w.name));
        started.extend(members);
    }
    started
}

/// The sockets opened so far, by what makes one shareable. Their index is that of
/// [`Parts::sockets`].
type Sockets = Vec<SocketKey>;

/// What makes a socket shareable between instances.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SocketKey {
    interface: String,
    family: Family,
    /// The source of a unicast-only socket.
    unicast_source: Option<IpAddr>,
    /// keepalived's AH (IP protocol 51), a socket of its own.
    ah: bool,
}

/// One instance's IO and its state machine.
async fn vr(
    c: &Config,
    i: &VrrpInstance,
    netlink: &Netlink,
    parts: &mut Parts,
) -> Result<(Vr, Instance), InstanceError> {
    let interface = netlink.interface(&i.interface).await?;
    let family = if i.is_ipv6() { Family::V6 } else { Family::V4 };
    let vmac = match &i.vmac {
        Some(m) => Some(
            netlink
                .ensure_vmac(&VmacSpec {
                    name: m.name.clone(),
                    base: i.interface.clone(),
                    mac: Vmac::mac(i.vrid, i.is_ipv6()),
                    ipv6: i.is_ipv6(),
                })
                .await?,
        ),
        None => None,
    };
    let socket = socket(i, family, netlink, parts).await?;
    let primary = parts.sockets[socket].source();
    let vmac = match vmac {
        Some(on) => {
            let sends = i.vmac.as_ref().is_some_and(|m| !m.xmit_base);
            if primary.is_ipv6() && sends {
                // Sent from the base interface's link-local address, which must be there.
                netlink.add_address(&on, &link_local(primary)).await?;
            }
            let s = vmac_socket(&on, primary, i.auth_ah, parts)?;
            Some((on, s))
        }
        None => None,
    };
    let send_socket = match (&vmac, &i.vmac) {
        (Some((_, s)), Some(m)) if !m.xmit_base => *s,
        _ => socket,
    };
    let vmac_up = vmac.as_ref().is_some_and(|(on, _)| on.admin_up);
    let vips = vips(i, &interface, vmac.as_ref().map(|(on, _)| on), netlink).await?;
    let routes = routes(i, netlink).await?;
    let params = params(c, i, primary, &parts.scripts)?;
    let source = source_track(i);
    for t in &params.track_interfaces {
        if Some(&t.name) != source.as_ref() {
            parts.tracked_interfaces.insert(t.name.clone());
        }
    }
    let instance = Instance::new(params)?;
    let announcer = Announcer::new(vmac.as_ref().map_or(&interface, |(on, _)| on))
        .ok()
        .map(|a| {
            a.router_flag(crate::net::announce::ipv6_forwarding(&i.interface).unwrap_or(false))
        });
    let vr = Vr {
        expect: Expect::of(c, i),
        cfg: i.clone(),
        interface,
        socket,
        send_socket,
        vmac,
        vmac_up: std::cell::Cell::new(vmac_up),
        vips,
        routes,
        rules: i.virtual_rules.clone(),
        destinations: destinations(i, primary, family),
        announcer,
        ah: i.ah_key().map(AhState::new),
        unit: 0,
        member: 0,
    };
    Ok((vr, instance))
}

/// The index of the socket `i` sends and receives on, opened unless one is already shared.
async fn socket(
    i: &VrrpInstance,
    family: Family,
    netlink: &Netlink,
    parts: &mut Parts,
) -> Result<usize, InstanceError> {
    let source = i.unicast_src_ip.or(i.mcast_src_ip);
    let config = match (source, i.is_unicast()) {
        (Some(src), true) => SocketConfig::unicast(&i.interface, src),
        (src, _) => SocketConfig {
            source: src,
            ..SocketConfig::multicast(&i.interface, family)
        },
    };
    let config = SocketConfig {
        ah: i.auth_ah,
        ..config
    };
    let key = SocketKey {
        interface: i.interface.clone(),
        family,
        unicast_source: config.source.filter(|_| i.is_unicast()),
        ah: config.ah,
    };
    if let Some(n) = parts.socket_keys.iter().position(|k| *k == key) {
        return Ok(n);
    }
    let s = VrrpSocket::open(netlink, &config).await?;
    parts.sockets.push(Arc::new(s));
    parts.socket_keys.push(key);
    Ok(parts.sockets.len() - 1)
}

/// The socket on `vmac` that sends the adverts of a `use_vmac` instance from the virtual MAC
/// address, from `source` (its interface's); keepalived's AH with `ah`. It joins no group: membership there would have
/// the kernel send IGMP reports from the virtual MAC, from the backups as well, and the
/// link's switches would learn the MAC where it does not belong (keepalived has nftables
/// move them to the base interface). The adverts are received on the interface's own socket,
/// which hears the group for the macvlan too.
fn vmac_socket(
    vmac: &Interface,
    source: IpAddr,
    ah: bool,
    parts: &mut Parts,
) -> Result<usize, InstanceError> {
    let family = Family::of(source);
    let key = SocketKey {
        interface: vmac.name.clone(),
        family,
        unicast_source: None,
        ah,
    };
    if let Some(n) = parts.socket_keys.iter().position(|k| *k == key) {
        return Ok(n);
    }
    // IPv4: joined here, not by `open_on`, whose IP_MULTICAST_IF names the source address,
    // which is on another interface.
    let s = VrrpSocket::open_on(vmac, source, source.is_ipv6(), ah)?;
    if source.is_ipv4() {
        s.join_group_v4()?;
    }
    parts.sockets.push(Arc::new(s));
    parts.socket_keys.push(key);
    Ok(parts.sockets.len() - 1)
}

/// `address` as a link-local address of a macvlan: /64, as keepalived adds it.
fn link_local(address: IpAddr) -> Vip {
    Vip {
        address,
        prefix_len: 64,
        label: None,
        preferred_lft: None,
    }
}

/// The addresses `i` holds (VIPs, then excluded ones), each with the interface it goes on
/// ([`VrrpInstance::vip_interface`]: `dev`, else the instance's or its macvlan).
async fn vips(
    i: &VrrpInstance,
    interface: &Interface,
    vmac: Option<&Interface>,
    netlink: &Netlink,
) -> Result<Vec<(Interface, Vip)>, InstanceError> {
    let mut vips = Vec::new();
    for v in i.held() {
        let name = i.vip_interface(v);
        let on = match vmac.filter(|m| m.name == name) {
            Some(m) => m.clone(),
            None if name == interface.name => interface.clone(),
            None => netlink.interface(name).await?,
        };
        vips.push((
            on,
            Vip {
                address: v.address,
                prefix_len: v.prefix_len,
                label: v.label.clone(),
                preferred_lft: v.preferred_lft,
            },
        ));
    }
    Ok(vips)
}

/// The `virtual_routes` of `i` as the kernel takes them (`dev` looked up).
async fn routes(i: &VrrpInstance, netlink: &Netlink) -> Result<Vec<Route>, InstanceError> {
    let mut routes = Vec::new();
    for r in &i.virtual_routes {
        let interface = match &r.dev {
            Some(dev) => Some((netlink.interface(dev).await?.index, dev.clone())),
            None => None,
        };
        routes.push(Route {
            destination: r.destination,
            prefix_len: r.prefix_len,
            gateway: r.via,
            source: r.src,
            interface,
            metric: r.metric,
            table: r.table,
            scope: r.scope,
            kind: r.kind,
        });
    }
    Ok(routes)
}

/// What an instance with a configured source (`unicast_src_ip`, else `mcast_src_ip`) tracks:
/// that the address is on its interface, under this name (in the status's interfaces and
/// the log).
pub fn source_track(i: &VrrpInstance) -> Option<String> {
    let (keyword, address) = match (i.unicast_src_ip, i.mcast_src_ip) {
        (Some(a), _) => ("unicast_src_ip", a),
        (None, Some(a)) => ("mcast_src_ip", a),
        (None, None) => return None,
    };
    Some(format!("{keyword} {address} on {}", i.interface))
}

/// Every configured source to watch: the name it is tracked under, its interface and address.
pub fn sources(c: &Config) -> BTreeSet<(String, String, IpAddr)> {
    c.instances
        .iter()
        .filter_map(|i| {
            let address = i.unicast_src_ip.or(i.mcast_src_ip)?;
            Some((source_track(i)?, i.interface.clone(), address))
        })
        .collect()
}

/// The names of the configuration's `use_vmac` macvlans.
pub fn vmac_names(c: &Config) -> BTreeSet<String> {
    c.instances
        .iter()
        .filter_map(|i| i.vmac.as_ref().map(|m| m.name.clone()))
        .collect()
}

/// A VIP as a reload compares it: the interface it goes on (by name), the address, its prefix
/// length and its label.
pub type VipKey = (String, IpAddr, u8, Option<String>);

/// The addresses `i` holds (VIPs and excluded ones), each with the name of the interface it
/// goes on ([`VrrpInstance::vip_interface`]).
pub fn vip_keys(i: &VrrpInstance) -> BTreeSet<VipKey> {
    i.held()
        .map(|v| {
            let on = i.vip_interface(v).to_string();
            (on, v.address, v.prefix_len, v.label.clone())
        })
        .collect()
}

/// Where adverts go: the unicast peers, else the family's group (RFC 5798 5.1.1.2, 5.1.2.2).
fn destinations(i: &VrrpInstance, primary: IpAddr, family: Family) -> Vec<IpAddr> {
    if i.is_unicast() {
        // A peer list shared by every node (what render writes) names this node too.
        i.unicast_peers
            .iter()
            .copied()
            .filter(|p| *p != primary)
            .collect()
    } else {
        vec![multicast_group(family)]
    }
}

/// The units, in [`plan::units`] order: a carried one where the reload keeps it, else one built
/// from `instances`. Each instance learns its unit and member index.
fn units(
    c: &Config,
    parts: &mut Parts,
    mut instances: BTreeMap<String, Instance>,
    mut carried: BTreeMap<UnitKey, Unit>,
) -> Result<(), SetupError> {
    for (key, members) in plan::units(c) {
        if members
            .iter()
            .any(|m| parts.waiting.iter().any(|w| &w.name == m))
        {
            continue;
        }
        let unit = carried.remove(&key);
        push_unit(parts, key, &members, &mut instances, unit)?;
    }
    Ok(())
}

/// Appends the unit `key` of `members` to `parts`: `carried` if given, else one built from
/// `instances`; each member's [`Vr`] learns its unit and member index.
fn push_unit(
    parts: &mut Parts,
    key: UnitKey,
    members: &[String],
    instances: &mut BTreeMap<String, Instance>,
    carried: Option<Unit>,
) -> Result<(), SetupError> {
    let unit_index = parts.units.len();
    for (m, name) in members.iter().enumerate() {
        if let Some(vr) = parts.vrs.iter_mut().find(|v| &v.cfg.name == name) {
            vr.unit = unit_index;
            vr.member = m;
        }
    }
    let unit = match carried {
        Some(unit) => unit,
        None => {
            let mut built: Vec<Instance> =
                members.iter().filter_map(|n| instances.remove(n)).collect();
            match key {
                UnitKey::Group(group) => Unit::Group(SyncGroup::new(built), group),
                UnitKey::Instance(_) => match built.pop() {
                    Some(one) => Unit::One(Box::new(one)),
                    None => return Err(SetupError::EmptyUnit(key)),
                },
            }
        }
    };
    parts.units.push(unit);
    Ok(())
}

//! From the configuration to running parts: interfaces looked up, sockets opened, the state
//! machines built, scripts resolved. Everything that can fail at start fails here, with the
//! instance and the reason.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

use ipi_core::Family;

use super::rx::Expect;
use super::scripts::{self, Identity};
use crate::config::{Config, VrrpInstance};
use crate::fsm::{InitialState, Instance, InstanceParams, SyncGroup, TrackInterface, TrackScript};
use crate::net::{multicast_group, Announcer, Interface, Netlink, SocketConfig, Vip, VrrpSocket};

/// One running VRRP instance: its configuration and the IO it needs.
#[derive(Debug)]
pub struct Vr {
    /// Its configuration.
    pub cfg: VrrpInstance,
    /// The interface it runs on.
    pub interface: Interface,
    /// Index of its socket in [`Parts::sockets`].
    pub socket: usize,
    /// The VIPs with the interface each goes on.
    pub vips: Vec<(Interface, Vip)>,
    /// Where adverts go: the group or the unicast peers.
    pub destinations: Vec<IpAddr>,
    /// What its group's adverts must look like.
    pub expect: Expect,
    /// Gratuitous ARP / NA sender (None when the interface has no MAC).
    pub announcer: Option<Announcer>,
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
    pub scripts: BTreeMap<String, (std::path::PathBuf, Option<Identity>)>,
    /// Who notify scripts run as.
    pub notify_as: Option<Identity>,
    /// Every interface an instance tracks (its own included).
    pub tracked_interfaces: BTreeSet<String>,
}

impl Parts {
    /// The address an instance sends from.
    pub fn source(&self, vr: &Vr) -> IpAddr {
        self.sockets[vr.socket].source()
    }
}

/// The key a unit is carried over a reload by: its sync group or instance name.
pub fn unit_key(c: &Config, instance: &str) -> String {
    c.sync_groups
        .iter()
        .find(|g| g.members.iter().any(|m| m == instance))
        .map_or_else(
            || format!("instance {instance}"),
            |g| format!("group {}", g.name),
        )
}

/// The fsm parameters of an instance whose primary address is `primary`.
/// Only the scripts in `enabled` are tracked.
pub fn params(
    c: &Config,
    i: &VrrpInstance,
    primary: IpAddr,
    enabled: &BTreeMap<String, (std::path::PathBuf, Option<Identity>)>,
) -> Result<InstanceParams, String> {
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
    for t in i
        .track_scripts
        .iter()
        .filter(|t| enabled.contains_key(&t.name))
    {
        let s = c
            .script(&t.name)
            .ok_or_else(|| format!("track_script {} names no vrrp_script", t.name))?;
        let mut ts = TrackScript::new(&s.name, t.weight.unwrap_or(s.weight));
        ts.rise = s.rise;
        ts.fall = s.fall;
        ts.init_fail = s.init_fail;
        p.track_scripts.push(ts);
    }
    if !i.dont_track_primary && !i.track_interfaces.iter().any(|t| t.name == i.interface) {
        p.track_interfaces
            .push(TrackInterface::new(&i.interface, 0));
    }
    for t in &i.track_interfaces {
        p.track_interfaces
            .push(TrackInterface::new(&t.name, t.weight));
    }
    p.validate().map_err(|e| e.to_string())?;
    Ok(p)
}

/// Builds every part; `carried` holds the units of a previous configuration to keep (by
/// [`unit_key`]) when their instances did not change.
pub async fn build(
    c: &Config,
    netlink: &Netlink,
    mut carried: BTreeMap<String, Unit>,
) -> Result<Parts, String> {
    let mut parts = Parts {
        vrs: Vec::new(),
        units: Vec::new(),
        sockets: Vec::new(),
        scripts: BTreeMap::new(),
        notify_as: None,
        tracked_interfaces: BTreeSet::new(),
    };
    let script_user = c
        .global
        .script_user
        .as_ref()
        .map(scripts::identity)
        .transpose()?;
    parts.notify_as = script_user;
    for s in &c.scripts {
        // As keepalived: a script that cannot be found, or that script security refuses, is
        // disabled (logged, and tracked by nobody) rather than stopping every instance.
        let program = scripts::program(&s.command).and_then(|program| {
            if c.global.enable_script_security {
                scripts::check_secure(&program)?;
            }
            Ok(program)
        });
        let program = match program {
            Ok(program) => program,
            Err(e) => {
                tracing::error!(
                    "vrrp_script {}: {e}: disabled, no instance tracks it",
                    s.name
                );
                continue;
            }
        };
        let who = s
            .user
            .as_ref()
            .map(scripts::identity)
            .transpose()
            .map_err(|e| format!("vrrp_script {}: {e}", s.name))?
            .or(script_user);
        parts.scripts.insert(s.name.clone(), (program, who));
    }
    let mut socket_keys: Vec<(String, Family, Option<IpAddr>)> = Vec::new();
    let mut instances: BTreeMap<String, Instance> = BTreeMap::new();
    for i in &c.instances {
        let at = |e: String| format!("vrrp_instance {} ({}): {e}", i.name, i.location);
        let interface = netlink
            .interface(&i.interface)
            .await
            .map_err(|e| at(e.to_string()))?;
        let family = if i.is_ipv6() { Family::V6 } else { Family::V4 };
        let source = i.unicast_src_ip.or(i.mcast_src_ip);
        let config = match (source, i.is_unicast()) {
            (Some(src), true) => SocketConfig::unicast(&i.interface, src),
            (src, _) => SocketConfig {
                source: src,
                ..SocketConfig::multicast(&i.interface, family)
            },
        };
        let key = (
            i.interface.clone(),
            family,
            config.source.filter(|_| i.is_unicast()),
        );
        let socket = match socket_keys.iter().position(|k| *k == key) {
            Some(n) => n,
            None => {
                let s = VrrpSocket::open(netlink, &config)
                    .await
                    .map_err(|e| at(e.to_string()))?;
                parts.sockets.push(Arc::new(s));
                socket_keys.push(key);
                parts.sockets.len() - 1
            }
        };
        let primary = parts.sockets[socket].source();
        let mut vips = Vec::new();
        for v in &i.vips {
            let on = match &v.dev {
                Some(dev) => netlink
                    .interface(dev)
                    .await
                    .map_err(|e| at(e.to_string()))?,
                None => interface.clone(),
            };
            vips.push((
                on,
                Vip {
                    address: v.address,
                    prefix_len: v.prefix_len,
                    label: v.label.clone(),
                },
            ));
        }
        // A peer list shared by every node (what render writes) names this node too.
        let destinations = if i.is_unicast() {
            i.unicast_peers
                .iter()
                .copied()
                .filter(|p| *p != primary)
                .collect()
        } else {
            vec![multicast_group(family)]
        };
        let params = params(c, i, primary, &parts.scripts).map_err(at)?;
        for t in &params.track_interfaces {
            parts.tracked_interfaces.insert(t.name.clone());
        }
        let version = params.version;
        instances.insert(
            i.name.clone(),
            Instance::new(params).map_err(|e| at(e.to_string()))?,
        );
        let announcer = Announcer::new(&interface).ok().map(|a| {
            a.router_flag(crate::net::announce::ipv6_forwarding(&i.interface).unwrap_or(false))
        });
        parts.vrs.push(Vr {
            expect: Expect {
                vrid: i.vrid,
                version,
                auth: i.auth(),
                addresses: i.vips.iter().map(|v| v.address).collect(),
                peers: i.unicast_peers.clone(),
            },
            cfg: i.clone(),
            interface,
            socket,
            vips,
            destinations,
            announcer,
            unit: 0,
            member: 0,
        });
    }
    // Units: each sync group, then each instance in none.
    let mut order: Vec<(String, Vec<String>)> = c
        .sync_groups
        .iter()
        .map(|g| (format!("group {}", g.name), g.members.clone()))
        .collect();
    for i in &c.instances {
        if !c.sync_groups.iter().any(|g| g.members.contains(&i.name)) {
            order.push((format!("instance {}", i.name), vec![i.name.clone()]));
        }
    }
    for (key, members) in order {
        let unit_index = parts.units.len();
        for (m, name) in members.iter().enumerate() {
            if let Some(vr) = parts.vrs.iter_mut().find(|v| &v.cfg.name == name) {
                vr.unit = unit_index;
                vr.member = m;
            }
        }
        let unit = match carried.remove(&key) {
            Some(unit) => unit,
            None => {
                let mut built: Vec<Instance> =
                    members.iter().filter_map(|n| instances.remove(n)).collect();
                match key.strip_prefix("group ") {
                    Some(group) => Unit::Group(SyncGroup::new(built), group.to_string()),
                    None => match built.pop() {
                        Some(one) => Unit::One(Box::new(one)),
                        None => return Err(format!("{key}: no instance")),
                    },
                }
            }
        };
        parts.units.push(unit);
    }
    Ok(parts)
}

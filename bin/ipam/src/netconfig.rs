//! NetConfig (the networks addresses come from) and IPSet (a request for an address on some of
//! them), as the OpenStack infra-operator defines them (network.openstack.org/v1beta1).
//!
//! Reading checks the infra-operator's rules and what it lacks (overlapping cidrs and ranges);
//! every problem is listed with its place (`networks[1] InternalApi / subnets[0] subnet1:
//! gateway ...`), and nothing is reserved from a NetConfig with any problem.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use ipi_store::object::{parse_object, read, Problems};
use ipi_store::range::{Space, Span};
use ipi_store::store::Store;
use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};

use crate::alloc::{self, AllocError, Order, Pool};
use crate::answered::{self, Check};

/// The MTU of a network that names none.
pub const DEFAULT_MTU: u32 = 1500;

/// A NetConfig's networks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NetConfigSpec {
    networks: Vec<Network>,
}

/// One network.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Network {
    /// Its name.
    pub name: String,
    /// Its MTU.
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// Its DNS domain.
    #[serde(default)]
    pub dns_domain: Option<String>,
    /// Its subnets.
    pub subnets: Vec<Subnet>,
}

fn default_mtu() -> u32 {
    DEFAULT_MTU
}

/// One subnet of a network.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Subnet {
    /// Its name (unique within the network).
    pub name: String,
    /// Its network address and prefix.
    pub cidr: String,
    /// Its VLAN.
    #[serde(default)]
    pub vlan: Option<u16>,
    /// Its gateway.
    #[serde(default)]
    pub gateway: Option<String>,
    /// Its routes.
    #[serde(default)]
    pub routes: Vec<Route>,
    /// Where addresses are handed out from, in order.
    #[serde(default)]
    pub allocation_ranges: Vec<AllocationRange>,
    /// Addresses never handed out.
    #[serde(default)]
    pub exclude_addresses: Vec<String>,
}

/// A route.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// The destination network.
    pub destination: String,
    /// The next hop.
    pub nexthop: String,
}

/// An inclusive range of addresses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllocationRange {
    /// The first address.
    pub start: String,
    /// The last address.
    pub end: String,
}

/// A subnet read and checked: the pool its addresses come from.
#[derive(Debug, Clone)]
pub struct CheckedSubnet {
    /// The network's name.
    pub network: String,
    /// The subnet's name.
    pub subnet: String,
    /// Its cidr.
    pub cidr: IpNetwork,
    /// Its gateway.
    pub gateway: Option<IpAddr>,
    /// Its VLAN.
    pub vlan: Option<u16>,
    /// The network's MTU.
    pub mtu: u32,
    /// The network's DNS domain.
    pub dns_domain: Option<String>,
    /// Its routes (as checked).
    pub routes: Vec<Route>,
    /// Its pool in the store.
    pub pool: Pool,
}

/// A NetConfig with no problem.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// Every subnet, in the file's order.
    pub subnets: Vec<CheckedSubnet>,
}

/// The pool name of a NetConfig subnet.
pub fn pool_name(network: &str, subnet: &str) -> String {
    format!("netconfig/{network}/{subnet}")
}

fn ip(text: &str) -> Result<IpAddr, String> {
    ipi_store::range::parse_ip(text).map_err(|e| e.to_string())
}

impl NetConfig {
    /// Reads and checks a NetConfig file; Err lists every problem.
    pub fn load(path: &Path) -> Result<Self, Problems> {
        Self::parse(&read(path)?, &path.display().to_string())
    }

    /// Reads and checks a NetConfig from `text`, named `name` in errors.
    pub fn parse(text: &str, name: &str) -> Result<Self, Problems> {
        let (_, spec): (_, NetConfigSpec) = parse_object(text, name, "NetConfig")?;
        Self::check(&spec.networks)
            .map_err(|p| Problems(p.into_iter().map(|m| format!("{name}: {m}")).collect()))
    }

    fn check(networks: &[Network]) -> Result<Self, Vec<String>> {
        let mut problems = Vec::new();
        let mut subnets: Vec<CheckedSubnet> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (n, net) in networks.iter().enumerate() {
            let at = format!("networks[{n}] {}", net.name);
            if net.name.is_empty() {
                problems.push(format!("networks[{n}]: name is required"));
            } else if names.contains(&net.name.as_str()) {
                problems.push(format!("{at}: network name {:?} is used twice", net.name));
            }
            names.push(&net.name);
            if !(68..=65535).contains(&net.mtu) {
                problems.push(format!("{at}: mtu {} is not between 68 and 65535", net.mtu));
            }
            if let Some(d) = &net.dns_domain {
                if let Err(e) = ipi_core::name::check_name(d) {
                    problems.push(format!("{at}: dnsDomain {d:?}: {e}"));
                }
            }
            if net.subnets.is_empty() {
                problems.push(format!("{at}: has no subnets"));
            }
            let mut family: Option<bool> = None;
            let mut subnet_names: Vec<&str> = Vec::new();
            for (s, sub) in net.subnets.iter().enumerate() {
                let at = format!("{at} / subnets[{s}] {}", sub.name);
                if sub.name.is_empty() {
                    problems.push(format!("{at}: name is required"));
                } else if subnet_names.contains(&sub.name.as_str()) {
                    problems.push(format!("{at}: subnet name {:?} is used twice", sub.name));
                }
                subnet_names.push(&sub.name);
                let Some(checked) = check_subnet(net, sub, &at, &mut problems) else {
                    continue;
                };
                let v4 = checked.cidr.is_ipv4();
                if family.is_some_and(|f| f != v4) {
                    problems.push(format!(
                        "{at}: {} mixes address families with the network's other subnets",
                        checked.cidr
                    ));
                }
                family = Some(v4);
                for other in &subnets {
                    if other.cidr == checked.cidr {
                        problems.push(format!(
                            "{at}: cidr {} is already subnet {} of network {}",
                            checked.cidr, other.subnet, other.network
                        ));
                    } else if Span::of_network(other.cidr).overlaps(&Span::of_network(checked.cidr))
                    {
                        problems.push(format!(
                            "{at}: cidr {} overlaps {} (subnet {} of network {})",
                            checked.cidr, other.cidr, other.subnet, other.network
                        ));
                    }
                }
                subnets.push(checked);
            }
        }
        if problems.is_empty() {
            Ok(Self { subnets })
        } else {
            Err(problems)
        }
    }

    /// The subnet `subnet` of network `network`.
    pub fn subnet(&self, network: &str, subnet: &str) -> Option<&CheckedSubnet> {
        self.subnets
            .iter()
            .find(|s| s.network == network && s.subnet == subnet)
    }
}

/// An address of a subnet: parsed, of the cidr's family, inside it; else a problem.
fn address_in(
    cidr: IpNetwork,
    at: &str,
    what: &str,
    text: &str,
    problems: &mut Vec<String>,
) -> Option<IpAddr> {
    match ip(text) {
        Err(e) => problems.push(format!("{at}: {what}: {e}")),
        Ok(a) if a.is_ipv4() != cidr.is_ipv4() => problems.push(format!(
            "{at}: {what} {a} is not of the address family of {cidr}"
        )),
        Ok(a) if !cidr.contains(a) => problems.push(format!("{at}: {what} {a} is outside {cidr}")),
        Ok(a) => return Some(a),
    }
    None
}

/// Checks one subnet; `None` when its cidr is unusable (nothing else can be checked then).
fn check_subnet(
    net: &Network,
    sub: &Subnet,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<CheckedSubnet> {
    let cidr: IpNetwork = match sub.cidr.parse() {
        Ok(c) => c,
        Err(_) => {
            problems.push(format!(
                "{at}: cidr {:?} is not a network (ADDRESS/PREFIX)",
                sub.cidr
            ));
            return None;
        }
    };
    if cidr.network() != cidr.ip() {
        problems.push(format!(
            "{at}: cidr {} has host bits set (the network is {}/{})",
            sub.cidr,
            cidr.network(),
            cidr.prefix()
        ));
    }
    let gateway = sub
        .gateway
        .as_deref()
        .and_then(|g| address_in(cidr, at, "gateway", g, problems));
    let excluded: Vec<Span> = sub
        .exclude_addresses
        .iter()
        .filter_map(|e| address_in(cidr, at, "excludeAddresses", e, problems))
        .map(Span::single)
        .collect();
    for r in &sub.routes {
        address_in(cidr, at, "route nexthop", &r.nexthop, problems);
    }
    let spans = check_ranges(sub, cidr, at, problems);
    check_destinations(sub, cidr, at, problems);
    let mut space = Space::new(spans);
    space.network = Some(cidr);
    space.gateway = gateway;
    space.excluded = excluded;
    Some(CheckedSubnet {
        network: net.name.clone(),
        subnet: sub.name.clone(),
        cidr,
        gateway,
        vlan: sub.vlan,
        mtu: net.mtu,
        dns_domain: net.dns_domain.clone(),
        routes: sub.routes.clone(),
        pool: Pool {
            name: pool_name(&net.name, &sub.name),
            space,
            order: Order::Lowest,
        },
    })
}

/// A subnet's allocation ranges as spans: each inside the cidr, start before end, none
/// overlapping another; a range that is not is a problem (and no span).
fn check_ranges(sub: &Subnet, cidr: IpNetwork, at: &str, problems: &mut Vec<String>) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for (i, r) in sub.allocation_ranges.iter().enumerate() {
        let what = format!("allocationRanges[{i}]");
        let (Some(start), Some(end)) = (
            address_in(cidr, at, &format!("{what} start"), &r.start, problems),
            address_in(cidr, at, &format!("{what} end"), &r.end, problems),
        ) else {
            continue;
        };
        if ipi_store::range::to_u128(start) >= ipi_store::range::to_u128(end) {
            problems.push(format!(
                "{at}: {what}: start {start} is not before end {end}"
            ));
            continue;
        }
        let span = Span {
            first: start,
            last: end,
        };
        if let Some(other) = spans.iter().find(|o| o.overlaps(&span)) {
            problems.push(format!("{at}: {what} {span} overlaps {other}"));
        }
        spans.push(span);
    }
    if sub.allocation_ranges.is_empty() {
        problems.push(format!("{at}: has no allocationRanges"));
    }
    spans
}

/// A subnet's route destinations: networks of the cidr's family; else a problem.
fn check_destinations(sub: &Subnet, cidr: IpNetwork, at: &str, problems: &mut Vec<String>) {
    for r in &sub.routes {
        match r.destination.parse::<IpNetwork>() {
            Err(_) => problems.push(format!(
                "{at}: route destination {:?} is not a network",
                r.destination
            )),
            Ok(d) if d.is_ipv4() != cidr.is_ipv4() => problems.push(format!(
                "{at}: route destination {d} is not of the address family of {cidr}"
            )),
            Ok(_) => {}
        }
    }
}

/// An IPSet's request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct IpSetSpec {
    networks: Vec<IpSetNetwork>,
    /// Immutable in the infra-operator; read and ignored here.
    #[serde(default)]
    #[allow(dead_code)]
    immutable: Option<bool>,
}

/// One network an IPSet asks an address on.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpSetNetwork {
    /// The network's name.
    pub name: String,
    /// The subnet's name.
    pub subnet_name: String,
    /// The address wanted, if one is.
    #[serde(default, rename = "fixedIP")]
    pub fixed_ip: Option<String>,
    /// Whether the node's default route goes through this subnet's gateway.
    #[serde(default)]
    pub default_route: Option<bool>,
}

/// An IPSet checked against a NetConfig: what to reserve, nothing reserved yet.
#[derive(Debug, Clone)]
pub struct IpSet {
    /// The IPSet's name: the owner of its reservations.
    pub name: String,
    /// Per network asked for: the subnet, the fixed address, the default route.
    pub requests: Vec<(CheckedSubnet, Option<IpAddr>, bool)>,
}

impl IpSet {
    /// Reads an IPSet and checks it against `netconfig`; Err lists every problem.
    pub fn load(path: &Path, netconfig: &NetConfig) -> Result<Self, Problems> {
        Self::parse(&read(path)?, &path.display().to_string(), netconfig)
    }

    /// Reads an IPSet from `text`, named `file` in errors, and checks it against `netconfig`.
    pub fn parse(text: &str, file: &str, netconfig: &NetConfig) -> Result<Self, Problems> {
        let (meta, spec): (_, IpSetSpec) = parse_object(text, file, "IPSet")?;
        let mut problems = Vec::new();
        if meta.name.is_empty() {
            problems.push(format!(
                "{file}: metadata.name is required (it names the reservations)"
            ));
        }
        let mut requests: Vec<(CheckedSubnet, Option<IpAddr>, bool)> = Vec::new();
        let mut default_family: Vec<bool> = Vec::new();
        for (i, n) in spec.networks.iter().enumerate() {
            let at = format!("{file}: networks[{i}] {}/{}", n.name, n.subnet_name);
            let Some(sub) = netconfig.subnet(&n.name, &n.subnet_name) else {
                problems.push(if netconfig.subnets.iter().any(|s| s.network == n.name) {
                    format!("{at}: network {} has no subnet {:?}", n.name, n.subnet_name)
                } else {
                    format!("{at}: the NetConfig has no network {:?}", n.name)
                });
                continue;
            };
            if requests.iter().any(|(s, _, _)| s.network == sub.network) {
                problems.push(format!("{at}: network {} is asked for twice", n.name));
            }
            let fixed = match n.fixed_ip.as_deref().map(ip).transpose() {
                Ok(f) => f,
                Err(e) => {
                    problems.push(format!("{at}: fixedIP: {e}"));
                    None
                }
            };
            if let Some(f) = fixed {
                if let Some(why) = sub.pool.space.refusal(f) {
                    problems.push(format!("{at}: fixedIP {why}"));
                }
            }
            let default_route = n.default_route.unwrap_or(false);
            if default_route {
                let v4 = sub.cidr.is_ipv4();
                if sub.gateway.is_none() {
                    problems.push(format!(
                        "{at}: defaultRoute needs a gateway, and subnet {} has none",
                        sub.subnet
                    ));
                } else if default_family.contains(&v4) {
                    problems.push(format!(
                        "{at}: a second defaultRoute for IPv{} (one per address family)",
                        if v4 { 4 } else { 6 }
                    ));
                }
                default_family.push(v4);
            }
            requests.push((sub.clone(), fixed, default_route));
        }
        if problems.is_empty() {
            Ok(Self {
                name: meta.name,
                requests,
            })
        } else {
            Err(Problems(problems))
        }
    }

    /// Reserves an address on every network asked for (the same ones again for the same
    /// IPSet), and releases what the IPSet held on networks it no longer asks for. All or
    /// nothing: when one network cannot give an address, what this call took is given back.
    /// An address just taken that `check` finds answered on the wire is skipped and marked
    /// ([`crate::answered`]).
    pub fn reserve(
        &self,
        store: &mut dyn Store,
        netconfig: &NetConfig,
        check: &mut Check,
    ) -> Result<Vec<Reservation>, AllocError> {
        // What this call changed: the pool, and what the IPSet held there before (to go back to
        // when a later network cannot give an address).
        let mut changed: Vec<(&Pool, Option<IpAddr>)> = Vec::new();
        let mut out = Vec::new();
        for (sub, fixed, default_route) in &self.requests {
            let before = store.owned(&sub.pool.name, &self.name)?.map(|(ip, _)| ip);
            match answered::reserve(store, &sub.pool, &self.name, *fixed, check) {
                Ok(held) => {
                    if held.new {
                        changed.push((&sub.pool, before));
                    }
                    out.push(Reservation::new(sub, held.ip, *default_route));
                }
                Err(e) => {
                    for (pool, before) in changed {
                        // Best effort: the error that stopped us is the one to report. An
                        // address moved away from is taken back (this call freed it, so it is
                        // free unless another machine took it meanwhile).
                        let _ = match before {
                            Some(ip) => alloc::reserve(store, pool, &self.name, Some(ip)).map(drop),
                            None => alloc::release(store, pool, &self.name).map(drop),
                        };
                    }
                    return Err(e);
                }
            }
        }
        for sub in &netconfig.subnets {
            if !self
                .requests
                .iter()
                .any(|(s, _, _)| s.pool.name == sub.pool.name)
            {
                alloc::release(store, &sub.pool, &self.name)?;
            }
        }
        out.sort_by(|a, b| (&a.network, &a.subnet).cmp(&(&b.network, &b.subnet)));
        Ok(out)
    }
}

/// One entry of an IPSet's `status.reservations`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reservation {
    /// The address.
    pub address: String,
    /// The subnet's cidr.
    pub cidr: String,
    /// The network's DNS domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_domain: Option<String>,
    /// The subnet's gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// The network's MTU.
    pub mtu: u32,
    /// The network.
    pub network: String,
    /// The subnet's routes, and the default route through its gateway when asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// The subnet.
    pub subnet: String,
    /// The subnet's VLAN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
}

impl Reservation {
    fn new(sub: &CheckedSubnet, ip: IpAddr, default_route: bool) -> Self {
        let mut routes = sub.routes.clone();
        if let (true, Some(gw)) = (default_route, sub.gateway) {
            let any = if gw.is_ipv4() { "0.0.0.0/0" } else { "::/0" };
            routes.push(Route {
                destination: any.into(),
                nexthop: gw.to_string(),
            });
        }
        Self {
            address: ip.to_string(),
            cidr: sub.cidr.to_string(),
            dns_domain: sub.dns_domain.clone(),
            gateway: sub.gateway.map(|g| g.to_string()),
            mtu: sub.mtu,
            network: sub.network.clone(),
            routes,
            subnet: sub.subnet.clone(),
            vlan: sub.vlan,
        }
    }
}

/// `status.reservations` as YAML or JSON.
pub fn render(reservations: &[Reservation], json: bool) -> String {
    let mut doc = BTreeMap::new();
    doc.insert("reservations", reservations);
    if json {
        serde_json::to_string_pretty(&doc)
            .map(|s| s + "\n")
            .unwrap_or_default()
    } else {
        serde_norway::to_string(&doc).unwrap_or_default()
    }
}

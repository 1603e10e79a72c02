//! The pool mode: every address reserved from a MetalLB IPAddressPool in ipam's store held by
//! one VRRP v3 instance, unicast among the nodes its L2Advertisement selects.
//!
//! - [`spread`]: rendezvous hashing, the order in which nodes lead an address.
//! - [`vrid`]: VRIDs that do not move when reservations come and go.
//! - [`follow`]: the store followed by a task on the daemon's runtime; the daemon reloads on a
//!   change.
//!
//! The store and the MetalLB files are read by the `ipi_store` library, which ipam writes the
//! store with (the store, the IPAddressPool and L2Advertisement readers): one reader of each,
//! shared, not copied. [`build`] is a plain
//! function of what was read, so every node that reads the same store runs the same
//! priorities.

pub mod follow;
pub mod spread;
pub mod vrid;

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipi_core::vrrp::Version;
use ipi_core::{Inventory, Node};
use ipi_store::l2adv::{node_labels, L2Advertisement};
use ipi_store::pool::AddressPool;
use ipi_store::store::{Record, StoreError};

use crate::config::{
    self, Config, ConfigErrors, GlobalDefs, Location, Service, VirtualAddress, VrrpInstance,
};

/// The VRRP advert interval of a pool's instances: 0.1 s (RFC 5798 5.2.7, in centiseconds), so
/// a dead node's addresses move after Master_Down_Interval, about 0.34 s.
pub const ADVERT_CS: u16 = 10;

/// Where the pool mode's inputs are (the command line's `--pool ...`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The IPAddressPool.
    pub pool: PathBuf,
    /// The L2Advertisement.
    pub l2advertisement: PathBuf,
    /// ipam's store URL.
    pub store: String,
    /// The node inventory.
    pub nodes: PathBuf,
    /// This node's name in the inventory.
    pub node: String,
    /// The interface, when the L2Advertisement names none or several.
    pub interface: Option<String>,
    /// The cluster's install-config.yaml: its API and Ingress VRIDs and VIPs are avoided.
    pub cluster: Option<PathBuf>,
}

/// Why the pool mode cannot run. Each names the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The IPAddressPool or the L2Advertisement is wrong, or they do not fit together, the
    /// inventory or the cluster.
    #[error("{}", .0.join("\n"))]
    Problems(Vec<String>),
    /// The node inventory cannot be read.
    #[error(transparent)]
    Inventory(#[from] ipi_core::InventoryError),
    /// The install-config.yaml cannot be read.
    #[error(transparent)]
    Cluster(#[from] ipi_core::ClusterError),
    /// The store cannot be read.
    #[error("--store: {0}")]
    Store(#[from] StoreError),
    /// What was built does not read back (a bug: it names the instance).
    #[error(transparent)]
    Config(#[from] ConfigErrors),
}

impl From<ipi_store::object::Problems> for PoolError {
    fn from(p: ipi_store::object::Problems) -> Self {
        PoolError::Problems(p.0)
    }
}

/// What the files say, checked: everything [`build`] needs but the reservations.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The pool.
    pub pool: AddressPool,
    /// This node.
    pub node: Node,
    /// The nodes the L2Advertisement selects, this one included or not, sorted by name.
    pub eligible: Vec<Node>,
    /// The interface the addresses are held on.
    pub interface: String,
    /// VRIDs in use on the interface by the cluster's API and Ingress instances.
    pub reserved_vrids: BTreeSet<u8>,
}

impl Spec {
    /// The pool's name in ipam's store.
    pub fn store_pool(&self) -> &str {
        &self.pool.pool.name
    }
}

/// Reads and checks the pool mode's files.
pub fn load_spec(o: &Options) -> Result<Spec, PoolError> {
    let pool = AddressPool::load(&o.pool)?;
    let adv = L2Advertisement::load(&o.l2advertisement)?;
    let inventory = Inventory::load(&o.nodes)?;
    let adv_file = o.l2advertisement.display().to_string();
    let mut problems = Vec::new();
    if !adv.covers(&pool) {
        problems.push(format!(
            "{adv_file}: spec.ipAddressPools {:?} and spec.ipAddressPoolSelectors do not \
             select pool {:?} ({})",
            adv.pools,
            pool.name,
            o.pool.display()
        ));
    }
    let node = inventory.get(&o.node).cloned();
    if node.is_none() {
        problems.push(format!(
            "{}: no node {:?} (--node; the inventory has {})",
            o.nodes.display(),
            o.node,
            names(inventory.nodes())
        ));
    }
    let interface = interface(&adv, &adv_file, o.interface.as_deref()).map_err(|p| vec![p]);
    let cluster = o
        .cluster
        .as_deref()
        .map(|c| ipi_core::Cluster::load(c, None))
        .transpose()?;
    overlaps(&pool, &o.pool, &inventory, cluster.as_ref(), &mut problems);
    match (node, interface, problems.is_empty()) {
        (Some(node), Ok(interface), true) => Ok(Spec {
            eligible: (inventory.nodes().iter())
                .filter(|n| adv.selects_node(&node_labels(n)))
                .cloned()
                .collect(),
            reserved_vrids: cluster
                .map(|c| BTreeSet::from([c.vrids().api, c.vrids().ingress]))
                .unwrap_or_default(),
            pool,
            node,
            interface,
        }),
        (_, interface, _) => {
            problems.extend(interface.err().unwrap_or_default());
            Err(PoolError::Problems(problems))
        }
    }
}

fn names(nodes: &[Node]) -> String {
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The interface to hold the addresses on: `--interface` (one the L2Advertisement names, if it
/// names any), or the first the L2Advertisement names that exists here.
fn interface(adv: &L2Advertisement, file: &str, given: Option<&str>) -> Result<String, String> {
    if let Some(name) = given {
        if !adv.interfaces.is_empty() && !adv.interfaces.iter().any(|i| i == name) {
            return Err(format!(
                "{file}: spec.interfaces {:?} does not name --interface {name}",
                adv.interfaces
            ));
        }
        return Ok(name.to_owned());
    }
    if adv.interfaces.is_empty() {
        return Err(format!(
            "{file}: spec.interfaces names none: give --interface IF"
        ));
    }
    adv.interfaces
        .iter()
        .find(|i| nix::net::if_::if_nametoindex(i.as_str()).is_ok())
        .cloned()
        .ok_or_else(|| {
            format!(
                "{file}: spec.interfaces: none of {:?} exists on this node",
                adv.interfaces
            )
        })
}

/// Pool addresses that are a node's or one of the cluster's VIPs: refused.
fn overlaps(
    pool: &AddressPool,
    file: &Path,
    inventory: &Inventory,
    cluster: Option<&ipi_core::Cluster>,
    problems: &mut Vec<String>,
) {
    let spans = &pool.pool.space.spans;
    let within = |ip: &IpAddr| spans.iter().position(|s| s.contains(*ip));
    for node in inventory.nodes() {
        for a in &node.addresses {
            if let Some(i) = within(a) {
                problems.push(format!(
                    "{}: spec.addresses[{i}] {} holds {a}, an address of node {}",
                    file.display(),
                    spans[i],
                    node.name
                ));
            }
        }
    }
    let vips = cluster.map(|c| (c.api_vips.iter().chain(&c.ingress_vips)).collect::<Vec<_>>());
    for vip in vips.unwrap_or_default() {
        if let Some(i) = within(vip) {
            problems.push(format!(
                "{}: spec.addresses[{i}] {} holds {vip}, a VIP of the cluster (--pool-cluster)",
                file.display(),
                spans[i]
            ));
        }
    }
}

/// The configuration that holds `reservations` (the store's listing of the pool) on this node:
/// one instance per address, unicast among the eligible nodes, priorities in rendezvous order.
/// A reservation outside the pool is left out with a warning (the pool file changed under it).
pub fn build(spec: &Spec, reservations: &[(IpAddr, Record)]) -> Result<Config, PoolError> {
    let mut config = Config {
        global: GlobalDefs {
            vrrp_version: Version::V3,
            ..GlobalDefs::default()
        },
        ..Config::default()
    };
    if !spec.eligible.iter().any(|n| n.name == spec.node.name) {
        tracing::info!(
            "node {} is not selected by the L2Advertisement: it holds none of pool {}",
            spec.node.name,
            spec.pool.name
        );
        return Ok(config);
    }
    let spans = &spec.pool.pool.space.spans;
    let mut families: BTreeMap<bool, Vec<(IpAddr, u128, &Record)>> = BTreeMap::new();
    for (ip, record) in reservations {
        match vrid::offset(spans, *ip) {
            Some(offset) => families
                .entry(ip.is_ipv4())
                .or_default()
                .push((*ip, offset, record)),
            None => tracing::warn!(
                "{ip} is reserved in the store's {} but outside the pool's addresses: not held",
                spec.store_pool()
            ),
        }
    }
    let mut problems = Vec::new();
    for (v4, held) in families {
        let placed: Vec<(IpAddr, u128)> = held.iter().map(|(ip, o, _)| (*ip, *o)).collect();
        let vrids = match vrid::choose(&placed, &spec.reserved_vrids) {
            Ok(vrids) => vrids,
            Err(free) => {
                problems.push(format!(
                    "pool {}: {} IPv{} addresses reserved, but only {free} VRIDs are free on {}",
                    spec.pool.name,
                    held.len(),
                    if v4 { 4 } else { 6 },
                    spec.interface
                ));
                continue;
            }
        };
        for ((ip, _, record), vrid) in held.iter().zip(vrids) {
            match instance(spec, *ip, vrid, record) {
                Ok((i, service)) => {
                    config.services.insert(i.name.clone(), service);
                    config.instances.push(i);
                }
                Err(p) => problems.push(p),
            }
        }
    }
    if !problems.is_empty() {
        return Err(PoolError::Problems(problems));
    }
    // What we build must be what we would read.
    let services = std::mem::take(&mut config.services);
    let mut read = config::parse_str(&config::write::write(&config), "(pool)")?;
    read.services = services;
    Ok(read)
}

/// The address of `node` in the family of `ip`.
fn address_like(node: &Node, ip: IpAddr) -> Option<IpAddr> {
    node.addresses
        .iter()
        .find(|a| a.is_ipv4() == ip.is_ipv4())
        .copied()
}

/// The instance that holds `ip` on this node, and what `vrrpd status` says of it.
fn instance(
    spec: &Spec,
    ip: IpAddr,
    vrid: u8,
    record: &Record,
) -> Result<(VrrpInstance, Service), String> {
    let Some(source) = address_like(&spec.node, ip) else {
        return Err(format!(
            "node {} has no IPv{} address in the inventory to hold {ip} from",
            spec.node.name,
            if ip.is_ipv4() { 4 } else { 6 }
        ));
    };
    let key = ip.to_string();
    let ranked = spread::rank(&spec.eligible, |n| n.name.as_str(), &key);
    let rank = ranked
        .iter()
        .position(|n| n.name == spec.node.name)
        .unwrap_or(0);
    let nodes: Vec<(String, IpAddr)> = (ranked.iter())
        .filter_map(|n| address_like(n, ip).map(|a| (n.name.clone(), a)))
        .collect();
    let name = format!("{}_{}", spec.pool.name, key);
    let mut i = VrrpInstance::new(name, GlobalDefs::default().garp, Location::new("(pool)", 0));
    i.interface.clone_from(&spec.interface);
    i.vrid = vrid;
    i.priority = spread::priority(rank);
    i.advert_int_cs = ADVERT_CS;
    i.version = Some(Version::V3);
    i.native_ipv6 = ip.is_ipv6();
    i.unicast_src_ip = Some(source);
    i.unicast_peers = (nodes.iter())
        .filter(|(n, _)| *n != spec.node.name)
        .map(|(_, a)| *a)
        .collect();
    i.vips.push(VirtualAddress::host(ip));
    let service = Service {
        pool: spec.pool.name.clone(),
        address: ip,
        owner: record.owner.clone(),
        sharers: record.names.clone(),
        nodes,
    };
    Ok((i, service))
}

/// The configuration the pool mode runs now: the files read, the store listed once (`render`,
/// and `run`'s first look).
pub fn load(o: &Options) -> Result<Config, PoolError> {
    let spec = load_spec(o)?;
    let listing = match ipi_store::store::open_existing(&o.store)? {
        Some(mut store) => store.list(spec.store_pool())?,
        None => Vec::new(),
    };
    build(&spec, &listing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, ip: &str) -> Node {
        Node {
            name: name.into(),
            roles: BTreeSet::from([ipi_core::Role::Master]),
            addresses: vec![ip.parse().unwrap()],
        }
    }

    fn spec(me: &str) -> Spec {
        let eligible = vec![
            node("node-a", "203.0.113.1"),
            node("node-b", "203.0.113.2"),
            node("node-c", "203.0.113.3"),
        ];
        let pool = AddressPool::parse(
            "metadata: {name: internalapi}\nspec: {addresses: [198.51.100.10-198.51.100.59]}\n",
            "pool.yaml",
        )
        .unwrap();
        Spec {
            pool,
            node: eligible.iter().find(|n| n.name == me).unwrap().clone(),
            eligible,
            interface: "eth0".into(),
            reserved_vrids: BTreeSet::from([11, 12]),
        }
    }

    fn reservations(n: u8) -> Vec<(IpAddr, Record)> {
        (0..n)
            .map(|i| {
                let ip = IpAddr::from([198, 51, 100, 10 + i]);
                (ip, Record::owned_by(&format!("svc{i}")))
            })
            .collect()
    }

    #[test]
    fn every_address_is_one_instance_led_by_one_node() {
        let listing = reservations(30);
        let mut leaders = BTreeMap::new();
        for me in ["node-a", "node-b", "node-c"] {
            let c = build(&spec(me), &listing).unwrap();
            assert_eq!(c.instances.len(), 30);
            for i in &c.instances {
                assert_eq!(i.advert_int_cs, 10);
                assert_eq!(i.unicast_peers.len(), 2, "{}", i.name);
                assert!(!i.unicast_peers.contains(&i.unicast_src_ip.unwrap()));
                assert!(
                    ![11, 12].contains(&i.vrid),
                    "{} took a cluster VRID",
                    i.name
                );
                if i.priority == 250 {
                    assert!(leaders.insert(i.vips[0].address, me).is_none());
                }
            }
            let vrids: BTreeSet<u8> = c.instances.iter().map(|i| i.vrid).collect();
            assert_eq!(vrids.len(), 30);
        }
        assert_eq!(leaders.len(), 30, "every address has exactly one leader");
    }

    #[test]
    fn a_reservation_added_changes_no_other_instance() {
        let before = build(&spec("node-b"), &reservations(10)).unwrap();
        let mut more = reservations(10);
        more.insert(
            3,
            (IpAddr::from([198, 51, 100, 55]), Record::owned_by("new")),
        );
        let after = build(&spec("node-b"), &more).unwrap();
        for i in &before.instances {
            // Where it was written differs (the rendered text has one more block); a reload
            // does not count that for an instance.
            let mut same = after.instance(&i.name).unwrap().clone();
            same.location = i.location.clone();
            assert_eq!(&same, i);
        }
        assert_eq!(after.instances.len(), 11);
    }

    #[test]
    fn sharers_and_the_order_of_nodes_are_kept_for_status() {
        let mut listing = reservations(1);
        listing[0].1 = Record {
            owner: "key".into(),
            names: vec!["svc-a".into(), "svc-b".into()],
            ..Record::default()
        };
        let c = build(&spec("node-a"), &listing).unwrap();
        let s = &c.services["internalapi_198.51.100.10"];
        assert_eq!((s.pool.as_str(), s.owner.as_str()), ("internalapi", "key"));
        assert_eq!(s.sharers, ["svc-a", "svc-b"]);
        assert_eq!(s.nodes.len(), 3);
    }

    #[test]
    fn a_node_not_selected_holds_nothing_and_strays_are_left_out() {
        let mut s = spec("node-a");
        s.eligible.retain(|n| n.name != "node-a");
        assert!(build(&s, &reservations(5)).unwrap().instances.is_empty());
        let stray = vec![(IpAddr::from([192, 0, 2, 1]), Record::owned_by("x"))];
        assert!(build(&spec("node-a"), &stray).unwrap().instances.is_empty());
    }

    #[test]
    fn bad_input_names_every_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let o = Options {
            pool: file(
                "pool.yaml",
                "metadata: {name: internalapi}\nspec: {addresses: [203.0.113.0/28]}\n",
            ),
            l2advertisement: file(
                "l2.yaml",
                "kind: L2Advertisement\nspec: {ipAddressPools: [other], interfaces: [nosuch9]}\n",
            ),
            store: dir.path().join("store").display().to_string(),
            nodes: file("nodes", "node-a master 203.0.113.1\n"),
            node: "node-x".into(),
            interface: None,
            cluster: None,
        };
        let e = load_spec(&o).unwrap_err().to_string();
        let d = dir.path().display();
        for want in [
            format!("{d}/l2.yaml: spec.ipAddressPools [\"other\"] and spec.ipAddressPoolSelectors"),
            format!("{d}/nodes: no node \"node-x\" (--node; the inventory has node-a)"),
            format!("{d}/pool.yaml: spec.addresses[0] 203.0.113.0-203.0.113.15 holds 203.0.113.1, an address of node node-a"),
            format!("{d}/l2.yaml: spec.interfaces: none of [\"nosuch9\"] exists on this node"),
        ] {
            assert!(e.contains(&want), "{want}\nnot in:\n{e}");
        }
        let given = Options {
            interface: Some("eth9".into()),
            ..o
        };
        let e = load_spec(&given).unwrap_err().to_string();
        assert!(
            e.contains("spec.interfaces [\"nosuch9\"] does not name --interface eth9"),
            "{e}"
        );
    }

    #[test]
    fn the_clusters_vips_and_vrids_are_kept_out() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        // The seed's cluster (managed: API VRID 124, Ingress 75) on documentation addresses.
        let cluster = "apiVersion: v1\nbaseDomain: example.com\nmetadata:\n  name: managed\n\
            networking:\n  machineNetwork:\n  - cidr: 198.51.100.0/24\nplatform:\n  openstack:\n\
            \x20   apiVIPs: [198.51.100.5]\n    ingressVIPs: [198.51.100.7]\n";
        let o = Options {
            pool: file(
                "pool.yaml",
                "metadata: {name: p}\nspec: {addresses: [198.51.100.0/29]}\n",
            ),
            l2advertisement: file("l2.yaml", "kind: L2Advertisement\nspec: {}\n"),
            store: dir.path().join("store").display().to_string(),
            nodes: file("nodes", "node-a master 203.0.113.1\n"),
            node: "node-a".into(),
            interface: Some("eth0".into()),
            cluster: Some(file("install-config.yaml", cluster)),
        };
        let e = load_spec(&o).unwrap_err().to_string();
        for vip in ["198.51.100.5", "198.51.100.7"] {
            assert!(
                e.contains(&format!("holds {vip}, a VIP of the cluster")),
                "{e}"
            );
        }
        std::fs::write(
            &o.pool,
            "metadata: {name: p}\nspec: {addresses: [192.0.2.0/24]}\n",
        )
        .unwrap();
        let spec = load_spec(&o).unwrap();
        assert_eq!(spec.reserved_vrids, BTreeSet::from([124, 75]));
    }
}

//! Checks across blocks: what every block can be alone but not together.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipi_core::vrrp::Version;

use super::error::ConfigErrors;
use super::model::{Config, VrrpInstance};

/// Records every cross-block problem of `c`.
pub fn check(c: &Config, errors: &mut ConfigErrors) {
    unique(
        c.scripts.iter().map(|s| (&s.name, &s.location)),
        "vrrp_script",
        errors,
    );
    unique(
        c.instances.iter().map(|i| (&i.name, &i.location)),
        "vrrp_instance",
        errors,
    );
    unique(
        c.sync_groups.iter().map(|g| (&g.name, &g.location)),
        "vrrp_sync_group",
        errors,
    );
    let mut vrids = BTreeMap::new();
    for i in &c.instances {
        vrid(i, &mut vrids, errors);
        families(i, errors);
        instance(i, errors);
    }
    groups(c, errors);
}

fn family(i: &VrrpInstance) -> &'static str {
    if i.is_ipv6() {
        "IPv6"
    } else {
        "IPv4"
    }
}

/// The instances seen so far by interface, family, socket (the unicast source of a unicast
/// instance that names one; `None`: the interface's multicast socket) and VRID.
type Vrids<'a> = BTreeMap<(&'a String, &'static str, Option<IpAddr>, u8), &'a String>;

/// The unicast source that gives instance `i` a socket of its own (as the daemon opens them):
/// `unicast_src_ip`, else `mcast_src_ip`, of a unicast instance. `None`: `i` receives on the
/// interface's multicast socket (multicast, or unicast without a configured source).
fn own_socket(i: &VrrpInstance) -> Option<IpAddr> {
    i.unicast_src_ip
        .or(i.mcast_src_ip)
        .filter(|_| i.is_unicast())
}

/// RFC 5798 5.2.3: a VRID names one virtual router per interface and family. As in
/// keepalived, unicast and multicast are separate VRID spaces (each has its socket, and a
/// datagram goes to the instance of its destination's mode), and so are unicast instances
/// with different sources. Refused: two instances that would receive on one socket with one
/// VRID (two multicast instances; two unicast ones with the same source, even with disjoint
/// peers, which keepalived tells apart by sender and vrrpd does not; a multicast one and a
/// unicast one without a source, which shares the multicast socket).
fn vrid<'a>(i: &'a VrrpInstance, seen: &mut Vrids<'a>, errors: &mut ConfigErrors) {
    let family = family(i);
    let socket = own_socket(i);
    if let Some(first) = seen.insert((&i.interface, family, socket, i.vrid), &i.name) {
        let how = match socket {
            Some(source) => format!("unicast from {source}"),
            None => "multicast socket".to_string(),
        };
        errors.push(
            &i.location,
            format!(
                "vrrp_instance {}: virtual_router_id {} on {} ({family}, {how}) is already used \
                 by vrrp_instance {first}",
                i.name, i.vrid, i.interface
            ),
        );
    }
}

/// One instance runs one family (RFC 5798 5.2.9): its version, VIPs and addresses agree.
fn families(i: &VrrpInstance, errors: &mut ConfigErrors) {
    let (at, family) = (&i.location, family(i));
    if i.is_ipv6() && i.version == Some(Version::V2) {
        errors.push(
            at,
            format!(
                "vrrp_instance {}: VRRPv2 carries IPv4 only: use version 3 for IPv6",
                i.name
            ),
        );
    }
    let mixed = i.vips.iter().any(|v| v.address.is_ipv6() != i.is_ipv6());
    if mixed {
        errors.push(
            at,
            format!(
                "vrrp_instance {}: virtual_ipaddress mixes IPv4 and IPv6: one instance per family",
                i.name
            ),
        );
    }
    for (what, address) in i
        .unicast_peers
        .iter()
        .map(|p| ("unicast_peer", p))
        .chain(i.unicast_src_ip.iter().map(|a| ("unicast_src_ip", a)))
        .chain(i.mcast_src_ip.iter().map(|a| ("mcast_src_ip", a)))
    {
        if address.is_ipv6() != i.is_ipv6() {
            errors.push(
                at,
                format!(
                    "vrrp_instance {}: {what} {address} is not of the instance's family ({family})",
                    i.name
                ),
            );
        }
    }
}

/// What an instance's priority allows.
fn instance(i: &VrrpInstance, errors: &mut ConfigErrors) {
    let at = &i.location;
    if i.priority == 255 && !i.preempt {
        errors.push(at, format!("vrrp_instance {}: the address owner (priority 255) always preempts: drop `nopreempt`", i.name));
    }
}

/// Each group lists existing instances, and an instance is in one group at most.
fn groups(c: &Config, errors: &mut ConfigErrors) {
    let mut grouped = BTreeSet::new();
    for g in &c.sync_groups {
        if g.members.is_empty() {
            errors.push(
                &g.location,
                format!("vrrp_sync_group {}: `group` lists no instance", g.name),
            );
        }
        for m in &g.members {
            if c.instance(m).is_none() {
                errors.push(
                    &g.location,
                    format!("vrrp_sync_group {}: `{m}` names no vrrp_instance", g.name),
                );
            } else if !grouped.insert(m) {
                errors.push(
                    &g.location,
                    format!(
                        "vrrp_sync_group {}: vrrp_instance {m} is already in another sync group",
                        g.name
                    ),
                );
            }
        }
    }
}

fn unique<'a>(
    items: impl Iterator<Item = (&'a String, &'a super::model::Location)>,
    what: &str,
    errors: &mut ConfigErrors,
) {
    let mut seen = BTreeMap::new();
    for (name, location) in items {
        if let Some(first) = seen.insert(name, location) {
            errors.push(
                location,
                format!("{what} {name} is defined twice (first at {first})"),
            );
        }
    }
}

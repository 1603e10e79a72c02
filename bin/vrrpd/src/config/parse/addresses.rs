//! An instance's addresses: its VIPs (`virtual_ipaddress`, `virtual_ipaddress_excluded`), its
//! own source and its unicast peers, its routes and rules.

use std::net::IpAddr;

use super::args::{block, host_address, no_args, one};
use crate::config::error::Found;
use crate::config::model::{VirtualAddress, VrrpInstance};
use crate::config::tree::Node;

/// The addresses: VIPs, advert sources, unicast peers. False when `n` is none of them.
pub(super) fn addresses(n: &Node, i: &mut VrrpInstance, errors: &mut Found) -> bool {
    match n.keyword.as_str() {
        "virtual_ipaddress" => {
            for v in block(n, errors) {
                i.vips.extend(virtual_address(v, errors));
            }
        }
        "virtual_routes" => {
            for r in block(n, errors) {
                i.virtual_routes
                    .extend(crate::config::route::virtual_route(r, errors));
            }
        }
        "virtual_rules" => {
            for r in block(n, errors) {
                i.virtual_rules
                    .extend(crate::config::route::virtual_rule(r, errors));
            }
        }
        "virtual_ipaddress_excluded" => {
            for v in block(n, errors) {
                i.vips_excluded.extend(virtual_address(v, errors));
            }
        }
        // What vrrpd always does: a configured source address that leaves its interface puts
        // the instance in FAULT (track_src_ip); unicast adverts are accepted only from the
        // listed peers (check_unicast_src); every advert's addresses are checked
        // (skip_check_adv_addr only makes keepalived's check cheaper).
        "track_src_ip" | "check_unicast_src" | "skip_check_adv_addr" => {
            no_args(n, errors);
        }
        "mcast_src_ip" => {
            i.mcast_src_ip = one(n, errors).and_then(|t| host_address(n, &n.keyword, t, errors))
        }
        "unicast_src_ip" => {
            i.unicast_src_ip = one(n, errors).and_then(|t| host_address(n, &n.keyword, t, errors))
        }
        "unicast_peer" => {
            for p in block(n, errors) {
                if let Some((peer, ttl)) = unicast_peer(p, errors) {
                    if i.unicast_peers.contains(&peer) {
                        errors.push(&p.location, format!("unicast_peer {peer}: listed twice"));
                        continue;
                    }
                    i.unicast_peers.push(peer);
                    if let Some(range) = ttl {
                        i.peer_ttl.insert(peer, range);
                    }
                }
            }
        }
        _ => return false,
    }
    true
}

/// A line of `unicast_peer { ... }`: `IP [min_ttl N] [max_ttl M]` (keepalived's options, 0 to
/// 255 each), the address and the TTL range when one is written.
fn unicast_peer(p: &Node, errors: &mut Found) -> Option<(IpAddr, Option<(u8, u8)>)> {
    let peer = host_address(p, "unicast_peer", &p.keyword, errors)?;
    let (mut min, mut max, mut ranged) = (0u8, 255u8, false);
    for pair in p.args.chunks(2) {
        let [option, value] = pair else {
            errors.push(
                &p.location,
                format!("unicast_peer {peer}: `{}` needs a value", pair[0]),
            );
            return None;
        };
        let Ok(ttl) = value.parse::<u8>() else {
            errors.push(
                &p.location,
                format!("unicast_peer {peer}: `{option} {value}`: must be a TTL from 0 to 255"),
            );
            return None;
        };
        match option.as_str() {
            "min_ttl" => min = ttl,
            "max_ttl" => max = ttl,
            _ => {
                errors.push(
                    &p.location,
                    format!("unicast_peer {peer}: `{option}`: not an option (min_ttl, max_ttl)"),
                );
                return None;
            }
        }
        ranged = true;
    }
    if min > max {
        errors.push(
            &p.location,
            format!(
                "unicast_peer {peer}: min_ttl {min} > max_ttl {max}: every advert would be refused"
            ),
        );
        return None;
    }
    Some((peer, ranged.then_some((min, max))))
}

fn virtual_address(node: &Node, errors: &mut Found) -> Option<VirtualAddress> {
    let (addr_text, len_text) = match node.keyword.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (node.keyword.as_str(), None),
    };
    let address: IpAddr = match addr_text.parse() {
        Ok(a) => a,
        Err(_) => {
            errors.push(
                &node.location,
                format!("virtual_ipaddress: `{}` is not an IP address", node.keyword),
            );
            return None;
        }
    };
    let max = if address.is_ipv4() { 32 } else { 128 };
    let prefix_len = match len_text.map(str::parse::<u8>) {
        None => max,
        Some(Ok(l)) if l <= max => l,
        Some(_) => {
            errors.push(
                &node.location,
                format!(
                    "virtual_ipaddress: `{}`: the prefix length must be 0 to {max}",
                    node.keyword
                ),
            );
            return None;
        }
    };
    let mut v = VirtualAddress {
        address,
        prefix_len,
        dev: None,
        ..VirtualAddress::host(address)
    };
    let mut args = node.args.iter();
    while let Some(opt) = args.next() {
        let value = args.next().cloned();
        match (opt.as_str(), value) {
            ("dev", Some(d)) => v.dev = Some(d),
            ("label", Some(l)) => v.label = Some(l),
            ("preferred_lft", Some(t)) if t == "forever" => v.preferred_lft = None,
            ("preferred_lft", Some(t)) if t.parse::<u32>().is_ok() => {
                v.preferred_lft = t.parse().ok();
            }
            (other, _) => {
                errors.push(
                    &node.location,
                    format!(
                        "virtual_ipaddress {}: `{other}` is not supported (only `dev IF`, \
                         `label LABEL` and `preferred_lft SECONDS|forever`)",
                        node.keyword
                    ),
                );
                return None;
            }
        }
    }
    Some(v)
}

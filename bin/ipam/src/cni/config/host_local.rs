//! The host-local style of the `ipam` section: `ranges` (a list of range sets, each a list of
//! ranges of one family), or the older single range `subnet`, `rangeStart`, `rangeEnd`,
//! `gateway`; host-local's defaults (first host to last host, gateway the first host) fill in
//! what is not given. `resolvConf` is read by the parent.
//!
//! Apart from the parent ([`super`]) and from whereabouts' reader because the two styles share
//! no key handling beyond the small readers of the parent: each can be read and changed
//! alongside the host-local documentation alone.

use ipi_store::range::{from_u128, to_u128, Span};
use serde_json::Value;

use super::json::{masked, object, parse_net, Obj};
use super::model::{invalid, ConfigError, Range, RangeSet};

pub(super) const HOST_LOCAL_KEYS: [&str; 6] = [
    "ranges",
    "subnet",
    "rangeStart",
    "rangeEnd",
    "gateway",
    "resolvConf",
];

pub(super) fn host_local_sets(o: &Obj<'_>) -> Result<Vec<RangeSet>, ConfigError> {
    if o.map.contains_key("subnet") {
        if o.map.contains_key("ranges") {
            return Err(invalid(
                "ipam.subnet",
                "give either `subnet` (one range) or `ranges`, not both",
            ));
        }
        return Ok(vec![RangeSet {
            ranges: vec![host_local_range(o)?],
            excluded: Vec::new(),
        }]);
    }
    if let Some(k) = ["rangeStart", "rangeEnd", "gateway"]
        .into_iter()
        .find(|k| o.map.contains_key(*k))
    {
        return Err(invalid(
            o.field(k),
            "goes with `subnet`, or inside a range of `ranges`",
        ));
    }
    let list = o.array("ranges")?.map(Vec::as_slice).unwrap_or_default();
    if list.is_empty() {
        return Err(invalid("ipam.ranges", "empty: no range sets"));
    }
    list.iter()
        .enumerate()
        .map(|(i, set)| {
            let path = format!("ipam.ranges[{i}]");
            let Value::Array(ranges) = set else {
                return Err(invalid(path, "not a list of ranges (a range set)"));
            };
            if ranges.is_empty() {
                return Err(invalid(path, "an empty range set"));
            }
            let ranges = ranges
                .iter()
                .enumerate()
                .map(|(j, r)| {
                    let r = object(r, format!("{path}[{j}]"))?;
                    r.only(&["subnet", "rangeStart", "rangeEnd", "gateway"])?;
                    host_local_range(&r)
                })
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(r) = ranges.iter().find(|r| r.subnet.is_ipv4() != ranges[0].subnet.is_ipv4()) {
                return Err(invalid(
                    path,
                    format!("mixes address families ({} and {}): one family per range set, a set per family for dual stack", ranges[0].subnet, r.subnet),
                ));
            }
            Ok(RangeSet {
                ranges,
                excluded: Vec::new(),
            })
        })
        .collect()
}

/// One host-local range, with host-local's defaults: from the subnet's first host to its last
/// (the IPv4 broadcast address excluded), gateway the first host.
fn host_local_range(o: &Obj<'_>) -> Result<Range, ConfigError> {
    let field = o.field("subnet");
    let text = o
        .str("subnet")?
        .ok_or_else(|| invalid(&field, "missing: the range's subnet (a CIDR)"))?;
    let subnet = parse_net(&field, text)?;
    if subnet.ip() != subnet.network() {
        return Err(invalid(
            &field,
            format!(
                "{text:?} has host bits set: the network is {}",
                masked(subnet)
            ),
        ));
    }
    let bits = if subnet.is_ipv4() { 32 } else { 128 };
    if subnet.prefix() + 2 > bits {
        return Err(invalid(
            &field,
            format!("{subnet} is too small to allocate from"),
        ));
    }
    let whole = Span::of_network(subnet);
    let host = |n: u128| from_u128(n, whole.first);
    let first_host = host(to_u128(whole.first) + 1);
    let last_host = if subnet.is_ipv4() {
        host(to_u128(whole.last) - 1)
    } else {
        Some(whole.last)
    };
    let (Some(first_host), Some(last_host)) = (first_host, last_host) else {
        return Err(invalid(&field, format!("{subnet} has no host addresses")));
    };
    let (mut first, mut last) = (first_host, last_host);
    for (key, end) in [("rangeStart", &mut first), ("rangeEnd", &mut last)] {
        if let Some(ip) = o.ip(key)? {
            if !subnet.contains(ip) {
                return Err(invalid(o.field(key), format!("{ip} is outside {subnet}")));
            }
            *end = ip;
        }
    }
    let span = Span::new(first, last).map_err(|why| invalid(o.field("rangeStart"), why))?;
    let gateway = match o.ip("gateway")? {
        Some(gw) if !subnet.contains(gw) => {
            return Err(invalid(
                o.field("gateway"),
                format!("{gw} is outside {subnet}"),
            ))
        }
        Some(gw) => gw,
        None => first_host,
    };
    Ok(Range {
        subnet,
        span,
        gateway: Some(gateway),
    })
}

#[cfg(test)]
mod tests {
    use crate::cni::config::tests::{conf, ip};

    #[test]
    fn host_local_defaults_and_dual_stack() {
        let c = conf(r#"{"type":"host-local","ranges":[[{"subnet":"192.0.2.0/24"}],[{"subnet":"2001:db8::/64","rangeStart":"2001:db8::10"}]],"routes":[{"dst":"0.0.0.0/0"}]}"#).unwrap();
        let v4 = c.ipam.sets[0].ranges[0];
        assert_eq!(v4.span.to_string(), "192.0.2.1-192.0.2.254");
        assert_eq!(v4.gateway, Some(ip("192.0.2.1")));
        let v6 = c.ipam.sets[1].ranges[0];
        assert_eq!(v6.span.last, ip("2001:db8::ffff:ffff:ffff:ffff"));
        assert_eq!(c.ipam.pools()[1].name, "cni/net1/1");
        assert_eq!(c.ipam.routes[0].dst, "0.0.0.0/0");
    }
}

//! The whereabouts style of the `ipam` section: `range` (a CIDR, or `FIRST-LAST/LEN`) with
//! `range_start`, `range_end` and `exclude`, more ranges in `ipRanges`, one `gateway` for the
//! range whose subnet holds it, and `network_name` (read by the parent, with the shared keys).
//! Each range is a range set of its own.
//!
//! Apart from the parent ([`super`]) and from host-local's reader because the two styles share
//! no key handling beyond the small readers of the parent: each can be read and changed
//! alongside the whereabouts documentation alone.
use ipi_store::range::Span;

use super::json::{masked, object, parse_net, same_family, Obj};
use super::model::{invalid, ConfigError, Range, RangeSet};

pub(super) const WHEREABOUTS_KEYS: [&str; 7] = [
    "range",
    "range_start",
    "range_end",
    "exclude",
    "gateway",
    "ipRanges",
    "network_name",
];

pub(super) fn whereabouts_sets(o: &Obj<'_>) -> Result<Vec<RangeSet>, ConfigError> {
    let top_exclude = read_exclude(o, "exclude")?;
    let mut sets = Vec::new();
    if o.map.contains_key("range") {
        sets.push(whereabouts_range(o, Vec::new(), &top_exclude)?);
    } else if o.map.contains_key("range_start") || o.map.contains_key("range_end") {
        return Err(invalid(
            o.field("range_start"),
            "range_start and range_end go with `range` (or inside ipRanges entries)",
        ));
    }
    if let Some(list) = o.array("ipRanges")? {
        for (i, v) in list.iter().enumerate() {
            let entry = object(v, format!("ipam.ipRanges[{i}]"))?;
            entry.only(&["range", "range_start", "range_end", "exclude"])?;
            let own = read_exclude(&entry, "exclude")?;
            sets.push(whereabouts_range(&entry, own, &top_exclude)?);
        }
    }
    if sets.is_empty() {
        return Err(invalid("ipam.ipRanges", "empty: no addresses to hand out"));
    }
    // The top-level gateway goes with the range set whose subnet holds it.
    if let Some(gw) = o.ip("gateway")? {
        let set = sets
            .iter_mut()
            .find(|s| s.ranges.iter().any(|r| r.subnet.contains(gw)))
            .ok_or_else(|| invalid("ipam.gateway", format!("{gw} is in no range's subnet")))?;
        for r in &mut set.ranges {
            r.gateway = Some(gw);
        }
    }
    Ok(sets)
}

/// whereabouts' `exclude` (CIDRs; plain addresses and `a-b` ranges are read too).
fn read_exclude(o: &Obj<'_>, key: &str) -> Result<Vec<Span>, ConfigError> {
    let Some(list) = o.array(key)? else {
        return Ok(Vec::new());
    };
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let field = format!("{}[{i}]", o.field(key));
            let text = v.as_str().ok_or_else(|| invalid(&field, "not a string"))?;
            Span::parse(text).map_err(|why| invalid(&field, why))
        })
        .collect()
}

/// One whereabouts range: `range` as `CIDR` or `FIRST-LAST/LEN`, with `range_start`,
/// `range_end`, its own exclusions (an `ipRanges` entry's `exclude`: of its family) and the
/// top-level ones of its family (the top-level `exclude` may name both families).
fn whereabouts_range(
    o: &Obj<'_>,
    own_exclude: Vec<Span>,
    top_exclude: &[Span],
) -> Result<RangeSet, ConfigError> {
    let field = o.field("range");
    let text = o
        .str("range")?
        .ok_or_else(|| invalid(&field, "missing: a CIDR or FIRST-LAST/LEN"))?;
    let (subnet, mut first, mut last) = match Span::parse_with_length(text) {
        Ok(Some((span, net))) => {
            if o.map.contains_key("range_start") || o.map.contains_key("range_end") {
                return Err(invalid(
                    &field,
                    format!("{text:?} gives its first and last address: no range_start or range_end with it"),
                ));
            }
            (net, span.first, span.last)
        }
        Ok(None) => {
            if text.contains('-') {
                return Err(invalid(
                    &field,
                    format!("{text:?} has no prefix length: write FIRST-LAST/LEN"),
                ));
            }
            let net = masked(parse_net(&field, text)?);
            let whole = Span::of_network(net);
            (net, whole.first, whole.last)
        }
        Err(why) => return Err(invalid(&field, why)),
    };
    for (key, end) in [("range_start", &mut first), ("range_end", &mut last)] {
        if let Some(ip) = o.ip(key)? {
            if !subnet.contains(ip) {
                return Err(invalid(o.field(key), format!("{ip} is outside {subnet}")));
            }
            *end = ip;
        }
    }
    let span = Span::new(first, last).map_err(|why| invalid(o.field("range_start"), why))?;
    let mut excluded = own_exclude;
    if let Some(bad) = excluded.iter().find(|s| !same_family(s.first, first)) {
        return Err(invalid(
            o.field("exclude"),
            format!("{bad} is not of the family of {subnet}"),
        ));
    }
    excluded.extend(top_exclude.iter().filter(|s| same_family(s.first, first)));
    Ok(RangeSet {
        ranges: vec![Range {
            subnet,
            span,
            gateway: None,
        }],
        excluded,
    })
}

#[cfg(test)]
mod tests {
    use crate::cni::config::tests::{conf as shared, ip};
    use crate::cni::config::{parse, ConfigError, NetConf, Style};

    /// A config with this whereabouts `ipam` section, on the node's directory (`node_local`):
    /// the store is not what these tests are about (see `super::super::storage`).
    fn conf(ipam: &str) -> Result<NetConf, ConfigError> {
        shared(&ipam.replacen('{', r#"{"node_local":true,"#, 1))
    }

    #[test]
    fn reads_the_whereabouts_fixture() {
        let text = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/seeds/nad-internalapi-whereabouts.json"
        ))
        .unwrap();
        // As it is, it names no shared store: refused, with the reason.
        let e = parse(&text, "ADD", "0.3.0").unwrap_err();
        assert!(e.to_string().contains("no shared store"), "{e}");
        let mut v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        v["ipam"]["etcd_host"] = "https://192.0.2.10:2379".into();
        v["ipam"]["etcd_ca_cert_file"] = "/etc/ipi-net/etcd-ca.pem".into();
        let c = parse(v.to_string().as_bytes(), "ADD", "0.3.0").unwrap();
        assert_eq!(c.ipam.store.url, "etcd+https://192.0.2.10:2379");
        assert_eq!(c.cni_version, "0.3.1");
        assert_eq!(c.ipam.style, Style::Whereabouts);
        let r = c.ipam.sets[0].ranges[0];
        assert_eq!(r.subnet.to_string(), "172.17.0.0/24");
        assert_eq!(r.span.to_string(), "172.17.0.30-172.17.0.70");
        assert_eq!(c.ipam.pools()[0].name, "cni/internalapi/0");
    }

    #[test]
    fn whereabouts_ranges_with_and_without_ends() {
        let c = conf(r#"{"range":"192.0.2.225-192.0.2.230/28","gateway":"192.0.2.238","exclude":["192.0.2.226/32"]}"#).unwrap();
        let set = &c.ipam.sets[0];
        assert_eq!(set.ranges[0].subnet.to_string(), "192.0.2.224/28");
        assert_eq!(set.ranges[0].gateway, Some(ip("192.0.2.238")));
        let space = set.space();
        assert_eq!(
            space.next_allowed(&space.spans[0], 0),
            Some(ip("192.0.2.225"))
        );
        assert!(space.refusal(ip("192.0.2.226")).is_some());
        // A plain CIDR: the whole subnet less its network and broadcast addresses.
        let c = conf(r#"{"range":"192.0.2.5/30"}"#).unwrap();
        let space = c.ipam.sets[0].space();
        assert_eq!(
            space.next_allowed(&space.spans[0], 0),
            Some(ip("192.0.2.5"))
        );
        assert!(space.refusal(ip("192.0.2.7")).is_some());
        let e = conf(r#"{"range":"192.0.2.1-192.0.2.9"}"#).unwrap_err();
        assert!(e.to_string().contains("no prefix length"), "{e}");
    }

    #[test]
    fn a_top_level_exclude_may_name_both_families() {
        let c = conf(
            r#"{"range":"192.0.2.0/29","ipRanges":[{"range":"2001:db8::/125"}],"exclude":["2001:db8::1/128","192.0.2.1/32"]}"#,
        )
        .unwrap();
        let (v4, v6) = (c.ipam.sets[0].space(), c.ipam.sets[1].space());
        assert!(v4.refusal(ip("192.0.2.1")).is_some());
        assert_eq!(v4.next_allowed(&v4.spans[0], 0), Some(ip("192.0.2.2")));
        assert!(v6.refusal(ip("2001:db8::1")).is_some());
        assert_eq!(
            c.ipam.sets[1].excluded,
            [ipi_store::range::Span::single(ip("2001:db8::1"))]
        );
        assert_eq!(
            c.ipam.sets[0].excluded,
            [ipi_store::range::Span::single(ip("192.0.2.1"))]
        );
        // An entry's own exclude is still of its family only.
        let e = conf(r#"{"ipRanges":[{"range":"2001:db8::/125","exclude":["192.0.2.1/32"]}]}"#)
            .unwrap_err();
        assert!(e.to_string().contains("not of the family"), "{e}");
    }
}

//! The network config a CNI runtime gives an IPAM plugin on stdin, and its `ipam` section in
//! either of the two styles in use: whereabouts (`range`, `range_start`, `range_end`,
//! `exclude`, `ipRanges`) and host-local (`ranges`, or the older `subnet`, `rangeStart`,
//! `rangeEnd`). Reading is pure: nothing here touches a file or the store, so a config that
//! does not read never changes anything.
//!
//! Keys outside the `ipam` section belong to the main plugin and are left alone; a key inside
//! it that we do not know is an error naming it (docs/ARCHITECTURE.md, conventions), except for
//! whereabouts' and host-local's keys about Kubernetes access, their reconciler and logging,
//! which have no meaning with our store and are accepted without effect (listed in
//! ipam-cni(5)). The keys about where reservations live, whereabouts' etcd keys among them,
//! are honoured or refused by name (submodule `storage`).
//!
//! Here: [`parse`] with its version gates, the `ipam` keys both styles share, the checks across
//! range sets, routes and DNS. The model ([`NetConf`], [`Ipam`], [`RangeSet`], [`ConfigError`])
//! is the submodule `model`'s, re-exported here; the small readers every part uses (a JSON
//! object with its path, CIDRs) are `json`'s. How each style's keys become range sets is in the
//! submodules `whereabouts` and `host_local`; the store and its etcd settings in `storage`.

mod host_local;
mod json;
mod model;
mod storage;
mod whereabouts;

use std::net::IpAddr;

use serde_json::{Map, Value};

use host_local::{host_local_sets, HOST_LOCAL_KEYS};
use json::{object, parse_net, same_family, Obj};
use model::invalid;
pub use model::{ConfigError, Dns, Ipam, NetConf, Range, RangeSet, Route, Style};
use storage::{read_storage, REFUSED_KEYS, STORAGE_KEYS};
use whereabouts::{whereabouts_sets, WHEREABOUTS_KEYS};

/// The CNI versions whose configs we read and whose results we write.
pub const SUPPORTED: [&str; 5] = ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"];

/// The newest of [`SUPPORTED`]: the version of our own VERSION answer and of errors about a
/// config that names no version we know.
pub const CURRENT: &str = "1.1.0";

/// Keys of the `ipam` section accepted without effect: host-local's directory (the store is
/// ours), whereabouts' Kubernetes access (for its Kubernetes datastore, which a config with one
/// is refused for, and its reconciler), and logging.
pub const IGNORED_KEYS: [&str; 11] = [
    "dataDir",
    "kubernetes",
    "kubeconfig",
    "log_file",
    "log_level",
    "reconciler_cron_expression",
    "leader_lease_duration",
    "leader_renew_deadline",
    "leader_retry_period",
    "enable_overlapping_ranges",
    "sleep_for_race",
];

/// A version as numbers, for "at least" comparisons.
fn version_number(v: &str) -> Option<(u32, u32, u32)> {
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    let triple = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(triple)
}

/// Reads a network config. `command` and `needs` gate the version as the CNI library does
/// (CHECK needs 0.4.0, GC and STATUS 1.1.0); the version is checked before anything else.
pub fn parse(bytes: &[u8], command: &str, needs: &str) -> Result<NetConf, ConfigError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| ConfigError::Decode(format!("not JSON: {e}")))?;
    let Value::Object(top) = value else {
        return Err(ConfigError::Decode("not a JSON object".into()));
    };
    let supported = format!("ipam supports {}", SUPPORTED.join(", "));
    let cni_version = match top.get("cniVersion") {
        Some(Value::String(v)) => v.clone(),
        Some(_) => return Err(ConfigError::Decode("cniVersion: not a string".into())),
        None => {
            return Err(ConfigError::Version {
                msg: "no cniVersion (CNI 0.1.0, which ipam does not speak)".into(),
                details: supported,
            })
        }
    };
    if !SUPPORTED.contains(&cni_version.as_str()) {
        return Err(ConfigError::Version {
            msg: format!("incompatible CNI versions: config is {cni_version:?}"),
            details: supported,
        });
    }
    if version_number(&cni_version) < version_number(needs) {
        return Err(ConfigError::Version {
            msg: format!(
                "config version {cni_version} does not allow {command} (it needs {needs})"
            ),
            details: supported,
        });
    }
    let name = match top.get("name") {
        Some(Value::String(n)) => n.clone(),
        Some(_) => return Err(invalid("name", "not a string")),
        None => return Err(invalid("name", "missing: the network's name")),
    };
    check_name("name", &name)?;
    let ipam = match top.get("ipam") {
        Some(Value::Object(m)) => read_ipam(m, &name)?,
        Some(_) => return Err(invalid("ipam", "not an object")),
        None => return Err(invalid("ipam", "missing: the ipam section")),
    };
    let dns = top.get("dns").map(|v| read_dns("dns", v)).transpose()?;
    let valid_attachments = top
        .get("cni.dev/valid-attachments")
        .map(read_attachments)
        .transpose()?;
    let prev_ips = top.get("prevResult").map(read_prev_ips).transpose()?;
    let mut requested = Vec::new();
    for (field, v) in [
        (
            "runtimeConfig.ips",
            top.get("runtimeConfig").and_then(|r| r.get("ips")),
        ),
        (
            "args.cni.ips",
            top.get("args")
                .and_then(|a| a.get("cni"))
                .and_then(|c| c.get("ips")),
        ),
    ] {
        if let Some(v) = v {
            requested.extend(read_requested(field, v)?);
        }
    }
    Ok(NetConf {
        cni_version,
        name,
        ipam,
        dns,
        valid_attachments,
        prev_ips,
        requested,
    })
}

/// libcni's rule for network names, which also keeps `cni/NAME/` one pool prefix.
fn check_name(field: &str, name: &str) -> Result<(), ConfigError> {
    let ok = name.bytes().enumerate().all(|(i, b)| {
        b.is_ascii_alphanumeric() || (i > 0 && (b == b'_' || b == b'.' || b == b'-'))
    });
    if name.is_empty() || !ok {
        return Err(invalid(
            field,
            format!("{name:?} is not a network name (letters, digits, _ . - and a letter or digit first)"),
        ));
    }
    Ok(())
}

const COMMON_KEYS: [&str; 5] = ["type", "routes", "dns", "name", "gc_grace"];

/// How long a reservation is safe from GC unless `gc_grace` says otherwise.
pub const GC_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// `gc_grace`, a duration; [`GC_GRACE`] when not given.
fn read_gc_grace(o: &Obj<'_>) -> Result<std::time::Duration, ConfigError> {
    Ok(match o.str("gc_grace")? {
        // No grace at all: for a runtime that never lists while an ADD is in flight.
        Some("0" | "0s") => std::time::Duration::ZERO,
        Some(text) => ipi_core::duration::parse(text)
            .map_err(|e| invalid(o.field("gc_grace"), e.to_string()))?,
        None => GC_GRACE,
    })
}

/// Which style the `ipam` section is written in, by the keys that hold its addresses.
fn style_of(map: &Map<String, Value>) -> Result<Style, ConfigError> {
    let has = |k: &str| map.contains_key(k);
    match (
        has("range") || has("ipRanges"),
        has("ranges") || has("subnet"),
    ) {
        (true, false) => Ok(Style::Whereabouts),
        (false, true) => Ok(Style::HostLocal),
        (true, true) => Err(invalid(
            "ipam",
            "both whereabouts ranges (range, ipRanges) and host-local ones (ranges, subnet): give one style",
        )),
        (false, false) => Err(invalid(
            "ipam",
            "no addresses to hand out: give `range` (whereabouts) or `ranges` (host-local)",
        )),
    }
}

fn read_ipam(map: &Map<String, Value>, name: &str) -> Result<Ipam, ConfigError> {
    let o = Obj {
        map,
        path: "ipam".into(),
    };
    let style = style_of(map)?;
    let style_keys: &[&str] = match style {
        Style::Whereabouts => &WHEREABOUTS_KEYS,
        Style::HostLocal => &HOST_LOCAL_KEYS,
    };
    let known: Vec<&str> = COMMON_KEYS
        .iter()
        .chain(style_keys)
        .chain(&STORAGE_KEYS)
        .chain(REFUSED_KEYS.iter().map(|(k, _)| k))
        .chain(IGNORED_KEYS.iter())
        .copied()
        .collect();
    o.only(&known)?;
    if let Some(t) = map.get("type") {
        if !t.is_string() {
            return Err(invalid("ipam.type", "not a string"));
        }
    }
    let (sets, network) = match style {
        Style::Whereabouts => {
            let network = match o.str("network_name")? {
                Some(n) => {
                    check_name("ipam.network_name", n)?;
                    n.to_owned()
                }
                None => name.to_owned(),
            };
            (whereabouts_sets(&o)?, network)
        }
        Style::HostLocal => (host_local_sets(&o)?, name.to_owned()),
    };
    check_sets(&sets)?;
    let routes = match o.array("routes")? {
        Some(list) => list
            .iter()
            .enumerate()
            .map(|(i, v)| read_route(v, format!("ipam.routes[{i}]")))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let dns = map
        .get("dns")
        .map(|v| read_dns("ipam.dns", v))
        .transpose()?;
    let store = read_storage(&o, style)?;
    let resolv_conf = o.str("resolvConf")?.map(str::to_owned);
    Ok(Ipam {
        style,
        sets,
        routes,
        dns,
        resolv_conf,
        store,
        network,
        gc_grace: read_gc_grace(&o)?,
    })
}

/// Across all sets: no two ranges overlap, and every set can hand out an address.
fn check_sets(sets: &[RangeSet]) -> Result<(), ConfigError> {
    let all: Vec<(usize, &Range)> = sets
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.ranges.iter().map(move |r| (i, r)))
        .collect();
    for (n, (i, a)) in all.iter().enumerate() {
        if let Some((j, b)) = all[n + 1..].iter().find(|(_, b)| a.span.overlaps(&b.span)) {
            return Err(invalid(
                "ipam",
                format!(
                    "range {} (set {i}) overlaps range {} (set {j})",
                    a.span, b.span
                ),
            ));
        }
    }
    for (i, set) in sets.iter().enumerate() {
        let space = set.space();
        if !space
            .spans
            .iter()
            .any(|s| space.next_allowed(s, 0).is_some())
        {
            return Err(invalid(
                format!("ipam range set {i}"),
                format!("{} hands out no address (network, broadcast, gateway and exclusions take them all)", space.describe()),
            ));
        }
    }
    Ok(())
}

fn read_route(v: &Value, path: String) -> Result<Route, ConfigError> {
    let o = object(v, path)?;
    o.only(&["dst", "gw", "mtu", "advmss", "priority", "table", "scope"])?;
    let dst = o
        .str("dst")?
        .ok_or_else(|| invalid(o.field("dst"), "missing: the destination (a CIDR)"))?;
    let net = parse_net(&o.field("dst"), dst)?;
    let gw = o.ip("gw")?;
    if let Some(gw) = gw {
        if !same_family(gw, net.ip()) {
            return Err(invalid(
                o.field("gw"),
                format!("{gw} is not of the family of {dst}"),
            ));
        }
    }
    Ok(Route {
        dst: dst.trim().to_owned(),
        gw,
        mtu: o.number("mtu")?,
        advmss: o.number("advmss")?,
        priority: o.number("priority")?,
        table: o.number("table")?,
        scope: o.number("scope")?,
    })
}

fn read_dns(path: &str, v: &Value) -> Result<Dns, ConfigError> {
    let o = object(v, path.to_owned())?;
    o.only(&["nameservers", "domain", "search", "options"])?;
    let strings = |key: &str| -> Result<Vec<String>, ConfigError> {
        o.array(key)?
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(format!("{}[{i}]", o.field(key)), "not a string"))
            })
            .collect()
    };
    let nameservers = strings("nameservers")?;
    if let Some((i, bad)) = nameservers
        .iter()
        .enumerate()
        .find(|(_, s)| s.parse::<IpAddr>().is_err())
    {
        return Err(invalid(
            format!("{}[{i}]", o.field("nameservers")),
            format!("{bad:?} is not an IP address"),
        ));
    }
    Ok(Dns {
        nameservers,
        domain: o.str("domain")?.map(str::to_owned),
        search: strings("search")?,
        options: strings("options")?,
    })
}

fn read_attachments(v: &Value) -> Result<Vec<(String, String)>, ConfigError> {
    let key = "cni.dev/valid-attachments";
    let Value::Array(list) = v else {
        return Err(invalid(key, "not a list"));
    };
    list.iter()
        .enumerate()
        .map(|(i, a)| {
            let o = object(a, format!("{key}[{i}]"))?;
            let get = |k: &str| {
                o.str(k)?
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(o.field(k), "missing"))
            };
            Ok((get("containerID")?, get("ifname")?))
        })
        .collect()
}

/// Requested addresses: a list of addresses, each with or without a prefix length.
fn read_requested(field: &str, v: &Value) -> Result<Vec<IpAddr>, ConfigError> {
    let list = v
        .as_array()
        .ok_or_else(|| invalid(field, "not a list of addresses"))?;
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("{field}[{i}]");
            let text = item.as_str().ok_or_else(|| invalid(&at, "not a string"))?;
            let address = text.split_once('/').map_or(text, |(a, _)| a);
            ipi_store::range::parse_ip(address).map_err(|why| invalid(&at, why))
        })
        .collect()
}

/// The addresses of a previous result (`ips[].address`, CIDRs); other keys are the runtime's.
fn read_prev_ips(v: &Value) -> Result<Vec<IpAddr>, ConfigError> {
    let o = object(v, "prevResult".into())?;
    o.array("ips")?
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, ip)| {
            let entry = object(ip, format!("prevResult.ips[{i}]"))?;
            let field = entry.field("address");
            let text = entry
                .str("address")?
                .ok_or_else(|| invalid(&field, "missing"))?;
            parse_net(&field, text).map(|n| n.ip())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An address, for the tests here and the styles' (`super::whereabouts`, `super::host_local`).
    pub(super) fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// A config of version 1.0.0 for network `net1` with this `ipam` section, read for ADD.
    pub(super) fn conf(ipam: &str) -> Result<NetConf, ConfigError> {
        let text =
            format!(r#"{{"cniVersion":"1.0.0","name":"net1","type":"bridge","ipam":{ipam}}}"#);
        parse(text.as_bytes(), "ADD", "0.3.0")
    }

    #[test]
    fn bad_configs_name_the_field() {
        for (ipam, field, code) in [
            (
                r#"{"ranges":[[{"subnet":"192.0.2.0/24"},{"subnet":"2001:db8::/64"}]]}"#,
                "ipam.ranges[0]",
                7,
            ),
            (
                r#"{"ranges":[[{"subnet":"192.0.2.0/24","rangeStart":"198.51.100.1"}]]}"#,
                "rangeStart",
                7,
            ),
            (
                r#"{"ranges":[[{"subnet":"192.0.2.1/24"}]]}"#,
                "host bits",
                7,
            ),
            (
                r#"{"range":"192.0.2.0/24","range_end":"192.0.3.1"}"#,
                "range_end",
                7,
            ),
            (r#"{"range":"192.0.2.0/24","bogus":1}"#, "ipam.bogus", 7),
            (r#"{"range":"192.0.2.0/24","ranges":[]}"#, "one style", 7),
            (
                r#"{"ranges":[[{"subnet":"192.0.2.0/24"}],[{"subnet":"192.0.2.0/25"}]]}"#,
                "overlaps",
                7,
            ),
            (
                r#"{"range":"192.0.2.0/30","exclude":["192.0.2.1-192.0.2.2"]}"#,
                "no address",
                7,
            ),
            (
                r#"{"range":"192.0.2.0/24","store":"relative/dir"}"#,
                "ipam.store",
                7,
            ),
            (
                r#"{"range":"192.0.2.0/24","routes":[{"dst":"x"}]}"#,
                "routes[0].dst",
                7,
            ),
        ] {
            let e = conf(ipam).unwrap_err();
            assert!(e.to_string().contains(field), "{ipam}: {e}");
            assert_eq!(e.code(), code, "{ipam}");
        }
        assert_eq!(parse(b"{", "ADD", "0.3.0").unwrap_err().code(), 6);
        assert_eq!(
            parse(br#"{"cniVersion":"0.2.0"}"#, "ADD", "0.3.0")
                .unwrap_err()
                .code(),
            1
        );
        let e = parse(
            br#"{"cniVersion":"0.3.1","name":"n","ipam":{}}"#,
            "CHECK",
            "0.4.0",
        )
        .unwrap_err();
        assert!(e.to_string().contains("does not allow CHECK"), "{e}");
    }
}

//! The infra-operator's DNSData: `spec.hosts[]` (`ip`, `hostnames`) in, a hosts file out, one
//! line per address (`IP name name...`, names sorted), lines sorted by address.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct DnsData {
    spec: Spec,
}

#[derive(Debug, Deserialize)]
struct Spec {
    #[serde(default)]
    hosts: Vec<HostEntry>,
}

#[derive(Debug, Deserialize)]
struct HostEntry {
    ip: String,
    #[serde(default)]
    hostnames: Vec<String>,
}

/// The hosts file of DNSData YAML `text`; errors name `origin` and the entry.
pub fn hosts(text: &str, origin: &str) -> Result<String, String> {
    let d: DnsData = ipi_core::place::yaml(text).map_err(|e| format!("{origin}:{e}"))?;
    let mut by_ip: BTreeMap<IpAddr, BTreeSet<String>> = BTreeMap::new();
    for (i, h) in d.spec.hosts.iter().enumerate() {
        let ip: IpAddr = h.ip.parse().map_err(|_| {
            format!(
                "{origin}: spec.hosts[{i}].ip: `{}` is not an IP address",
                h.ip
            )
        })?;
        for (j, name) in h.hostnames.iter().enumerate() {
            ipi_core::name::check_name(name)
                .map_err(|e| format!("{origin}: spec.hosts[{i}].hostnames[{j}]: `{name}`: {e}"))?;
            by_ip
                .entry(ip)
                .or_default()
                .insert(name.to_ascii_lowercase());
        }
    }
    let mut out = String::new();
    for (ip, names) in by_ip {
        out.push_str(&ip.to_string());
        for n in names {
            out.push(' ');
            out.push_str(&n);
        }
        out.push('\n');
    }
    Ok(out)
}

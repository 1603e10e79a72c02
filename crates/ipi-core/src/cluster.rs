//! The cluster model, read from `install-config.yaml` (ipi-install-config(5)).
//!
//! Only the fields ipi-net uses are read: `metadata.name`, `baseDomain`,
//! `networking.machineNetwork[].cidr` (or the older `networking.machineCIDR`) and the VIPs of the
//! `baremetal`, `openstack` or `vsphere` platform (`apiVIPs`, `ingressVIPs`, the older singular
//! `apiVIP` and `ingressVIP`, and the optional `dnsVIP`). Everything else in that big file is
//! ignored. A field we use that is wrong is an error naming its path, and every such error is
//! reported at once, as the installer does.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use ipnetwork::IpNetwork;
use serde::Deserialize;

use crate::family::Family;
use crate::field::{FieldError, FieldErrors, FieldPath};
use crate::inventory::Inventory;
use crate::name;
use crate::vip::{self, VipKind, VipList};
use crate::vrid::Vrids;

/// The platforms whose clusters hold their own VIPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// Installer-provisioned bare metal.
    BareMetal,
    /// OpenStack.
    OpenStack,
    /// vSphere.
    VSphere,
}

impl Platform {
    /// The platform's key in install-config.yaml.
    pub fn key(self) -> &'static str {
        match self {
            Platform::BareMetal => "baremetal",
            Platform::OpenStack => "openstack",
            Platform::VSphere => "vsphere",
        }
    }
}

/// A validated cluster: everything the programs need to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// `metadata.name`.
    pub name: String,
    /// `baseDomain`.
    pub base_domain: String,
    /// The platform whose VIPs were read.
    pub platform: Platform,
    /// The machine networks, the primary one first.
    pub machine_networks: Vec<IpNetwork>,
    /// One or two API VIPs (two: one per family).
    pub api_vips: Vec<IpAddr>,
    /// One or two Ingress VIPs (two: one per family).
    pub ingress_vips: Vec<IpAddr>,
    /// The DNS VIP, on the clusters that have one.
    pub dns_vip: Option<IpAddr>,
}

/// An install-config.yaml that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The file could not be read.
    #[error("{origin}: cannot read: {source}")]
    Read {
        /// The file.
        origin: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not YAML of the expected shape.
    #[error("{origin}: {message}")]
    Yaml {
        /// The file.
        origin: String,
        /// The parser's message, with the field path and line where it has them.
        message: crate::place::YamlError,
    },
    /// Fields break the rules; every one is listed.
    #[error("{}", prefix_lines(origin, &errors.to_string()))]
    Invalid {
        /// The file.
        origin: String,
        /// What is wrong.
        errors: FieldErrors,
    },
}

fn prefix_lines(origin: &str, text: &str) -> String {
    text.lines()
        .map(|l| format!("{origin}: {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Cluster {
    /// Read and validate an install-config.yaml. With `nodes`, the VIPs are also checked against
    /// the nodes' addresses.
    pub fn load(path: &Path, nodes: Option<&Inventory>) -> Result<Self, ClusterError> {
        let (text, origin) = read(path)?;
        Self::parse(&text, &origin, nodes)
    }

    /// Parse and validate install-config.yaml text; `origin` names it in errors.
    pub fn parse(
        text: &str,
        origin: &str,
        nodes: Option<&Inventory>,
    ) -> Result<Self, ClusterError> {
        raw(text, origin)?
            .validate(nodes)
            .map_err(|errors| ClusterError::Invalid {
                origin: origin.to_owned(),
                errors,
            })
    }

    /// Only the machine networks of an install-config.yaml, with their rules: for choosing VIPs
    /// before the file has any (the rest of the file is not checked).
    pub fn load_machine_networks(path: &Path) -> Result<Vec<IpNetwork>, ClusterError> {
        let (text, origin) = read(path)?;
        let mut errors = FieldErrors::default();
        let networks = machine_networks(raw(&text, &origin)?.networking, &mut errors);
        errors
            .into_result(networks)
            .map_err(|errors| ClusterError::Invalid { origin, errors })
    }

    /// The cluster's DNS domain: `<name>.<baseDomain>`.
    pub fn domain(&self) -> String {
        format!("{}.{}", self.name, self.base_domain.trim_end_matches('.'))
    }

    /// The family of the primary (first) machine network.
    pub fn primary_family(&self) -> Family {
        // A validated cluster has at least one machine network; IPv4 if it had none.
        self.machine_networks
            .first()
            .map_or(Family::V4, |n| Family::of(n.ip()))
    }

    /// The API VIP of this family, if the cluster has one.
    pub fn api_vip(&self, family: Family) -> Option<IpAddr> {
        self.api_vips
            .iter()
            .copied()
            .find(|a| Family::of(*a) == family)
    }

    /// The Ingress VIP of this family, if the cluster has one.
    pub fn ingress_vip(&self, family: Family) -> Option<IpAddr> {
        self.ingress_vips
            .iter()
            .copied()
            .find(|a| Family::of(*a) == family)
    }

    /// The VRRP router ids OpenShift derives from the cluster name.
    pub fn vrids(&self) -> Vrids {
        Vrids::for_cluster(&self.name)
    }

    /// The API or Ingress VIP of this family, if the cluster has one.
    pub fn vip(&self, kind: VipKind, family: Family) -> Option<IpAddr> {
        match kind {
            VipKind::Api => self.api_vip(family),
            VipKind::Ingress => self.ingress_vip(family),
        }
    }

    /// The VRRP router id of the API or Ingress VIP's instances.
    pub fn vrid(&self, kind: VipKind) -> u8 {
        let vrids = self.vrids();
        match kind {
            VipKind::Api => vrids.api,
            VipKind::Ingress => vrids.ingress,
        }
    }
}

#[derive(Deserialize)]
struct RawInstallConfig {
    metadata: Option<RawMetadata>,
    #[serde(rename = "baseDomain")]
    base_domain: Option<String>,
    networking: Option<RawNetworking>,
    platform: Option<RawPlatform>,
}

#[derive(Deserialize)]
struct RawMetadata {
    name: Option<String>,
}

#[derive(Deserialize)]
struct RawNetworking {
    #[serde(rename = "machineNetwork")]
    machine_network: Option<Vec<RawMachineNetwork>>,
    /// The field machineNetwork replaced (OpenShift 4.1 to 4.3).
    #[serde(rename = "machineCIDR")]
    machine_cidr: Option<String>,
}

#[derive(Deserialize)]
struct RawMachineNetwork {
    cidr: Option<String>,
}

#[derive(Deserialize)]
struct RawPlatform {
    baremetal: Option<RawVips>,
    openstack: Option<RawVips>,
    vsphere: Option<RawVips>,
    /// Any other platform (`none`, `aws`...): named in the error, since it has no VIPs for us.
    #[serde(flatten)]
    other: BTreeMap<String, serde_norway::Value>,
}

// The installer reads YAML through Go's case-insensitive JSON decoder, so `apiVips` works too.
#[derive(Deserialize)]
struct RawVips {
    #[serde(rename = "apiVIPs", alias = "apiVips")]
    api_vips: Option<Vec<String>>,
    #[serde(rename = "ingressVIPs", alias = "ingressVips")]
    ingress_vips: Option<Vec<String>>,
    #[serde(rename = "apiVIP", alias = "apiVip")]
    api_vip: Option<String>,
    #[serde(rename = "ingressVIP", alias = "ingressVip")]
    ingress_vip: Option<String>,
    #[serde(rename = "dnsVIP", alias = "dnsVip")]
    dns_vip: Option<String>,
}

impl RawInstallConfig {
    fn validate(self, nodes: Option<&Inventory>) -> Result<Cluster, FieldErrors> {
        let mut errors = FieldErrors::default();
        let name = self.metadata.and_then(|m| m.name).unwrap_or_default();
        let name_path = FieldPath::new("metadata").child("name");
        if name.is_empty() {
            errors.push(FieldError::required(name_path, "cluster name required"));
        } else if let Err(e) = check_cluster_name(&name) {
            errors.push(FieldError::invalid(name_path, &name, e));
        }
        let base_domain = self.base_domain.unwrap_or_default();
        if base_domain.is_empty() {
            errors.push(FieldError::required(
                FieldPath::new("baseDomain"),
                "base domain required",
            ));
        } else if let Err(e) = name::check_name(&base_domain) {
            errors.push(FieldError::invalid(
                FieldPath::new("baseDomain"),
                &base_domain,
                e.to_string(),
            ));
        }
        let machine_networks = machine_networks(self.networking, &mut errors);
        let (platform, vips) = platform_vips(self.platform, &mut errors);
        let Some(platform) = platform else {
            return Err(errors);
        };
        let checked = vip::validate(&vips, &machine_networks, nodes, &mut errors);
        errors.into_result(())?;
        Ok(Cluster {
            name,
            base_domain,
            platform,
            machine_networks,
            api_vips: checked.api,
            ingress_vips: checked.ingress,
            dns_vip: checked.dns,
        })
    }
}

fn read(path: &Path) -> Result<(String, String), ClusterError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Read {
        origin: origin.clone(),
        source,
    })?;
    Ok((text, origin))
}

fn raw(text: &str, origin: &str) -> Result<RawInstallConfig, ClusterError> {
    crate::place::yaml(text).map_err(|message| ClusterError::Yaml {
        origin: origin.to_owned(),
        message,
    })
}

/// The cluster name becomes the first label of every cluster DNS name.
fn check_cluster_name(name: &str) -> Result<(), String> {
    name::check_label(name).map_err(|e| e.to_string())?;
    if name.chars().any(|c| c.is_ascii_uppercase()) {
        return Err("must be lowercase (it becomes a DNS label and a Kubernetes name)".into());
    }
    Ok(())
}

fn machine_networks(raw: Option<RawNetworking>, errors: &mut FieldErrors) -> Vec<IpNetwork> {
    let path = FieldPath::new("networking");
    // Each entry: the path errors about the network name, the path of its cidr, the cidr.
    let list: Vec<(FieldPath, FieldPath, Option<String>)> = match raw {
        Some(RawNetworking {
            machine_network: Some(list),
            ..
        }) if !list.is_empty() => list
            .into_iter()
            .enumerate()
            .map(|(i, n)| {
                let entry = path.child("machineNetwork").index(i);
                (entry.clone(), entry.child("cidr"), n.cidr)
            })
            .collect(),
        Some(RawNetworking {
            machine_cidr: Some(cidr),
            ..
        }) => {
            let entry = path.child("machineCIDR");
            vec![(entry.clone(), entry, Some(cidr))]
        }
        _ => {
            errors.push(FieldError::required(
                path.child("machineNetwork"),
                "at least one machine network is required",
            ));
            return Vec::new();
        }
    };
    let mut networks: Vec<(usize, IpNetwork)> = Vec::new();
    for (i, (entry, cidr_path, cidr)) in list.into_iter().enumerate() {
        let Some(text) = cidr.filter(|c| !c.is_empty()) else {
            errors.push(FieldError::required(
                cidr_path,
                "a machine network needs a cidr",
            ));
            continue;
        };
        let parsed = text
            .split_once('/')
            .and_then(|_| text.parse::<IpNetwork>().ok());
        let Some(network) = parsed else {
            errors.push(FieldError::invalid(
                cidr_path,
                &text,
                format!("invalid CIDR address: {text}"),
            ));
            continue;
        };
        if network.ip().is_unspecified() {
            errors.push(FieldError::invalid(
                entry,
                &text,
                "address must be specified",
            ));
            continue;
        }
        if network.ip() != network.network() {
            let expected = format!("{}/{}", network.network(), network.prefix());
            errors.push(FieldError::invalid(
                entry,
                &text,
                format!("invalid network address. got {text}, expecting {expected}"),
            ));
            continue;
        }
        for (j, earlier) in &networks {
            if overlap(earlier, &network) {
                errors.push(FieldError::invalid(
                    entry.clone(),
                    &text,
                    format!("machine network must not overlap with machine network {j}"),
                ));
            }
        }
        networks.push((i, network));
    }
    networks.into_iter().map(|(_, n)| n).collect()
}

/// Whether two networks share an address.
pub(crate) fn overlap(a: &IpNetwork, b: &IpNetwork) -> bool {
    a.contains(b.network()) || b.contains(a.network())
}

fn platform_vips(
    raw: Option<RawPlatform>,
    errors: &mut FieldErrors,
) -> (Option<Platform>, VipList) {
    let path = FieldPath::new("platform");
    let Some(raw) = raw else {
        errors.push(FieldError::required(
            path,
            "must specify one of the platforms (baremetal, openstack, vsphere)",
        ));
        return (None, VipList::default());
    };
    let mut given: Vec<(Platform, RawVips)> = Vec::new();
    for (platform, vips) in [
        (Platform::BareMetal, raw.baremetal),
        (Platform::OpenStack, raw.openstack),
        (Platform::VSphere, raw.vsphere),
    ] {
        if let Some(vips) = vips {
            given.push((platform, vips));
        }
    }
    let others: Vec<&String> = raw.other.keys().collect();
    if given.len() + others.len() > 1 {
        let mut names: Vec<&str> = given.iter().map(|(p, _)| p.key()).collect();
        names.extend(others.iter().map(|s| s.as_str()));
        errors.push(FieldError::invalid(
            path.clone(),
            names[0],
            format!(
                "must only specify a single type of platform; cannot use both {:?} and {:?}",
                names[0], names[1]
            ),
        ));
    }
    let Some((platform, vips)) = given.into_iter().next() else {
        match others.first() {
            Some(other) => errors.push(FieldError::invalid(
                path,
                other,
                "this platform has no VIPs for ipi-net to hold: use baremetal, openstack or vsphere",
            )),
            None => errors.push(FieldError::required(
                path,
                "must specify one of the platforms (baremetal, openstack, vsphere)",
            )),
        }
        return (None, VipList::default());
    };
    let path = path.child(platform.key());
    let list = VipList::from_fields(
        &path,
        vips.api_vips,
        vips.api_vip,
        vips.ingress_vips,
        vips.ingress_vip,
        vips.dns_vip,
        errors,
    );
    (Some(platform), list)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANAGED: &str = include_str!("../../../tests/fixtures/seeds/managed-install-config.yaml");

    fn parse(text: &str) -> Result<Cluster, ClusterError> {
        Cluster::parse(text, "install-config.yaml", None)
    }

    fn errors_of(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn reads_the_managed_cluster() {
        let c = parse(MANAGED).unwrap();
        assert_eq!(c.name, "managed");
        assert_eq!(c.domain(), "managed.example.com");
        assert_eq!(c.platform, Platform::OpenStack);
        assert_eq!(
            c.machine_networks,
            vec!["10.0.0.0/16".parse::<IpNetwork>().unwrap()]
        );
        assert_eq!(c.api_vips, vec!["10.0.0.5".parse::<IpAddr>().unwrap()]);
        assert_eq!(c.ingress_vips, vec!["10.0.0.7".parse::<IpAddr>().unwrap()]);
        assert_eq!(c.dns_vip, None);
        assert_eq!(c.primary_family(), Family::V4);
        assert_eq!(c.api_vip(Family::V4), Some("10.0.0.5".parse().unwrap()));
        assert_eq!(c.api_vip(Family::V6), None);
        assert_eq!((c.vrids().api, c.vrids().ingress), (124, 75));
    }

    #[test]
    fn reads_the_older_singular_fields_and_dns_vip() {
        let c = parse(
            "metadata: {name: ostest}\nbaseDomain: test.metalkube.org\nnetworking:\n  machineCIDR: 192.0.2.0/24\nplatform:\n  baremetal:\n    apiVIP: 192.0.2.5\n    ingressVIP: 192.0.2.10\n    dnsVIP: 192.0.2.2\n    hosts: []\n",
        )
        .unwrap();
        assert_eq!(c.platform, Platform::BareMetal);
        assert_eq!(c.api_vips, vec!["192.0.2.5".parse::<IpAddr>().unwrap()]);
        assert_eq!(c.dns_vip, Some("192.0.2.2".parse().unwrap()));
        assert_eq!((c.vrids().api, c.vrids().ingress), (14, 93));
    }

    #[test]
    fn ignores_fields_it_does_not_use() {
        let text = format!("{MANAGED}pullSecret: '{{}}'\ncompute:\n- name: worker\n  replicas: 3\nsshKey: ssh-ed25519 AAAA\n");
        assert!(parse(&text).is_ok());
    }

    #[test]
    fn the_issue_example() {
        let text = MANAGED.replace("    - 10.0.0.5\n", "    - 10.0.0.5\n    - 10.0.0.300\n");
        let err = errors_of(&text);
        assert!(
            err.contains(r#"platform.openstack.apiVIPs[1]: Invalid value: "10.0.0.300": "10.0.0.300" is not a valid IP"#),
            "{err}"
        );
    }

    #[test]
    fn missing_fields_are_all_reported() {
        let err = errors_of("apiVersion: v1\n");
        for e in [
            "install-config.yaml: metadata.name: Required value: cluster name required",
            "install-config.yaml: baseDomain: Required value: base domain required",
            "install-config.yaml: networking.machineNetwork: Required value: at least one machine network is required",
            "install-config.yaml: platform: Required value: must specify one of the platforms (baremetal, openstack, vsphere)",
        ] {
            assert!(err.contains(e), "missing {e:?} in\n{err}");
        }
    }

    #[test]
    fn bad_names_and_platforms() {
        let err = errors_of(
            &MANAGED
                .replace("name: managed", "name: Managed_1")
                .replace("baseDomain: example.com", "baseDomain: example..com"),
        );
        assert!(
            err.contains(r#"metadata.name: Invalid value: "Managed_1""#),
            "{err}"
        );
        assert!(
            err.contains(r#"baseDomain: Invalid value: "example..com""#),
            "{err}"
        );
        let err = errors_of(&MANAGED.replace("  openstack:", "  none: {}\n  openstack:"));
        assert!(err.contains("must only specify a single type of platform; cannot use both \"openstack\" and \"none\""), "{err}");
        let err = errors_of(&MANAGED.replace(
            "  openstack:\n    apiVIPs:\n    - 10.0.0.5\n    ingressVIPs:\n    - 10.0.0.7\n",
            "  aws: {}\n",
        ));
        assert!(
            err.contains(r#"platform: Invalid value: "aws": this platform has no VIPs"#),
            "{err}"
        );
    }

    #[test]
    fn machine_network_rules() {
        let err = errors_of(&MANAGED.replace(
            "  - cidr: 10.0.0.0/16\n",
            "  - cidr: 10.0.0.0/16\n  - cidr: 10.0.4.0/24\n  - cidr: 10.1.0.1/16\n  - cidr: nonsense\n  - cidr: 2001:db8::/32\n  - {}\n",
        ));
        for e in [
            r#"networking.machineNetwork[1]: Invalid value: "10.0.4.0/24": machine network must not overlap with machine network 0"#,
            r#"networking.machineNetwork[2]: Invalid value: "10.1.0.1/16": invalid network address. got 10.1.0.1/16, expecting 10.1.0.0/16"#,
            r#"networking.machineNetwork[3].cidr: Invalid value: "nonsense": invalid CIDR address: nonsense"#,
            "networking.machineNetwork[5].cidr: Required value",
        ] {
            assert!(err.contains(e), "missing {e:?} in\n{err}");
        }
        assert!(!err.contains("machineNetwork[4]"), "{err}");
    }

    #[test]
    fn yaml_errors_name_line_and_field() {
        let err = errors_of(
            &MANAGED.replace("    apiVIPs:\n    - 10.0.0.5\n", "    apiVIPs: 10.0.0.5\n"),
        );
        assert!(err.starts_with("install-config.yaml: "), "{err}");
        assert!(err.contains("apiVIPs"), "{err}");
        assert!(err.contains(":14:"), "{err}");
    }
}

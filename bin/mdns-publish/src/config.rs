//! What a node publishes: from mdns-publisher's config file (YAML or JSON,
//! mdns-publish.conf(5)), or what OpenShift publishes for a node of a cluster.

use std::net::IpAddr;
use std::path::Path;

use ipi_core::{Cluster, Role};
use serde::Deserialize;

use crate::records::{Host, Publication, Service, OTHER_TTL};

/// The port OpenShift's `_workstation._tcp` instances give.
pub const WORKSTATION_PORT: u16 = 42424;
/// etcd's peer port, of the `_etcd-server-ssl._tcp` instances.
pub const ETCD_PORT: u16 = 2380;

/// A config that cannot be used, or a node that cannot publish what OpenShift's do; the
/// message names the file and the place, or the option.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{0}")]
    Read(#[from] ipi_core::place::Errors),
    /// Not YAML, or not a config (an unknown field, a bad address).
    #[error("{origin}:{why}")]
    Syntax {
        /// The file.
        origin: String,
        /// The line and what was wrong there.
        why: ipi_core::place::YamlError,
    },
    /// `collision_avoidance` is neither `hostname` nor `none`.
    #[error("{origin}: collision_avoidance: `{value}` is not `hostname` or `none`")]
    CollisionAvoidance {
        /// The file.
        origin: String,
        /// What it said.
        value: String,
    },
    /// No services.
    #[error("{origin}: services: nothing to publish")]
    NoServices {
        /// The file.
        origin: String,
    },
    /// A service type that is not `_name._proto`.
    #[error(
        "{origin}: services[{index}].type: `{kind}` is not a service type like _workstation._tcp"
    )]
    ServiceType {
        /// The file.
        origin: String,
        /// The service's index.
        index: usize,
        /// Its type.
        kind: String,
    },
    /// A control-plane node whose host name gives no etcd member number.
    #[error("--hostname {hostname}: a control-plane node's name must end in its number (master-0) to publish etcd-N")]
    EtcdNumber {
        /// The host name.
        hostname: String,
    },
}

/// mdns-publisher's config file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The address whose interface is published.
    pub bind_address: IpAddr,
    /// `hostname`: every instance name gets the host name appended, so that nodes that all
    /// publish "CLUSTER Workstation" do not collide; `none` (the default): names as written.
    #[serde(default)]
    pub collision_avoidance: Option<String>,
    /// The services.
    #[serde(default, alias = "service")]
    pub services: Vec<ServiceConfig>,
}

/// One `services` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    /// The instance name.
    pub name: String,
    /// The host the instance points at, in `.local.`.
    pub host_name: String,
    /// The service type, `_workstation._tcp`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The domain (default `local.`).
    #[serde(default = "local")]
    pub domain: String,
    /// The port.
    pub port: u16,
    /// The TTL of its PTR and TXT records (default 4500).
    #[serde(default)]
    pub ttl: Option<u32>,
}

fn local() -> String {
    "local.".to_string()
}

fn fqdn(name: &str) -> String {
    if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    }
}

impl Config {
    /// Reads `path` (YAML, of which JSON is a part); the error names the file and the place.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = ipi_core::place::read(path)?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Reads config text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let c: Config = ipi_core::place::yaml(text).map_err(|why| ConfigError::Syntax {
            origin: origin.to_owned(),
            why,
        })?;
        match c.collision_avoidance.as_deref() {
            None | Some("none" | "hostname") => {}
            Some(other) => {
                return Err(ConfigError::CollisionAvoidance {
                    origin: origin.to_owned(),
                    value: other.to_owned(),
                })
            }
        }
        if c.services.is_empty() {
            return Err(ConfigError::NoServices {
                origin: origin.to_owned(),
            });
        }
        if let Some((index, s)) = c
            .services
            .iter()
            .enumerate()
            .find(|(_, s)| !s.kind.starts_with('_') || !s.kind.contains("._"))
        {
            return Err(ConfigError::ServiceType {
                origin: origin.to_owned(),
                index,
                kind: s.kind.clone(),
            });
        }
        Ok(c)
    }

    /// What it publishes when the interface holds `addresses` and the host is `hostname`.
    pub fn publication(&self, addresses: &[IpAddr], hostname: &str) -> Publication {
        let mut p = Publication::default();
        for s in &self.services {
            let target = fqdn(&s.host_name);
            if !p.hosts.iter().any(|h| h.name == target) {
                p.hosts.push(Host {
                    name: target.clone(),
                    addresses: addresses.to_vec(),
                });
            }
            let instance = if self.collision_avoidance.as_deref() == Some("hostname") {
                format!("{} {}", s.name, short(hostname))
            } else {
                s.name.clone()
            };
            p.services.push(Service {
                instance,
                kind: s.kind.clone(),
                domain: fqdn(&s.domain),
                port: s.port,
                target,
                txt: Vec::new(),
                ttl: s.ttl.unwrap_or(OTHER_TTL),
            });
        }
        p
    }
}

fn short(hostname: &str) -> &str {
    hostname.split('.').next().unwrap_or(hostname)
}

/// What OpenShift publishes for node `hostname` of cluster `cluster` in `role`: the host name,
/// a `_workstation._tcp` instance `CLUSTER HOSTNAME` (TXT `role=ROLE`), and on a control-plane
/// node `_etcd-server-ssl._tcp` instance `CLUSTER etcd-N` pointing at `etcd-N.local.` port
/// 2380, N being the host name's trailing number.
pub fn openshift(
    cluster: &str,
    hostname: &str,
    role: Role,
    addresses: &[IpAddr],
) -> Result<Publication, ConfigError> {
    let host = short(hostname).to_ascii_lowercase();
    let mut p = Publication::default();
    p.hosts.push(Host {
        name: format!("{host}.local."),
        addresses: addresses.to_vec(),
    });
    p.services.push(Service {
        instance: format!("{cluster} {host}"),
        kind: "_workstation._tcp".into(),
        domain: "local.".into(),
        port: WORKSTATION_PORT,
        target: format!("{host}.local."),
        txt: vec![format!("role={role}")],
        ttl: OTHER_TTL,
    });
    if role == Role::Master {
        // The trailing number: master-2 is etcd-2 (master-02 too). None, or one too large,
        // is an error: a made-up number could be another member's.
        let number = &host[host.trim_end_matches(|c: char| c.is_ascii_digit()).len()..];
        let n: u32 = number.parse().map_err(|_| ConfigError::EtcdNumber {
            hostname: hostname.to_owned(),
        })?;
        let etcd = format!("etcd-{n}.local.");
        p.hosts.push(Host {
            name: etcd.clone(),
            addresses: addresses.to_vec(),
        });
        p.services.push(Service {
            instance: format!("{cluster} {}", etcd.trim_end_matches(".local.")),
            kind: crate::browse::ETCD_TYPE.into(),
            domain: "local.".into(),
            port: ETCD_PORT,
            target: etcd,
            txt: Vec::new(),
            ttl: OTHER_TTL,
        });
    }
    Ok(p)
}

/// A node of an OpenShift cluster, publishing what OpenShift's nodes publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenShiftNode {
    /// The cluster's name.
    pub cluster: String,
    /// The node's host name.
    pub hostname: String,
    /// The node's role.
    pub role: Role,
    /// The cluster's API and Ingress VIPs.
    pub vips: Vec<IpAddr>,
}

impl OpenShiftNode {
    /// Node `hostname` of `cluster` in `role`; an error when it cannot publish what OpenShift's
    /// nodes do (a control-plane node without a number).
    pub fn new(cluster: &Cluster, hostname: &str, role: Role) -> Result<Self, ConfigError> {
        openshift(&cluster.name, hostname, role, &[])?;
        Ok(OpenShiftNode {
            cluster: cluster.name.clone(),
            hostname: hostname.to_owned(),
            role,
            vips: cluster
                .api_vips
                .iter()
                .chain(&cluster.ingress_vips)
                .copied()
                .collect(),
        })
    }

    /// What it publishes when its interface holds `addresses`.
    pub fn publication(&self, addresses: &[IpAddr]) -> Result<Publication, ConfigError> {
        // The VIPs are the cluster's, not this node's: a node holding one must not publish it
        // as its own address (dns-render would refuse the inventory).
        let own: Vec<IpAddr> = addresses
            .iter()
            .filter(|a| !self.vips.contains(a))
            .copied()
            .collect();
        openshift(&self.cluster, &self.hostname, self.role, &own)
    }
}

/// Where a node's publication comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An mdns-publisher config, and this host's name.
    Config {
        /// The config.
        config: Config,
        /// This host's name (for `collision_avoidance: hostname`).
        hostname: String,
    },
    /// What OpenShift publishes for a node.
    OpenShift(OpenShiftNode),
}

impl Source {
    /// What it publishes when the interface holds `addresses`.
    pub fn publication(&self, addresses: &[IpAddr]) -> Result<Publication, ConfigError> {
        match self {
            Source::Config { config, hostname } => Ok(config.publication(addresses, hostname)),
            Source::OpenShift(node) => node.publication(addresses),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "bind_address: 192.0.2.10\ncollision_avoidance: hostname\nservices:\n- name: lab Workstation\n  host_name: master-0.local\n  type: _workstation._tcp\n  port: 42424\n  ttl: 3200\n";

    #[test]
    fn mdns_publisher_configs_in_yaml_and_json() {
        let c = Config::parse(YAML, "c.yaml").unwrap();
        let a: Vec<IpAddr> = vec!["192.0.2.10".parse().unwrap()];
        let p = c.publication(&a, "master-0.example.com");
        assert_eq!(p.services[0].instance, "lab Workstation master-0");
        assert_eq!(p.services[0].ttl, 3200);
        assert_eq!(p.hosts[0].name, "master-0.local.");
        let json = r#"{"bind_address": "2001:db8::1", "services": [{"name": "x", "host_name": "h.local.", "type": "_http._tcp", "port": 80}]}"#;
        assert_eq!(
            Config::parse(json, "c.json").unwrap().services[0].domain,
            "local."
        );
    }

    #[test]
    fn errors_name_the_place() {
        let e = Config::parse("bind_address: 192.0.2.300\nservices: []\n", "c.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.yaml:1:"), "{e}");
        let e = Config::parse(&YAML.replace("ttl", "tll"), "c.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tll"), "{e}");
        let e = Config::parse(&YAML.replace("hostname", "rename"), "c.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("collision_avoidance"), "{e}");
    }

    #[test]
    fn what_openshift_publishes() {
        let a: Vec<IpAddr> = vec!["192.0.2.10".parse().unwrap()];
        let p = openshift("lab", "master-2", Role::Master, &a).unwrap();
        let names: Vec<_> = p
            .services
            .iter()
            .map(|s| format!("{}|{}|{}", s.instance, s.kind, s.target))
            .collect();
        assert_eq!(
            names,
            [
                "lab master-2|_workstation._tcp|master-2.local.",
                "lab etcd-2|_etcd-server-ssl._tcp|etcd-2.local."
            ]
        );
        assert_eq!(
            openshift("lab", "worker-0", Role::Worker, &a)
                .unwrap()
                .services
                .len(),
            1
        );
        assert!(openshift("lab", "control", Role::Master, &a).is_err());
        assert!(openshift("lab", "master-99999999999", Role::Master, &a).is_err());
        let p = openshift("lab", "master-02", Role::Master, &a).unwrap();
        assert_eq!(p.services[1].target, "etcd-2.local.");
    }
}

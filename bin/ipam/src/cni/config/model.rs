//! The network config's model, as [`super::parse`] gives it: [`NetConf`], its [`Ipam`]
//! section and [`RangeSet`]s, the [`ConfigError`] of one that cannot be used.

use std::net::IpAddr;

use ipi_store::range::{Space, Span};
use ipi_store::store::StoreSpec;
use ipnetwork::IpNetwork;
use serde::Serialize;

use crate::alloc::{Order, Pool};

/// A network config that cannot be used. Each kind has its CNI error code ([`Self::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not JSON, or not a JSON object.
    #[error("network config on stdin: {0}")]
    Decode(String),
    /// A version we do not speak, or one too old for the command.
    #[error("network config on stdin: {msg}")]
    Version {
        /// What is wrong.
        msg: String,
        /// The versions we speak.
        details: String,
    },
    /// A field that is missing or wrong.
    #[error("network config on stdin: {field}: {why}")]
    Invalid {
        /// Where, as a JSON path (`ipam.ranges[0][1].rangeStart`).
        field: String,
        /// What is wrong, and what would be right.
        why: String,
    },
}

impl ConfigError {
    /// The CNI error code: 6 decoding failure, 1 incompatible version, 7 invalid config.
    pub fn code(&self) -> u32 {
        match self {
            Self::Decode(_) => 6,
            Self::Version { .. } => 1,
            Self::Invalid { .. } => 7,
        }
    }

    /// The longer explanation for the error object's `details`.
    pub fn details(&self) -> &str {
        match self {
            Self::Version { details, .. } => details,
            _ => "",
        }
    }
}

pub(super) fn invalid(field: impl Into<String>, why: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        why: why.to_string(),
    }
}

/// Which style the `ipam` section is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `range` / `ipRanges`.
    Whereabouts,
    /// `ranges` / `subnet`.
    HostLocal,
}

/// A network config, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct NetConf {
    /// `cniVersion`, one of [`super::SUPPORTED`]: the version of the result.
    pub cni_version: String,
    /// The network's `name`.
    pub name: String,
    /// The `ipam` section.
    pub ipam: Ipam,
    /// `dns` of the network config (the `ipam` section's own `dns` wins over it).
    pub dns: Option<Dns>,
    /// `cni.dev/valid-attachments` (GC): (container id, interface) pairs.
    pub valid_attachments: Option<Vec<(String, String)>>,
    /// The addresses of `prevResult.ips` (CHECK), when there is a previous result.
    pub prev_ips: Option<Vec<IpAddr>>,
    /// Addresses asked for in the config: the `ips` capability (`runtimeConfig.ips`, how
    /// Multus passes a pod's static addresses) and `args.cni.ips`, as host-local reads them.
    pub requested: Vec<IpAddr>,
}

/// The `ipam` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Ipam {
    /// The style it is written in.
    pub style: Style,
    /// One address is handed out from each range set: two sets of two families for dual stack.
    pub sets: Vec<RangeSet>,
    /// `routes`, returned in the result as they are.
    pub routes: Vec<Route>,
    /// `dns`.
    pub dns: Option<Dns>,
    /// host-local's `resolvConf`: a resolv.conf whose servers, domain, search and options go to
    /// the result's `dns`.
    pub resolv_conf: Option<String>,
    /// The store: `store` (a directory, `file://PATH`, `etcd://...`, `etcd+https://...`) or
    /// whereabouts' `etcd_host`, with whereabouts' TLS files and credentials.
    pub store: StoreSpec,
    /// What the pools of this network are named after: the network's `name`, or whereabouts'
    /// `network_name`.
    pub network: String,
    /// `gc_grace` (default 60 s): a GC frees no reservation younger than this, which an ADD
    /// still in flight when the runtime listed its attachments may hold.
    pub gc_grace: std::time::Duration,
}

/// Where a set's address may come from: ranges of one family.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSet {
    /// The ranges, tried in order.
    pub ranges: Vec<Range>,
    /// Addresses never handed out (whereabouts' `exclude`).
    pub excluded: Vec<Span>,
}

/// One range: a span of a subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// The subnet (its prefix length goes with every address handed out).
    pub subnet: IpNetwork,
    /// What may be handed out (before exclusions).
    pub span: Span,
    /// The gateway given with the address, never handed out itself.
    pub gateway: Option<IpAddr>,
}

/// A route of the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    /// The destination, as written (a CIDR).
    pub dst: String,
    /// The next hop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    /// CNI 1.1.0's route attributes, passed on as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u64>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advmss: Option<u64>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u64>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<u64>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<u64>,
}

/// DNS settings of the result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Dns {
    /// Name servers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    /// The local domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Search domains.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    /// resolver options.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl Dns {
    /// Nothing set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

impl RangeSet {
    /// What the set hands out: its ranges, never a subnet's network or (IPv4) broadcast
    /// address, a gateway or an excluded address.
    pub fn space(&self) -> Space {
        let mut excluded = self.excluded.clone();
        for r in &self.ranges {
            let whole = Span::of_network(r.subnet);
            let bits = if r.subnet.is_ipv4() { 32 } else { 128 };
            // A /31 or /127 (RFC 3021) uses both addresses, a /32 or /128 its only one.
            if r.subnet.prefix() + 1 < bits {
                excluded.push(Span::single(whole.first));
                if r.subnet.is_ipv4() {
                    excluded.push(Span::single(whole.last));
                }
            }
            excluded.extend(r.gateway.map(Span::single));
        }
        let mut space = Space::new(self.ranges.iter().map(|r| r.span).collect());
        space.excluded = excluded;
        space
    }

    /// The range `ip` belongs to.
    pub fn range_of(&self, ip: IpAddr) -> Option<&Range> {
        self.ranges.iter().find(|r| r.span.contains(ip))
    }
}

impl Ipam {
    /// The prefix of every pool of this network in the store: `cni/NETWORK/`.
    pub fn pool_prefix(&self) -> String {
        format!("cni/{}/", self.network)
    }

    /// One pool per range set, `cni/NETWORK/INDEX`, handing addresses out round-robin as
    /// host-local does (a released address is reused last).
    pub fn pools(&self) -> Vec<Pool> {
        self.sets
            .iter()
            .enumerate()
            .map(|(i, set)| Pool {
                name: format!("{}{i}", self.pool_prefix()),
                space: set.space(),
                order: Order::RoundRobin,
            })
            .collect()
    }
}

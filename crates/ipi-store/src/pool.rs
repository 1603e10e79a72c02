//! MetalLB address pools (metallb.io/v1beta1 IPAddressPool): addresses for services, shared
//! between the services that ask with one sharing key.

use std::net::IpAddr;
use std::path::Path;

use serde::Deserialize;

use crate::object::{parse_object, read, Problems};
use crate::range::{Order, Pool, Space, Span};

/// An IPAddressPool's spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PoolSpec {
    addresses: Vec<String>,
    #[serde(default = "yes")]
    auto_assign: bool,
    #[serde(default, rename = "avoidBuggyIPs")]
    avoid_buggy_ips: bool,
    /// Which namespaces and services may use the pool: the cluster's business, not ours.
    #[serde(default)]
    #[allow(dead_code)]
    service_allocation: Option<serde_norway::Value>,
}

fn yes() -> bool {
    true
}

/// A pool read and checked.
#[derive(Debug, Clone)]
pub struct AddressPool {
    /// Its name (metadata.name).
    pub name: String,
    /// Whether MetalLB hands its addresses out unasked (informational here: a `pool reserve`
    /// always asks for this pool by name).
    pub auto_assign: bool,
    /// Where its addresses come from.
    pub pool: Pool,
    /// Its labels (metadata.labels), for an L2Advertisement's `ipAddressPoolSelectors`.
    pub labels: std::collections::BTreeMap<String, String>,
}

impl AddressPool {
    /// Reads and checks an IPAddressPool; Err lists every problem.
    pub fn load(path: &Path) -> Result<Self, Problems> {
        Self::parse(&read(path)?, &path.display().to_string())
    }

    /// Reads and checks an IPAddressPool from `text`, named `file` in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, Problems> {
        let (meta, spec): (_, PoolSpec) = parse_object(text, file, "IPAddressPool")?;
        let mut problems = Vec::new();
        if meta.name.is_empty() {
            problems.push(format!(
                "{file}: metadata.name is required (it names the pool)"
            ));
        }
        if spec.addresses.is_empty() {
            problems.push(format!("{file}: spec.addresses is empty"));
        }
        let mut spans: Vec<Span> = Vec::new();
        for (i, text) in spec.addresses.iter().enumerate() {
            // MetalLB: a CIDR (every address of it, network and broadcast included) or A-B.
            let parsed = if text.contains('/') || text.contains('-') {
                Span::parse(text).map_err(|e| e.to_string())
            } else {
                Err(format!("{text:?} is neither a CIDR nor a range A-B"))
            };
            match parsed {
                Err(e) => problems.push(format!("{file}: spec.addresses[{i}]: {e}")),
                Ok(span) => {
                    if let Some(other) = spans.iter().find(|o| o.overlaps(&span)) {
                        problems.push(format!(
                            "{file}: spec.addresses[{i}]: {span} overlaps {other}"
                        ));
                    }
                    spans.push(span);
                }
            }
        }
        if !problems.is_empty() {
            return Err(Problems(problems));
        }
        let mut space = Space::new(spans);
        space.avoid_buggy = spec.avoid_buggy_ips;
        Ok(Self {
            pool: Pool {
                name: format!("pool/{}", meta.name),
                space,
                order: Order::Lowest,
            },
            name: meta.name,
            labels: meta.labels,
            auto_assign: spec.auto_assign,
        })
    }
}

/// What `ipam pool reserve` prints.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The pool.
    pub pool: String,
    /// The request.
    pub name: String,
    /// The sharing key, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing_key: Option<String>,
    /// The address.
    pub address: IpAddr,
    /// Whether this request took it now (false: the same answer as before).
    pub new: bool,
}

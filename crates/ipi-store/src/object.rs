//! Kubernetes objects as ipi-net reads them (a NetConfig, an IPSet, a MetalLB IPAddressPool or
//! L2Advertisement): the kind and API group checked, the metadata kept, the spec handed on; and
//! the [`Problems`] of one file, every one listed with its place.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// A Kubernetes object: what ipi-net reads of one.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Object<S> {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    spec: S,
    /// An object read back from a cluster carries its status; it is ignored.
    #[serde(default)]
    #[allow(dead_code)]
    status: Option<serde_norway::Value>,
}

/// What ipi-net reads of an object's metadata (the rest is the cluster's business).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Metadata {
    /// The object's name.
    #[serde(default)]
    pub name: String,
    /// Its namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Its labels (what an L2Advertisement's `ipAddressPoolSelectors` match).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// The problems of one file: `FILE: PLACE: PROBLEM`, one a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("\n"))]
pub struct Problems(pub Vec<String>);

/// Reads a whole input file; the error names it.
pub fn read(path: &Path) -> Result<String, Problems> {
    std::fs::read_to_string(path)
        .map_err(|e| Problems(vec![format!("{}: cannot read: {e}", path.display())]))
}

/// Reads a Kubernetes object of `kind` from `text` (YAML or JSON) named `name` in errors.
pub fn parse_object<S: serde::de::DeserializeOwned>(
    text: &str,
    name: &str,
    kind: &str,
) -> Result<(Metadata, S), Problems> {
    let object: Object<S> =
        ipi_core::place::yaml(text).map_err(|e| Problems(vec![format!("{name}:{e}")]))?;
    if object.kind.as_deref().is_some_and(|k| k != kind) {
        return Err(Problems(vec![format!(
            "{name}: kind is {:?}, expected {kind}",
            object.kind.unwrap_or_default()
        )]));
    }
    let group = if kind == "IPAddressPool" || kind == "L2Advertisement" {
        "metallb.io"
    } else {
        "network.openstack.org"
    };
    if let Some(v) = &object.api_version {
        if v.split_once('/').map(|(g, _)| g) != Some(group) {
            return Err(Problems(vec![format!(
                "{name}: apiVersion {v:?}: a {kind} is {group}/VERSION"
            )]));
        }
    }
    Ok((object.metadata, object.spec))
}

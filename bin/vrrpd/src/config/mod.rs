//! keepalived.conf: the model vrrpd runs ([`model`]), read with file:line errors.
//!
//! [`tree`] reads the syntax (words, quotes, comments, blocks, includes), [`parse`] gives it
//! meaning, [`checks`] looks across blocks, [`write`] writes a model back as keepalived.conf,
//! and [`openshift`] builds the model OpenShift runs on a node from the cluster. Every problem is collected, none stops the reading,
//! so one run of `vrrpd check-config` lists them all.

pub mod checks;
pub mod error;
pub mod model;
pub mod openshift;
pub mod parse;
pub mod tree;
pub mod write;

use std::path::Path;

pub use error::ConfigErrors;
pub use model::{
    Command, Config, GlobalDefs, Location, Notify, SyncGroup, TrackedInterface, TrackedScript,
    User, VirtualAddress, VrrpInstance, VrrpScript,
};

/// Reads a configuration from `text`; `origin` names it in errors and anchors includes.
pub fn parse_str(text: &str, origin: &str) -> Result<Config, ConfigErrors> {
    let mut errors = ConfigErrors::default();
    let nodes = tree::parse(text, origin, &mut errors);
    let config = parse::config(&nodes, &mut errors);
    checks::check(&config, &mut errors);
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

/// Reads a configuration file (`-`: standard input).
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    let text = ipi_core::place::read(path)?;
    parse_str(&text, &path.display().to_string())
}

/// The configuration `run` and `render` use: a keepalived.conf (`-f`), or what OpenShift runs on
/// a node of the cluster (`--cluster ... --role ... --interface ...`). Errors name their place.
pub fn load_source(source: &crate::cli::Source) -> Result<Config, String> {
    if let Some(path) = &source.config {
        return load(path).map_err(|e| e.to_string());
    }
    let (Some(cluster), Some(role), Some(interface)) =
        (&source.cluster, source.role, &source.interface)
    else {
        return Err("give -f FILE, or --cluster FILE --role ROLE --interface IF".to_string());
    };
    let nodes = match &source.nodes {
        Some(path) => Some(ipi_core::Inventory::load(path).map_err(|e| e.to_string())?),
        None => None,
    };
    let cluster = ipi_core::Cluster::load(cluster, nodes.as_ref()).map_err(|e| e.to_string())?;
    let config = openshift::from_cluster(&cluster, role, interface, nodes.as_ref(), source.unicast);
    // What we build must be what we would read.
    parse_str(&write::write(&config), "(rendered)").map_err(|e| e.to_string())
}

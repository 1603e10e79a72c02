//! keepalived.conf: the model vrrpd runs ([`model`]), read with file:line errors.
//!
//! [`tree`] reads the syntax (words, quotes, comments, blocks, includes), [`parse`] gives it
//! meaning, [`checks`] looks across blocks, [`write`] writes a model back as keepalived.conf,
//! [`openshift`] builds the model OpenShift runs on a node from the cluster, and [`source`] says
//! which of the two `run` and `render` use. Every problem is collected, none stops the reading,
//! so one run of `vrrpd check-config` lists them all.

pub mod checks;
pub mod error;
pub mod model;
pub mod openshift;
pub mod parse;
pub mod source;
pub mod tree;
pub mod write;

use std::path::Path;

pub use error::ConfigErrors;
pub use model::{
    Command, Config, GlobalDefs, Location, Notify, SyncGroup, TrackedInterface, TrackedScript,
    User, VirtualAddress, VrrpInstance, VrrpScript,
};
pub use source::{load_source, Source, SourceError};

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

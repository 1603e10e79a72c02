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
    let scripts = match &source.scripts_dir {
        Some(dir) => openshift::Scripts::Dir(scripts_dir(dir)?),
        None => openshift::Scripts::OpenShift,
    };
    let cluster = ipi_core::Cluster::load(cluster, nodes.as_ref()).map_err(|e| e.to_string())?;
    let config = openshift::from_cluster(
        &cluster,
        role,
        interface,
        nodes.as_ref(),
        source.unicast,
        &scripts,
    );
    // What we build must be what we would read.
    parse_str(&write::write(&config), "(rendered)").map_err(|e| e.to_string())
}

/// `--scripts-dir DIR` as it goes into a script line: absolute (vrrpd runs scripts without a
/// shell or a working directory of their own), UTF-8 and without white space (a script line is
/// split into words on it), without a trailing `/`.
fn scripts_dir(dir: &Path) -> Result<String, String> {
    let Some(text) = dir.to_str() else {
        return Err(format!(
            "--scripts-dir {}: not UTF-8, which a script line cannot hold",
            dir.display()
        ));
    };
    if !dir.is_absolute() {
        return Err(format!(
            "--scripts-dir {text}: give an absolute path (such as /etc/ipi-net/keepalived)"
        ));
    }
    if text.chars().any(char::is_whitespace) {
        return Err(format!(
            "--scripts-dir {text:?}: white space would split the script line; give a path without it"
        ));
    }
    let trimmed = text.trim_end_matches('/');
    Ok(if trimmed.is_empty() { "/" } else { trimmed }.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_dir_goes_into_a_script_line_as_one_absolute_word() {
        assert_eq!(
            scripts_dir(Path::new("/etc/ipi-net/keepalived/")).as_deref(),
            Ok("/etc/ipi-net/keepalived")
        );
        assert_eq!(scripts_dir(Path::new("/")).as_deref(), Ok("/"));
        for bad in ["keepalived", "./k", "/etc/my scripts", "/etc/tab\there"] {
            let e = scripts_dir(Path::new(bad)).unwrap_err();
            assert!(e.starts_with("--scripts-dir"), "{bad}: {e}");
        }
    }
}

//! Where `run` and `render` take their configuration from: a keepalived.conf, or the cluster
//! description OpenShift would render one from. A plain value (no clap): [`crate::cli`] fills
//! it from the command line, and anyone else (tests, the daemon's reload) can build one.

use std::path::{Path, PathBuf};

use ipi_core::Role;

use super::model::{Config, User};
use super::{load_as, openshift, parse_str, write, ConfigErrors, LexOptions};

/// A keepalived.conf, or the cluster description OpenShift would render one from. The fields
/// are the command line's; [`load_source`] says what is missing when they do not add up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// A keepalived.conf (`-` for standard input).
    pub config: Option<PathBuf>,
    /// The cluster's install-config.yaml.
    pub cluster: Option<PathBuf>,
    /// This node's role.
    pub role: Option<Role>,
    /// The interface that holds the VIPs.
    pub interface: Option<String>,
    /// The node inventory (ipi-nodes(5)): unicast peers and VIP checks.
    pub nodes: Option<PathBuf>,
    /// Send adverts to the other nodes (from `nodes`) instead of multicast.
    pub unicast: bool,
    /// Track scripts from this directory instead of /etc/keepalived's and curl.
    pub scripts_dir: Option<PathBuf>,
    /// Who the track scripts run as, `USER` or `USER:GROUP` (global_defs' `script_user`);
    /// vrrpd's default users when absent.
    pub script_user: Option<String>,
    /// The configuration id of `@ID` lines (keepalived's `-i`); the short host name when
    /// absent.
    pub config_id: Option<String>,
}

impl Source {
    /// Whether the configuration can be read again (SIGHUP): standard input cannot.
    pub fn is_reloadable(&self) -> bool {
        self.config.as_ref().is_none_or(|p| p.as_os_str() != "-")
    }
}

/// Why no configuration came from a [`Source`]. Each message names its place.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The keepalived.conf (given, or rendered from the cluster) is wrong.
    #[error(transparent)]
    Config(#[from] ConfigErrors),
    /// Neither a file nor a whole cluster description.
    #[error("give -f FILE, or --cluster FILE --role ROLE --interface IF")]
    Incomplete,
    /// The node inventory cannot be read.
    #[error(transparent)]
    Inventory(#[from] ipi_core::InventoryError),
    /// The install-config.yaml cannot be read.
    #[error(transparent)]
    Cluster(#[from] ipi_core::ClusterError),
    /// `--scripts-dir` cannot go into a script line.
    #[error("--scripts-dir {dir}: {why}")]
    ScriptsDir {
        /// The directory as given.
        dir: String,
        /// What is wrong and what would be right.
        why: &'static str,
    },
    /// The configuration came from standard input, which cannot be read twice.
    #[error("the configuration came from standard input: nothing to reload")]
    NotReloadable,
    /// Another source (the pool mode) could not build a configuration; the message names the
    /// file and field.
    #[error("{0}")]
    Other(String),
}

impl SourceError {
    /// Another source's error, as its message.
    pub fn other(e: impl std::fmt::Display) -> Self {
        SourceError::Other(e.to_string())
    }
}

/// The configuration `run` and `render` use: a keepalived.conf (`-f`), or what OpenShift runs on
/// a node of the cluster (`--cluster ... --role ... --interface ...`). Errors name their place.
pub fn load_source(source: impl Into<Source>) -> Result<Config, SourceError> {
    let source = source.into();
    if let Some(path) = &source.config {
        return Ok(load_as(
            path,
            &LexOptions::with_id(source.config_id.as_deref()),
        )?);
    }
    let (Some(cluster), Some(role), Some(interface)) =
        (&source.cluster, source.role, &source.interface)
    else {
        return Err(SourceError::Incomplete);
    };
    let nodes = match &source.nodes {
        Some(path) => Some(ipi_core::Inventory::load(path)?),
        None => None,
    };
    let scripts = match &source.scripts_dir {
        Some(dir) => openshift::Scripts::Dir(scripts_dir(dir)?),
        None => openshift::Scripts::OpenShift,
    };
    let cluster = ipi_core::Cluster::load(cluster, nodes.as_ref())?;
    let user = source.script_user.as_deref().map(script_user);
    let node = openshift::Node {
        role,
        interface,
        nodes: nodes.as_ref(),
        unicast: source.unicast,
        script_user: user.as_ref(),
    };
    let config = openshift::from_cluster(&cluster, &node, &scripts);
    // What we build must be what we would read.
    Ok(parse_str(&write::write(&config), "(rendered)")?)
}

/// `--script-user USER[:GROUP]` as global_defs' `script_user USER [GROUP]`.
fn script_user(given: &str) -> User {
    let (user, group) = match given.split_once(':') {
        Some((user, group)) => (user, Some(group.to_string())),
        None => (given, None),
    };
    User {
        user: user.to_string(),
        group,
    }
}

/// `--scripts-dir DIR` as it goes into a script line: absolute (vrrpd runs scripts without a
/// shell or a working directory of their own), UTF-8 and without white space (a script line is
/// split into words on it), without a trailing `/`.
fn scripts_dir(dir: &Path) -> Result<String, SourceError> {
    let bad = |why| SourceError::ScriptsDir {
        dir: dir.display().to_string(),
        why,
    };
    let Some(text) = dir.to_str() else {
        return Err(bad("not UTF-8, which a script line cannot hold"));
    };
    if !dir.is_absolute() {
        return Err(bad(
            "give an absolute path (such as /etc/ipi-net/keepalived)",
        ));
    }
    if text.chars().any(char::is_whitespace) {
        return Err(SourceError::ScriptsDir {
            dir: format!("{text:?}"),
            why: "white space would split the script line; give a path without it",
        });
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
            scripts_dir(Path::new("/etc/ipi-net/keepalived/")).ok(),
            Some("/etc/ipi-net/keepalived".to_string())
        );
        assert_eq!(scripts_dir(Path::new("/")).ok(), Some("/".to_string()));
        for bad in ["keepalived", "./k", "/etc/my scripts", "/etc/tab\there"] {
            let e = scripts_dir(Path::new(bad)).unwrap_err().to_string();
            assert!(e.starts_with("--scripts-dir"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_messages_are_the_command_lines() {
        assert_eq!(
            scripts_dir(Path::new("k")).unwrap_err().to_string(),
            "--scripts-dir k: give an absolute path (such as /etc/ipi-net/keepalived)"
        );
        assert_eq!(
            scripts_dir(Path::new("/a b")).unwrap_err().to_string(),
            "--scripts-dir \"/a b\": white space would split the script line; give a path \
             without it"
        );
        assert!(matches!(
            load_source(Source::default()),
            Err(SourceError::Incomplete)
        ));
    }
}

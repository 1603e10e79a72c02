//! haproxy.cfg: the model lb-proxy runs ([`model`]), read by [`parse`] with every error at its
//! file and line, then checked across sections; [`write`] writes a model back as haproxy.cfg and
//! [`openshift`] builds what OpenShift runs on a control-plane node.

pub mod checks;
pub mod ignored;
pub mod lexer;
pub mod model;
pub mod openshift;
pub mod parse;
pub mod resolvers;
pub mod routing;
pub mod write;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

pub use ipi_core::place::{Errors, Location};
pub use model::{Balance, Config, InitAddr, InitState, Kind, Mode, Proxy, Server};

/// Reads haproxy.cfg text; `origin` names it in errors. Server names are left unresolved
/// (see [`load`]); warnings are dropped (see [`parse_warned`]).
pub fn parse_str(text: &str, origin: &str) -> Result<Config, Errors> {
    parse_warned(text, origin).0
}

/// Reads haproxy.cfg text, with the warnings: what was accepted without effect.
pub fn parse_warned(text: &str, origin: &str) -> (Result<Config, Errors>, Errors) {
    let (mut errors, mut warnings) = (Errors::default(), Errors::default());
    let config = parse::config(text, origin, &mut errors, &mut warnings);
    check(&config, &mut errors);
    (errors.into_result(config), warnings)
}

/// Reads a haproxy.cfg file (`-`: standard input), server names resolved as `init-addr`
/// says; warnings are dropped (see [`load_warned`]).
pub fn load(path: &Path) -> Result<Config, Errors> {
    load_warned(path).0
}

/// [`load`], with the warnings.
pub fn load_warned(path: &Path) -> (Result<Config, Errors>, Errors) {
    let text = match ipi_core::place::read(path) {
        Ok(t) => t,
        Err(e) => return (Err(e), Errors::default()),
    };
    let (config, warnings) = parse_warned(&text, &path.display().to_string());
    let config = config.and_then(|mut c| {
        let mut errors = Errors::default();
        init_addresses(&mut c, &mut errors);
        errors.into_result(c)
    });
    (config, warnings)
}

/// The first address of each server written with a name, as `init-addr` says (haproxy's
/// `srv_iterate_initaddr`): `last` (a state file, which lb-proxy does not keep) is skipped,
/// `libc` asks the system resolver, `none` starts without one, an address is used as it is.
fn init_addresses(c: &mut Config, errors: &mut Errors) {
    for s in c.proxies.iter_mut().flat_map(|p| p.servers.iter_mut()) {
        let Some(name) = s.fqdn.clone() else {
            continue;
        };
        let port = s.address.port();
        let found = s.init_addr.iter().find_map(|method| match method {
            InitAddr::Last => None,
            InitAddr::None => Some(None),
            InitAddr::Ip(ip) => Some(Some(*ip)),
            InitAddr::Libc => libc(&name, s.prefer_ipv4).map(Some),
        });
        match found {
            Some(ip) => s.address = SocketAddr::new(ip.unwrap_or(s.address.ip()), port),
            None => errors.push(
                &s.location,
                format!("server {}: could not resolve address '{name}'", s.name),
            ),
        }
    }
}

/// The system resolver's address for `name`, of the preferred family when it gives one.
fn libc(name: &str, prefer_ipv4: bool) -> Option<IpAddr> {
    let all: Vec<IpAddr> = (name, 0).to_socket_addrs().ok()?.map(|a| a.ip()).collect();
    let preferred = all.iter().find(|ip| ip.is_ipv4() == prefer_ipv4);
    preferred.or(all.first()).copied()
}

/// A proxy's `use_backend` rules name backends, and its rules' ACLs are its own TLS ACLs;
/// each error at the rule's line.
fn routes(p: &Proxy, backend_named: &dyn Fn(&str) -> bool, errors: &mut Errors) {
    for r in &p.routing.routes {
        if !backend_named(&r.backend) {
            let b = &r.backend;
            errors.push(&r.location, format!("use_backend `{b}` names no backend"));
        }
    }
    let defined = |name: &str| p.routing.acls.iter().any(|(n, _)| n == name);
    let conditions = (p.routing.routes.iter().map(|r| (&r.when, &r.location)))
        .chain(p.routing.content.iter().map(|r| (&r.when, &r.location)));
    for (when, location) in conditions {
        for name in when.iter().flat_map(|c| c.names()).filter(|n| !defined(n)) {
            errors.push(
                location,
                format!(
                    "acl `{name}` is no req_ssl_sni or req_ssl_hello_type ACL of {}: lb-proxy \
                     balances TCP only (no HTTP routing)",
                    p.name
                ),
            );
        }
    }
}

/// What no single section can know: references between sections, and what lb-proxy does not do.
fn check(c: &Config, errors: &mut Errors) {
    for p in &c.proxies {
        let at = &p.location;
        let backend_named = |name: &str| c.proxy(name).is_some_and(|b| b.kind != Kind::Frontend);
        if let Some(b) = &p.default_backend {
            if !backend_named(b) {
                errors.push(
                    at,
                    format!("{}: default_backend `{b}` names no backend", p.name),
                );
            }
        }
        routes(p, &backend_named, errors);
        if let Some(m) = &p.monitor_fail {
            if !backend_named(&m.backend) {
                errors.push(
                    at,
                    format!(
                        "{}: monitor fail counts `{}`, which names no backend",
                        p.name, m.backend
                    ),
                );
            }
        }
        if p.kind != Kind::Backend && p.binds.is_empty() {
            errors.push(
                at,
                format!(
                    "{}: a {} needs a `bind`",
                    p.name,
                    if p.kind == Kind::Frontend {
                        "frontend"
                    } else {
                        "listen section"
                    }
                ),
            );
        }
        let forwards = p.default_backend.is_some() || !p.servers.is_empty();
        if p.mode == Mode::Http && forwards {
            errors.push(
                at,
                format!(
                    "{}: lb-proxy balances TCP only: `mode http` is for monitor-uri and stats",
                    p.name
                ),
            );
        }
        if p.mode == Mode::Tcp && (p.monitor_uri.is_some() || p.stats.enabled) {
            errors.push(
                at,
                format!("{}: monitor-uri and stats need `mode http`", p.name),
            );
        }
        for s in &p.servers {
            if let Some(r) = s.resolvers.as_deref().filter(|r| c.resolvers(r).is_none()) {
                errors.push(
                    &s.location,
                    format!(
                        "server {}: `resolvers {r}` names no resolvers section",
                        s.name
                    ),
                );
            }
            let tls_rule = p.httpchk.as_ref().is_some_and(|h| h.ssl)
                || (p.tcp_check.iter().flatten())
                    .any(|r| matches!(r, model::TcpRule::Connect { ssl: true, .. }));
            if s.check && tls_rule && !s.verify_none {
                errors.push(&s.location, format!("server {}: a check over TLS needs `verify none` (lb-proxy does not verify certificates of health checks)", s.name));
            }
            if s.check_ssl && !s.verify_none {
                errors.push(&s.location, format!("server {}: check-ssl needs `verify none` (lb-proxy does not verify certificates of health checks)", s.name));
            }
        }
    }
}

/// Where the configuration of `run` and `render` comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A haproxy.cfg (`-`: standard input).
    File(PathBuf),
    /// What OpenShift runs on a control-plane node of a cluster.
    Cluster {
        /// The cluster's install-config.yaml.
        config: PathBuf,
        /// The node inventory: its masters are the API servers.
        nodes: PathBuf,
    },
}

/// A configuration and what else its source says.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The proxies.
    pub config: Config,
    /// The cluster's API VIPs; None for a haproxy.cfg.
    pub api_vips: Option<Vec<IpAddr>>,
}

/// Why a [`Source`] gave no configuration.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The haproxy.cfg, or the one built for the cluster, is wrong.
    #[error(transparent)]
    Config(#[from] Errors),
    /// The node inventory cannot be read.
    #[error(transparent)]
    Inventory(#[from] ipi_core::inventory::InventoryError),
    /// The install-config cannot be read.
    #[error(transparent)]
    Cluster(#[from] ipi_core::cluster::ClusterError),
    /// The inventory has no master.
    #[error("{}: no master in the inventory: nothing to balance", .0.display())]
    NoMasters(PathBuf),
}

/// The configuration `run` and `render` use: a haproxy.cfg, or what OpenShift runs on a
/// control-plane node of the cluster.
pub fn load_source(source: &Source) -> Result<Loaded, SourceError> {
    let (path, nodes_path) = match source {
        Source::File(path) => {
            // What is accepted without effect is said where `run` logs (`check-config`
            // prints it).
            let (config, warnings) = load_warned(path);
            for (at, why) in &warnings.0 {
                tracing::warn!("{at}: {why}");
            }
            return Ok(Loaded {
                config: config?,
                api_vips: None,
            });
        }
        Source::Cluster { config, nodes } => (config, nodes),
    };
    let nodes = ipi_core::Inventory::load(nodes_path)?;
    let cluster = ipi_core::Cluster::load(path, Some(&nodes))?;
    let config = openshift::from_cluster(&cluster, &nodes);
    if config
        .proxy("masters")
        .is_some_and(|m| m.servers.is_empty())
    {
        return Err(SourceError::NoMasters(nodes_path.clone()));
    }
    // What we build must be what we would read.
    Ok(Loaded {
        config: parse_str(&write::write(&config), "(rendered)")?,
        api_vips: Some(cluster.api_vips),
    })
}

//! haproxy.cfg: the model lb-proxy runs ([`model`]), read by [`parse`] with every error at its
//! file and line, then checked across sections; [`write`] writes a model back as haproxy.cfg and
//! [`openshift`] builds what OpenShift runs on a control-plane node.

pub mod model;
pub mod openshift;
pub mod parse;
pub mod write;

use std::path::Path;

pub use ipi_core::place::{Errors, Location};
pub use model::{Config, InitState, Kind, Mode, Proxy, Server};

/// Reads haproxy.cfg text; `origin` names it in errors.
pub fn parse_str(text: &str, origin: &str) -> Result<Config, Errors> {
    let mut errors = Errors::default();
    let config = parse::config(text, origin, &mut errors);
    check(&config, &mut errors);
    errors.into_result(config)
}

/// Reads a haproxy.cfg file (`-`: standard input).
pub fn load(path: &Path) -> Result<Config, Errors> {
    let text = ipi_core::place::read(path)?;
    parse_str(&text, &path.display().to_string())
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
                    "{}: lb-proxy forwards TCP only: `mode http` is for monitor-uri and stats",
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
            if s.check_ssl && !s.verify_none {
                errors.push(&s.location, format!("server {}: check-ssl needs `verify none` (lb-proxy does not verify certificates of health checks)", s.name));
            }
        }
    }
}

/// The configuration `run` and `render` use: a haproxy.cfg (`-f`), or what OpenShift runs on a
/// control-plane node of the cluster (`--cluster ... --nodes ...`), with the cluster's API
/// VIPs (none for a haproxy.cfg).
pub fn load_source(source: &crate::cli::Source) -> Result<(Config, Vec<std::net::IpAddr>), String> {
    if let Some(path) = &source.config {
        return load(path)
            .map(|c| (c, Vec::new()))
            .map_err(|e| e.to_string());
    }
    let (Some(cluster), Some(nodes)) = (&source.cluster, &source.nodes) else {
        return Err("give -f FILE, or --cluster FILE --nodes INVENTORY".to_string());
    };
    let nodes = ipi_core::Inventory::load(nodes).map_err(|e| e.to_string())?;
    let cluster = ipi_core::Cluster::load(cluster, Some(&nodes)).map_err(|e| e.to_string())?;
    let config = openshift::from_cluster(&cluster, &nodes);
    if config
        .proxy("masters")
        .is_some_and(|m| m.servers.is_empty())
    {
        return Err(format!(
            "{}: no master in the inventory: nothing to balance",
            source
                .nodes
                .as_ref()
                .map_or_else(String::new, |p| p.display().to_string())
        ));
    }
    // What we build must be what we would read.
    let config = parse_str(&write::write(&config), "(rendered)").map_err(|e| e.to_string())?;
    Ok((config, cluster.api_vips))
}

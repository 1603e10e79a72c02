//! The outputs: one minijinja template each (built in, or from a directory given on the
//! command line), filled from the cluster model, the inventory and the upstream servers.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipi_core::{Cluster, Family, Inventory};
use minijinja::{context, Environment};
use serde::Serialize;

/// The built-in templates: (name, text).
pub const BUILT_IN: &[(&str, &str)] = &[
    ("Corefile", include_str!("templates/Corefile")),
    ("dnsmasq.conf", include_str!("templates/dnsmasq.conf")),
    ("hosts", include_str!("templates/hosts")),
    ("servers", include_str!("templates/servers")),
];

/// A node as the templates see it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NodeView {
    /// Its short name.
    pub name: String,
    /// Its addresses, both families.
    pub addresses: Vec<String>,
}

/// A VIP name as the templates see it.
#[derive(Debug, Clone, Serialize)]
pub struct VipView {
    /// The name's pattern (`.*.apps.DOMAIN`, `api.DOMAIN`).
    pub pattern: String,
    /// The IPv4 VIP, if the cluster has one.
    pub v4: Option<String>,
    /// The IPv6 VIP, if the cluster has one.
    pub v6: Option<String>,
}

/// Everything the templates are filled from.
#[derive(Debug, Clone)]
pub struct Model {
    /// `<name>.<baseDomain>`.
    pub domain: String,
    /// The API VIPs by family.
    pub api: (Option<IpAddr>, Option<IpAddr>),
    /// The Ingress VIPs by family.
    pub ingress: (Option<IpAddr>, Option<IpAddr>),
    /// The nodes, sorted by name.
    pub nodes: Vec<NodeView>,
    /// Upstream servers, in resolv.conf's order.
    pub upstreams: Vec<IpAddr>,
}

impl Model {
    /// The model of `cluster` with `nodes` and `upstreams`.
    pub fn new(cluster: &Cluster, nodes: &Inventory, upstreams: Vec<IpAddr>) -> Model {
        let mut views: Vec<NodeView> = nodes
            .nodes()
            .iter()
            .map(|n| NodeView {
                name: n.name.split('.').next().unwrap_or(&n.name).to_string(),
                addresses: n.addresses.iter().map(IpAddr::to_string).collect(),
            })
            .collect();
        views.sort_by(|a, b| a.name.cmp(&b.name));
        Model {
            domain: cluster.domain(),
            api: (cluster.api_vip(Family::V4), cluster.api_vip(Family::V6)),
            ingress: (
                cluster.ingress_vip(Family::V4),
                cluster.ingress_vip(Family::V6),
            ),
            nodes: views,
            upstreams,
        }
    }

    fn vips(&self) -> Vec<VipView> {
        let s = |a: Option<IpAddr>| a.map(|a| a.to_string());
        vec![
            VipView {
                pattern: format!(".*.apps.{}", self.domain),
                v4: s(self.ingress.0),
                v6: s(self.ingress.1),
            },
            VipView {
                pattern: format!("api.{}", self.domain),
                v4: s(self.api.0),
                v6: s(self.api.1),
            },
            VipView {
                pattern: format!("api-int.{}", self.domain),
                v4: s(self.api.0),
                v6: s(self.api.1),
            },
        ]
    }
}

/// A template that cannot be read, compiled or rendered; the message names it.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// A replacement template file could not be read.
    #[error("{}: {why}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        why: std::io::Error,
    },
    /// A template that does not compile or render.
    #[error("template {name}: {why}")]
    Template {
        /// The template's name (Corefile, dnsmasq.conf, hosts, servers).
        name: String,
        /// What minijinja said.
        why: minijinja::Error,
    },
}

/// The templates: the built-in ones, each replaced by a file of the same name in `dir`.
pub fn environment(dir: Option<&Path>) -> Result<Environment<'static>, TemplateError> {
    let mut env = Environment::new();
    env.set_keep_trailing_newline(true);
    for (name, text) in BUILT_IN {
        let text = match dir.map(|d| d.join(name)).filter(|p| p.exists()) {
            Some(path) => {
                std::fs::read_to_string(&path).map_err(|why| TemplateError::Read { path, why })?
            }
            None => (*text).to_string(),
        };
        env.add_template_owned(*name, text)
            .map_err(|why| TemplateError::Template {
                name: (*name).to_owned(),
                why,
            })?;
    }
    Ok(env)
}

/// The files dnsmasq is given, and the addresses it listens on (all empty for the other
/// outputs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsmasqFiles {
    /// Its configuration, `DIR/dnsmasq.conf`.
    pub conf: PathBuf,
    /// The names it answers, `DIR/hosts` (read again on SIGHUP).
    pub hosts: PathBuf,
    /// The upstream servers, `DIR/servers` (read again on SIGHUP).
    pub servers: PathBuf,
    /// Its listen addresses (none: dnsmasq's own).
    pub listen: Vec<IpAddr>,
}

impl DnsmasqFiles {
    /// The files in `dir`, listening on `listen`.
    pub fn new(dir: &Path, listen: &[IpAddr]) -> DnsmasqFiles {
        DnsmasqFiles {
            conf: dir.join("dnsmasq.conf"),
            hosts: dir.join("hosts"),
            servers: dir.join("servers"),
            listen: listen.to_vec(),
        }
    }
}

/// Renders template `name` of `env` for `model`; `files` names the dnsmasq files.
pub fn render(
    env: &Environment<'_>,
    name: &str,
    model: &Model,
    files: &DnsmasqFiles,
) -> Result<String, TemplateError> {
    let s = |a: Option<IpAddr>| a.map(|a| a.to_string());
    let ctx = context! {
        domain => model.domain,
        upstreams => model.upstreams.iter().map(IpAddr::to_string).collect::<Vec<_>>(),
        nodes => model.nodes,
        vips => model.vips(),
        api_v4 => s(model.api.0),
        api_v6 => s(model.api.1),
        ingress_v4 => s(model.ingress.0),
        ingress_v6 => s(model.ingress.1),
        conf => files.conf.display().to_string(),
        hosts_file => files.hosts.display().to_string(),
        servers_file => files.servers.display().to_string(),
        listen => files.listen.iter().map(IpAddr::to_string).collect::<Vec<_>>(),
    };
    env.get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|why| TemplateError::Template {
            name: name.to_owned(),
            why,
        })
}

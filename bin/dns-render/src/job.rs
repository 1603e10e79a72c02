//! One run of a subcommand: read every input, render every output in memory (so that bad
//! input leaves every output as it was), then write what changed.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipi_core::{Cluster, Inventory};

use crate::cli::{Command, Inputs, Upstream};
use crate::render::{self, Model};
use crate::{dnsdata, resolv};

/// Where an output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Standard output.
    Stdout,
    /// A file, written atomically.
    File(PathBuf),
}

/// The outputs of `command`, rendered.
pub fn render(command: &Command) -> Result<Vec<(Target, String)>, String> {
    let to = |o: &Option<PathBuf>| o.clone().map_or(Target::Stdout, Target::File);
    Ok(match command {
        Command::Corefile {
            inputs,
            upstream,
            output,
            ..
        } => {
            let (model, env) = model(inputs, Some(upstream))?;
            let text = render::render(&env, "Corefile", &model, Path::new(""), Path::new(""), &[])?;
            vec![(to(output), text)]
        }
        Command::Dnsmasq {
            inputs,
            upstream,
            out_dir,
            listen,
            ..
        } => {
            let (model, env) = model(inputs, Some(upstream))?;
            let (conf, hosts) = render::dnsmasq_paths(out_dir);
            let c = render::render(&env, "dnsmasq.conf", &model, &conf, &hosts, listen)?;
            let h = render::render(&env, "hosts", &model, &conf, &hosts, listen)?;
            // The hosts file first: the config that names it must never come before it.
            vec![(Target::File(hosts), h), (Target::File(conf), c)]
        }
        Command::Hosts { inputs, output, .. } => {
            let (model, env) = model(inputs, None)?;
            let text = render::render(&env, "hosts", &model, Path::new(""), Path::new(""), &[])?;
            vec![(to(output), text)]
        }
        Command::Dnsdata { input, output, .. } => {
            let text = ipi_core::place::read(input).map_err(|e| e.to_string())?;
            vec![(
                to(output),
                dnsdata::hosts(&text, &input.display().to_string())?,
            )]
        }
        Command::Resolv {
            nameserver,
            search,
            input,
            resolved,
            output,
            ..
        } => {
            ipi_core::name::check_name(search.trim_end_matches('.'))
                .map_err(|e| format!("--search {search}: {e}"))?;
            let text = if *resolved {
                resolv::resolved_dropin(*nameserver, search)
            } else {
                let path = input.as_ref().ok_or("--in FILE or --resolved")?;
                let original = ipi_core::place::read(path).map_err(|e| e.to_string())?;
                resolv::nameservers(&original, &path.display().to_string())?;
                resolv::prepend(&original, *nameserver, search)
            };
            vec![(to(output), text)]
        }
    })
}

/// The files `command` reads (what --watch watches).
pub fn inputs(command: &Command) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let mut cluster = |i: &Inputs| {
        v.push(i.cluster.clone());
        v.push(i.nodes.clone());
    };
    match command {
        Command::Corefile {
            inputs, upstream, ..
        }
        | Command::Dnsmasq {
            inputs, upstream, ..
        } => {
            cluster(inputs);
            v.push(upstream.resolv.clone());
        }
        Command::Hosts { inputs, .. } => cluster(inputs),
        Command::Dnsdata { input, .. } => v.push(input.clone()),
        Command::Resolv { input, .. } => v.extend(input.clone()),
    }
    v
}

fn model(
    inputs: &Inputs,
    upstream: Option<&Upstream>,
) -> Result<(Model, minijinja::Environment<'static>), String> {
    let nodes = Inventory::load(&inputs.nodes).map_err(|e| e.to_string())?;
    let cluster = Cluster::load(&inputs.cluster, Some(&nodes)).map_err(|e| e.to_string())?;
    let upstreams = match upstream {
        None => Vec::new(),
        Some(u) => {
            let own = if u.node_ip.is_empty() {
                local_addresses()
            } else {
                u.node_ip.clone()
            };
            let text = ipi_core::place::read(&u.resolv).map_err(|e| e.to_string())?;
            resolv::upstreams(&text, &u.resolv.display().to_string(), &own)?
        }
    };
    let env = render::environment(inputs.templates.as_deref())?;
    Ok((Model::new(&cluster, &nodes, upstreams), env))
}

/// The addresses of this host's interfaces.
fn local_addresses() -> Vec<IpAddr> {
    let Ok(all) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    all.filter_map(|i| {
        let a = i.address?;
        a.as_sockaddr_in()
            .map(|v4| IpAddr::V4(v4.ip()))
            .or_else(|| a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
    })
    .collect()
}

/// Writes the outputs; true when any file changed (standard output always counts).
pub fn write(outputs: &[(Target, String)]) -> Result<bool, String> {
    let mut changed = false;
    for (target, text) in outputs {
        match target {
            Target::Stdout => {
                print!("{text}");
                changed = true;
            }
            Target::File(path) => {
                let outcome = ipi_core::atomic::write(path, text.as_bytes())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                changed |= outcome == ipi_core::atomic::Outcome::Changed;
            }
        }
    }
    Ok(changed)
}

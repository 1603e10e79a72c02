//! One run of a subcommand: read every input, render every output in memory (so that bad
//! input leaves every output as it was), then write what changed; [`watch`] does it again
//! whenever an input changes.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use ipi_core::{Cluster, ClusterError, Inventory, InventoryError};

use crate::render::{self, Model, TemplateError};
use crate::{dnsdata, resolv};

/// What to render, and from what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// A Corefile for CoreDNS.
    Corefile {
        /// The cluster and its nodes.
        inputs: Inputs,
        /// Where the upstream servers come from.
        upstream: Upstream,
        /// The file; standard output when none.
        output: Option<PathBuf>,
    },
    /// DIR/dnsmasq.conf and the DIR/hosts and DIR/servers files it names.
    Dnsmasq {
        /// The cluster and its nodes.
        inputs: Inputs,
        /// Where the upstream servers come from.
        upstream: Upstream,
        /// Where the three files go.
        out_dir: PathBuf,
        /// Addresses dnsmasq listens on (none: dnsmasq's own).
        listen: Vec<IpAddr>,
    },
    /// An /etc/hosts fragment.
    Hosts {
        /// The cluster and its nodes.
        inputs: Inputs,
        /// The file; standard output when none.
        output: Option<PathBuf>,
    },
    /// The infra-operator's DNSData as a hosts file.
    Dnsdata {
        /// The DNSData YAML.
        input: PathBuf,
        /// The file; standard output when none.
        output: Option<PathBuf>,
    },
    /// resolv.conf with this node's DNS server first, or a systemd-resolved drop-in.
    Resolv {
        /// This node's DNS server.
        nameserver: IpAddr,
        /// The cluster domain.
        search: String,
        /// NetworkManager's resolv.conf (needed unless `resolved`).
        input: Option<PathBuf>,
        /// A systemd-resolved drop-in instead.
        resolved: bool,
        /// The file; standard output when none.
        output: Option<PathBuf>,
    },
}

/// The cluster, its nodes, and templates replacing the built-in ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    /// The cluster's install-config.yaml.
    pub cluster: PathBuf,
    /// The node inventory.
    pub nodes: PathBuf,
    /// Templates by file name (Corefile, dnsmasq.conf, hosts, servers).
    pub templates: Option<PathBuf>,
}

/// The upstream servers: a resolv.conf without this node's own addresses and loopback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// resolv.conf with the upstream servers.
    pub resolv: PathBuf,
    /// This node's addresses (none: the addresses of this host's interfaces).
    pub node_ip: Vec<IpAddr>,
}

/// A job that could not be done; every output is as it was (but for one written before a
/// later write failed). The message names the file or the option.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// An input could not be read.
    #[error("{0}")]
    Read(#[from] ipi_core::place::Errors),
    /// The node inventory.
    #[error("{0}")]
    Inventory(#[from] InventoryError),
    /// The cluster.
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    /// `--search` is not a DNS name.
    #[error("--search {search}: {why}")]
    Search {
        /// The name given.
        search: String,
        /// What is wrong with it.
        why: ipi_core::name::NameError,
    },
    /// `resolv` without `--in` or `--resolved`.
    #[error("--in FILE or --resolved")]
    NoResolvConf,
    /// A template that cannot be read, compiled or rendered.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A resolv.conf or DNSData that cannot be read; the message names the file and the line.
    #[error("{0}")]
    Input(String),
    /// An output could not be written.
    #[error("{}: {source}", .source.path.display())]
    Write {
        /// Why.
        source: ipi_core::atomic::WriteError,
    },
}

/// Where an output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Standard output.
    Stdout,
    /// A file, written atomically.
    File(PathBuf),
}

fn target(output: &Option<PathBuf>) -> Target {
    output.clone().map_or(Target::Stdout, Target::File)
}

/// The outputs of `job`, rendered.
pub fn render(job: &Job) -> Result<Vec<(Target, String)>, JobError> {
    let none = render::DnsmasqFiles::default();
    Ok(match job {
        Job::Corefile {
            inputs,
            upstream,
            output,
        } => {
            let (model, env) = model(inputs, Some(upstream))?;
            let text = render::render(&env, "Corefile", &model, &none)?;
            vec![(target(output), text)]
        }
        Job::Dnsmasq {
            inputs,
            upstream,
            out_dir,
            listen,
        } => {
            let (model, env) = model(inputs, Some(upstream))?;
            let files = render::DnsmasqFiles::new(out_dir, listen);
            let [c, h, s] = ["dnsmasq.conf", "hosts", "servers"]
                .map(|name| render::render(&env, name, &model, &files));
            // The files the config names first: the config must never come before them.
            vec![
                (Target::File(files.hosts), h?),
                (Target::File(files.servers), s?),
                (Target::File(files.conf), c?),
            ]
        }
        Job::Hosts { inputs, output } => {
            let (model, env) = model(inputs, None)?;
            let text = render::render(&env, "hosts", &model, &none)?;
            vec![(target(output), text)]
        }
        Job::Dnsdata { input, output } => {
            let text = ipi_core::place::read(input)?;
            let hosts =
                dnsdata::hosts(&text, &input.display().to_string()).map_err(JobError::Input)?;
            vec![(target(output), hosts)]
        }
        Job::Resolv {
            nameserver,
            search,
            input,
            resolved,
            output,
        } => vec![(
            target(output),
            resolv_conf(*nameserver, search, input.as_deref(), *resolved)?,
        )],
    })
}

/// resolv.conf with `nameserver` first, or the systemd-resolved drop-in.
fn resolv_conf(
    nameserver: IpAddr,
    search: &str,
    input: Option<&Path>,
    resolved: bool,
) -> Result<String, JobError> {
    ipi_core::name::check_name(search.trim_end_matches('.')).map_err(|why| JobError::Search {
        search: search.to_owned(),
        why,
    })?;
    if resolved {
        return Ok(resolv::resolved_dropin(nameserver, search));
    }
    let path = input.ok_or(JobError::NoResolvConf)?;
    let original = ipi_core::place::read(path)?;
    resolv::nameservers(&original, &path.display().to_string()).map_err(JobError::Input)?;
    Ok(resolv::prepend(&original, nameserver, search))
}

/// The files `job` reads (what [`watch`] watches).
pub fn inputs(job: &Job) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let mut cluster = |i: &Inputs| {
        v.push(i.cluster.clone());
        v.push(i.nodes.clone());
    };
    match job {
        Job::Corefile {
            inputs, upstream, ..
        }
        | Job::Dnsmasq {
            inputs, upstream, ..
        } => {
            cluster(inputs);
            v.push(upstream.resolv.clone());
        }
        Job::Hosts { inputs, .. } => cluster(inputs),
        Job::Dnsdata { input, .. } => v.push(input.clone()),
        Job::Resolv { input, .. } => v.extend(input.clone()),
    }
    v
}

fn model(
    inputs: &Inputs,
    upstream: Option<&Upstream>,
) -> Result<(Model, minijinja::Environment<'static>), JobError> {
    let nodes = Inventory::load(&inputs.nodes)?;
    let cluster = Cluster::load(&inputs.cluster, Some(&nodes))?;
    let upstreams = match upstream {
        None => Vec::new(),
        Some(u) => {
            let own = if u.node_ip.is_empty() {
                local_addresses()
            } else {
                u.node_ip.clone()
            };
            let text = ipi_core::place::read(&u.resolv)?;
            resolv::upstreams(&text, &u.resolv.display().to_string(), &own)
                .map_err(JobError::Input)?
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
pub fn write(outputs: &[(Target, String)]) -> Result<bool, JobError> {
    let mut changed = false;
    for (target, text) in outputs {
        match target {
            Target::Stdout => {
                print!("{text}");
                changed = true;
            }
            Target::File(path) => {
                let outcome = ipi_core::atomic::write(path, text.as_bytes())
                    .map_err(|source| JobError::Write { source })?;
                changed |= outcome == ipi_core::atomic::Outcome::Changed;
            }
        }
    }
    Ok(changed)
}

/// How many times [`run`] renders at most while its inputs keep changing under it.
const SETTLE_TRIES: usize = 5;

/// Renders `job` and writes what changed; true when an output changed. Files rendered from
/// inputs that changed while it ran are rendered again (at most [`SETTLE_TRIES`] times): a
/// systemd path unit does not start its unit again for a change made while the unit runs, so
/// the newest inventory would otherwise wait for the next change. Standard output is written
/// once.
pub fn run(job: &Job) -> Result<bool, JobError> {
    let outputs = render(job)?;
    if outputs.iter().any(|(t, _)| *t == Target::Stdout) {
        return write(&outputs);
    }
    let mut first = Some(outputs);
    settle(
        || stamp(job),
        || match first.take() {
            Some(outputs) => write(&outputs),
            None => write(&render(job)?),
        },
    )
}

/// Runs `once` until the inputs' `stamp` is the same after it as before (at most
/// [`SETTLE_TRIES`] times); true when any run changed an output.
fn settle<S: PartialEq>(
    stamp: impl Fn() -> S,
    mut once: impl FnMut() -> Result<bool, JobError>,
) -> Result<bool, JobError> {
    let mut changed = false;
    for _ in 0..SETTLE_TRIES {
        let before = stamp();
        changed |= once()?;
        if stamp() == before {
            break;
        }
    }
    Ok(changed)
}

/// What the inputs of `job` look like: each file's modification time, length and inode (a
/// file replaced by a rename has a new inode), or nothing where it cannot be read.
fn stamp(job: &Job) -> Vec<Option<(SystemTime, u64, u64)>> {
    use std::os::unix::fs::MetadataExt;
    inputs(job)
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .and_then(|m| Ok((m.modified()?, m.len(), m.ino())))
                .ok()
        })
        .collect()
}

/// Runs `job` whenever an input file changes (looked at every second), then `changed` when an
/// output did; an error is logged and the previous output kept. Never returns.
pub fn watch(job: &Job, changed: impl Fn()) -> ! {
    let mut last = None;
    loop {
        let now = stamp(job);
        if last.as_ref() != Some(&now) {
            match run(job) {
                Ok(true) => {
                    eprintln!("dns-render: written");
                    changed();
                }
                Ok(false) => {}
                Err(e) => eprintln!("dns-render: {e} (the previous output is kept)"),
            }
            last = Some(now);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// An input that changes during the first run is rendered again, once more only.
    #[test]
    fn a_change_during_a_run_is_rendered_again() {
        let version = Cell::new(1);
        let rendered = Cell::new(Vec::new());
        let changed = settle(
            || version.get(),
            || {
                let mut seen = rendered.take();
                seen.push(version.get());
                rendered.set(seen);
                // The inventory is written again while the first rendering is under way.
                if version.get() == 1 {
                    version.set(2);
                }
                Ok(true)
            },
        )
        .unwrap();
        assert!(changed);
        assert_eq!(rendered.take(), [1, 2]);
    }

    /// Inputs that never settle are rendered SETTLE_TRIES times, then left to the next run;
    /// an error stops at once.
    #[test]
    fn renders_are_bounded_and_errors_stop() {
        let version = Cell::new(0);
        let runs = Cell::new(0);
        settle(
            || version.get(),
            || {
                runs.set(runs.get() + 1);
                version.set(version.get() + 1);
                Ok(false)
            },
        )
        .unwrap();
        assert_eq!(runs.get(), SETTLE_TRIES);
        let e = settle(|| 0, || Err(JobError::Input("bad".into()))).unwrap_err();
        assert!(e.to_string().contains("bad"), "{e}");
    }
}

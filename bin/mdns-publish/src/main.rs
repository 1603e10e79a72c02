//! `mdns-publish`: command-line wiring only; the logic lives in the library.

use std::process::ExitCode;

use clap::Parser;
use ipi_core::exit::Status;
use mdns_publish::cli::{Cli, Command, NodeRole};
use mdns_publish::config::{self, Config};
use mdns_publish::lookup::{self, Browse};

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run {
            config,
            cluster,
            hostname,
            role,
            bind,
            on_conflict,
            verbose,
            quiet,
        } => {
            ipi_core::service::logging(verbose, quiet);
            let (bind, publication): (std::net::IpAddr, Publisher) = if let Some(path) = config {
                let c = match Config::load(&path) {
                    Ok(c) => c,
                    Err(e) => return usage(&e),
                };
                let host = nix::unistd::gethostname()
                    .map(|h| h.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let bind = bind.unwrap_or(c.bind_address);
                (
                    bind,
                    Box::new(move |a: &[std::net::IpAddr]| Ok(c.publication(a, &host))),
                )
            } else {
                let (Some(cluster), Some(hostname), Some(role), Some(bind)) =
                    (cluster, hostname, role, bind)
                else {
                    return usage("--cluster needs --hostname, --role and --bind");
                };
                let c = match ipi_core::Cluster::load(&cluster, None) {
                    Ok(c) => c,
                    Err(e) => return usage(&e.to_string()),
                };
                let role = match role {
                    NodeRole::Bootstrap => "bootstrap",
                    NodeRole::Master => "master",
                    NodeRole::Worker => "worker",
                };
                if let Err(e) = config::openshift(&c.name, &hostname, role, &[bind]) {
                    return usage(&e);
                }
                // The VIPs are the cluster's, not this node's: a node holding one must not
                // publish it as its own address (dns-render would refuse the inventory).
                let vips: Vec<std::net::IpAddr> =
                    c.api_vips.iter().chain(&c.ingress_vips).copied().collect();
                (
                    bind,
                    Box::new(move |a: &[std::net::IpAddr]| {
                        let own: Vec<std::net::IpAddr> =
                            a.iter().filter(|x| !vips.contains(x)).copied().collect();
                        config::openshift(&c.name, &hostname, role, &own)
                    }),
                )
            };
            match mdns_publish::publish::run(bind, publication, on_conflict) {
                Ok(()) => Status::Success.into(),
                Err(e) => {
                    eprintln!("mdns-publish: {e}");
                    Status::Failed.into()
                }
            }
        }
        Command::Browse {
            kind,
            filter,
            min_srv,
            timeout,
            json,
            output,
            watch,
            bind,
        } => {
            let b = Browse {
                kind,
                filter,
                min_srv,
                round: timeout,
                bind,
            };
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => return usage(&e.to_string()),
            };
            runtime.block_on(browse(&b, json, output.as_deref(), watch))
        }
    }
}

async fn browse(b: &Browse, json: bool, output: Option<&std::path::Path>, watch: bool) -> ExitCode {
    let mut last: Option<String> = None;
    let mut ready = false;
    loop {
        let found = match lookup::round(b).await {
            Ok(f) => f,
            Err(e) => {
                eprintln!("mdns-publish browse: {e}");
                if watch {
                    // A round that fails at once (no interface holds --bind yet) would
                    // otherwise spin: wait a round before the next.
                    tokio::time::sleep(b.round).await;
                    continue;
                }
                return Status::Failed.into();
            }
        };
        eprintln!(
            "mdns-publish browse: {} instance(s) of {}, {} node(s)",
            found.instances,
            b.kind,
            found.inventory.nodes().len()
        );
        let text = lookup::render(&found, json);
        if last.as_deref() != Some(text.as_str()) {
            match output {
                Some(path) => {
                    if let Err(e) = lookup::write(path, &text) {
                        eprintln!("mdns-publish browse: {e}");
                        return Status::Failed.into();
                    }
                }
                None => print!("{text}"),
            }
            last = Some(text);
        }
        if watch && !ready {
            // systemd (Type=notify): the first inventory is written; what reads it may start.
            ready = true;
            ipi_core::service::notify_systemd("READY=1");
        }
        if !watch {
            return if found.inventory.nodes().is_empty() {
                Status::Failed.into()
            } else {
                Status::Success.into()
            };
        }
    }
}

/// What a node publishes, given its interface's addresses.
type Publisher =
    Box<dyn Fn(&[std::net::IpAddr]) -> Result<mdns_publish::records::Publication, String>>;

fn usage(message: &str) -> ExitCode {
    eprintln!("mdns-publish: {message}");
    Status::Usage.into()
}

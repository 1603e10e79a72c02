//! `ipam`: command-line wiring only; the logic lives in the library.
//!
//! Exit status: 0 success, 1 the VIPs break a rule (`vip validate`), 2 bad input or usage.

use std::process::ExitCode;

use clap::Parser;
use ipam::cli::{Cli, ClusterArgs, Command, VipCommand};
use ipi_core::exit::Status;
use ipi_core::{Cluster, ClusterError, Inventory};

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Vip { command } => match command {
            VipCommand::Validate { cluster } => validate(&cluster),
            VipCommand::Suggest { cluster, json } => suggest(&cluster, json),
        },
        Command::NotBuilt(words) => {
            let name = words.first().map_or("", String::as_str);
            ipi_core::exit::not_implemented(&format!("ipam {name}"), 7)
        }
    }
}

fn nodes(args: &ClusterArgs) -> Result<Option<Inventory>, ExitCode> {
    match &args.nodes {
        None => Ok(None),
        Some(p) => Inventory::load(p)
            .map(Some)
            .map_err(|e| usage(&e.to_string())),
    }
}

fn validate(args: &ClusterArgs) -> ExitCode {
    let nodes = match nodes(args) {
        Ok(n) => n,
        Err(code) => return code,
    };
    match Cluster::load(&args.cluster, nodes.as_ref()) {
        Ok(c) => {
            let list = |v: &[std::net::IpAddr]| {
                v.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "{}: valid: API {}, Ingress {}",
                args.cluster.display(),
                list(&c.api_vips),
                list(&c.ingress_vips)
            );
            Status::Success.into()
        }
        Err(e @ ClusterError::Invalid { .. }) => {
            eprintln!("{e}");
            Status::Failed.into()
        }
        Err(e) => usage(&e.to_string()),
    }
}

fn suggest(args: &ClusterArgs, json: bool) -> ExitCode {
    let nodes = match nodes(args) {
        Ok(n) => n,
        Err(code) => return code,
    };
    let networks = match Cluster::load_machine_networks(&args.cluster) {
        Ok(n) => n,
        Err(e) => return usage(&e.to_string()),
    };
    match ipam::vip::suggest(&networks, nodes.as_ref()) {
        Ok(s) => {
            print!("{}", if json { s.json() } else { s.yaml() });
            Status::Success.into()
        }
        Err(e) => {
            eprintln!("ipam: {e}");
            Status::Failed.into()
        }
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("ipam: {message}");
    Status::Usage.into()
}

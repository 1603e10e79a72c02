//! The command line of ipam.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// IP address management for the cluster: VIPs validated against the machine networks and the
/// nodes, and suggested when there are none yet.
#[derive(Debug, Parser)]
#[command(name = "ipam", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The cluster's VIPs.
    Vip {
        /// What to do with them.
        #[command(subcommand)]
        command: VipCommand,
    },
    /// Not built yet (issue #7): `netconfig`, `reserve`, `release`, `list`, `pool`, `cni`.
    #[command(external_subcommand)]
    NotBuilt(Vec<String>),
}

/// The cluster and, optionally, its nodes.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// The cluster's install-config.yaml.
    #[arg(long, value_name = "FILE")]
    pub cluster: PathBuf,
    /// The node inventory (ipi-nodes(5)): a VIP must not be a node's address.
    #[arg(long, value_name = "FILE")]
    pub nodes: Option<PathBuf>,
}

/// `ipam vip ...`.
#[derive(Debug, Subcommand)]
pub enum VipCommand {
    /// Check the VIPs with the installer's rules (and ours: not a network or broadcast address,
    /// not a node's address); list every problem in the installer's words and exit 1 if any.
    Validate {
        /// The cluster and its nodes.
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Suggest VIPs as OpenStack's installer does: hosts 5 (API) and 7 (Ingress) of the first
    /// machine network of each family, moving on to the next free address when one is a node's.
    Suggest {
        /// The cluster (only its machine networks are read) and its nodes.
        #[command(flatten)]
        cluster: ClusterArgs,
        /// JSON rather than install-config YAML.
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }
}

//! The command line of lb-proxy.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The API load balancer: TCP round robin over healthy API servers (a stand-in for haproxy).
#[derive(Debug, Parser)]
#[command(name = "lb-proxy", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the proxies of a haproxy.cfg, or what OpenShift runs on a control-plane node (not
    /// built yet: exits 2).
    Run {
        /// Where the proxies come from.
        #[command(flatten)]
        source: Source,
    },
    /// Print, as haproxy.cfg, the configuration `run` would use.
    Render {
        /// Where the proxies come from.
        #[command(flatten)]
        source: Source,
    },
    /// Check a haproxy.cfg: exit 0 if it is valid, 2 with every error otherwise (like haproxy -c).
    CheckConfig {
        /// The file to check (`-` for standard input).
        #[arg(short = 'f', long = "config", value_name = "FILE")]
        config: PathBuf,
    },
    /// Exit 0 when URL answers 2xx or 3xx, 1 otherwise, like `curl -kLfs URL` (not built yet:
    /// exits 2).
    Check {
        /// The URL (http or https; certificates are not verified).
        url: String,
        /// How long to wait for the answer.
        #[arg(long, value_name = "DURATION", default_value = "2s")]
        timeout: String,
    },
}

/// A haproxy.cfg, or the cluster description OpenShift would render one from.
#[derive(Debug, Clone, Args)]
pub struct Source {
    /// A haproxy.cfg (`-` for standard input).
    #[arg(
        short = 'f',
        long = "config",
        value_name = "FILE",
        conflicts_with = "cluster",
        required_unless_present = "cluster"
    )]
    pub config: Option<PathBuf>,
    /// The cluster's install-config.yaml.
    #[arg(long, value_name = "FILE", requires = "nodes")]
    pub cluster: Option<PathBuf>,
    /// The node inventory (ipi-nodes(5)): the masters are the API servers.
    #[arg(long, value_name = "FILE", requires = "cluster")]
    pub nodes: Option<PathBuf>,
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

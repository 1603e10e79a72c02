//! The command line of lb-proxy.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Run the proxies of a haproxy.cfg, or what OpenShift runs on a control-plane node.
    /// SIGHUP reloads, SIGTERM stops, SIGUSR1 stops once the last connection has ended.
    Run(Run),
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
    /// Exit 0 when URL answers 2xx or 3xx, 1 otherwise, like `curl -kLfs URL` (2: a bad URL or
    /// timeout).
    Check {
        /// The URL (http or https; certificates are not verified).
        url: String,
        /// How long to wait for the answer.
        #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = ipi_core::duration::parse)]
        timeout: std::time::Duration,
    },
}

/// The options of `run`.
#[derive(Debug, Args)]
pub struct Run {
    /// Where the proxies come from.
    #[command(flatten)]
    pub source: Source,
    /// Redirect VIP:6443 to the first frontend while one of its servers is UP (repeatable;
    /// with --cluster, the cluster's API VIPs unless --no-redirect).
    #[arg(long = "redirect-vip", value_name = "VIP")]
    pub redirect_vips: Vec<std::net::IpAddr>,
    /// With --cluster: no VIP redirect.
    #[arg(long, conflicts_with = "redirect_vips")]
    pub no_redirect: bool,
    /// The file that exists while the redirect is on (with --cluster, keepalived's
    /// /var/run/keepalived/iptables-rule-exists).
    #[arg(long, value_name = "FILE")]
    pub flag_file: Option<PathBuf>,
    /// How often the redirect looks at the servers (on after 3 healthy rounds, off after 11
    /// unhealthy ones).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = ipi_core::duration::parse)]
    pub redirect_interval: std::time::Duration,
    /// Move bytes through a buffer rather than with splice(2).
    #[arg(long)]
    pub copy: bool,
    /// Threads that forward (default: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    /// How connections are spread over the threads: work-stealing measured faster for
    /// established connections, per-core a little faster for new ones (README).
    #[arg(long, value_enum, default_value = "work-stealing")]
    pub runtime: Runtime,
    /// More log lines (-v debug, -vv trace).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Warnings and errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

/// How connections are spread over the cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Runtime {
    /// One event loop per thread, each with its own listening sockets (SO_REUSEPORT: the
    /// kernel spreads new connections), a connection never leaves its thread; checks, monitor
    /// and stats run on the main thread.
    PerCore,
    /// One work-stealing runtime for everything.
    WorkStealing,
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

//! The command line of mdns-publish.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ipi_core::Role;

/// Advertise this node over multicast DNS, and browse the others into a node inventory
/// (a stand-in for mdns-publisher and the browse side of coredns-mdns).
#[derive(Debug, Parser)]
#[command(name = "mdns-publish", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// What to do when another host owns one of our names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnConflict {
    /// Log it and exit with status 1.
    Exit,
    /// Log it, wait ten seconds and probe again, until the name is free.
    Wait,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Publish this node: from an mdns-publisher config (-f), or what OpenShift publishes for a
    /// node of the cluster (--cluster). SIGTERM sends goodbyes and exits 0; a name another host
    /// owns exits 1 (never a silent rename).
    Run(Run),
    /// Ask the link who is there and print the node inventory (ipi-nodes(5)); exit 0 when
    /// something was found, 1 when nothing was.
    Browse(Browse),
}

/// `mdns-publish run`.
#[derive(Debug, Args)]
pub struct Run {
    /// An mdns-publisher config file, YAML or JSON (mdns-publish.conf(5)).
    #[arg(
        short = 'f',
        long = "config",
        value_name = "FILE",
        conflicts_with = "cluster",
        required_unless_present = "cluster"
    )]
    pub config: Option<PathBuf>,
    /// The cluster's install-config.yaml.
    #[arg(long, value_name = "FILE", requires_all = ["hostname", "role", "bind"])]
    pub cluster: Option<PathBuf>,
    /// This node's host name (with --cluster).
    #[arg(long, value_name = "NAME")]
    pub hostname: Option<String>,
    /// This node's role (with --cluster).
    #[arg(long, value_enum)]
    pub role: Option<Role>,
    /// The address whose interface is published (with --cluster; the config's
    /// bind_address otherwise).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// What to do when another host owns one of our names.
    #[arg(long, value_enum, default_value = "exit")]
    pub on_conflict: OnConflict,
    /// Sign what is published with the cluster key in this file (default:
    /// /etc/ipi-net/cluster.key when the node has it).
    #[arg(long, value_name = "FILE")]
    pub cluster_key: Option<PathBuf>,
    /// More log lines (-v debug, -vv trace).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Warnings and errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `mdns-publish browse`.
#[derive(Debug, Args)]
pub struct Browse {
    /// The service type whose instances are nodes.
    #[arg(
        long = "type",
        value_name = "TYPE",
        default_value = "_workstation._tcp"
    )]
    pub kind: String,
    /// Keep only instances whose name contains this (the cluster name).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub filter: String,
    /// Withhold the etcd SRV targets until at least this many are seen.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub min_srv: usize,
    /// How long to listen for answers (with --watch: one round of one-shot queries, or with
    /// --bind the time to the first inventory and between two writes of --metrics).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = ipi_core::duration::parse)]
    pub timeout: std::time::Duration,
    /// The inventory as JSON (with the etcd targets).
    #[arg(long)]
    pub json: bool,
    /// Write the inventory to this file, atomically, rather than to standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Keep browsing; rewrite the output only when the inventory changes (tells systemd it is
    /// ready once the first inventory is written, a --timeout after the start). With --bind,
    /// continuous multicast querying from port 5353 (RFC 6762 5.2): answers are multicast and
    /// shared by every browser, each node is refreshed by the node before it in address order
    /// about every 4 s, and a node that died without a goodbye leaves within 8 s (two questions
    /// for it unanswered for a second, or 8 s without an answer). Without --bind, rounds of
    /// one-shot queries, each answer held for its TTL (10 s, RFC 6762 6.7).
    #[arg(long)]
    pub watch: bool,
    /// The address to query from (its interface; default: any).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// Take only nodes signed with the cluster key in this file, and of each only its signed
    /// addresses (default: /etc/ipi-net/cluster.key when the node has it).
    #[arg(long, value_name = "FILE")]
    pub cluster_key: Option<PathBuf>,
    /// After each round, write what the rounds held and refused to this file, atomically, in
    /// Prometheus' text format (node_exporter's textfile collector): the inventory's nodes,
    /// the nodes left out, and the responses and records refused by why (off the link, not
    /// the name's owner, the cache full, past a round's cap).
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
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

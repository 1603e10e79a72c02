//! The command line of dns-render.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The cluster's DNS from the cluster model: a Corefile, dnsmasq files, a hosts fragment or
/// resolv.conf, written atomically; an unchanged output is left alone.
#[derive(Debug, Parser)]
#[command(name = "dns-render", version, about, long_about = None)]
pub struct Cli {
    /// What to write.
    #[command(subcommand)]
    pub command: Command,
}

/// The cluster, its nodes and the upstream servers.
#[derive(Debug, Clone, Args)]
pub struct Inputs {
    /// The cluster's install-config.yaml.
    #[arg(long, value_name = "FILE")]
    pub cluster: PathBuf,
    /// The node inventory (ipi-nodes(5): kubectl JSON, mdns-publish browse, or by hand).
    #[arg(long, value_name = "FILE")]
    pub nodes: PathBuf,
    /// Templates that replace the built-in ones, by file name (Corefile, dnsmasq.conf, hosts, servers).
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
}

/// The upstream servers: a resolv.conf without this node's own addresses and loopback.
#[derive(Debug, Clone, Args)]
pub struct Upstream {
    /// resolv.conf with the upstream servers (NetworkManager's).
    #[arg(long, value_name = "FILE")]
    pub resolv: PathBuf,
    /// This node's addresses, left out of the upstreams (repeatable; default: the addresses
    /// of this host's interfaces).
    #[arg(long = "node-ip", value_name = "ADDR")]
    pub node_ip: Vec<IpAddr>,
}

/// Where the output goes and what the exit status says.
#[derive(Debug, Clone, Args)]
pub struct Output {
    /// Exit 0 only when the output changed, 1 when it was already so: `dns-render ... -o F
    /// --exit-changed && systemctl reload coredns` (without it: 0 on success).
    #[arg(long)]
    pub exit_changed: bool,
    /// Keep running: render again whenever an input file changes (errors are logged and the
    /// previous output kept).
    #[arg(long)]
    pub watch: bool,
    /// After writing an output that changed, send SIGHUP to the process whose id FILE holds
    /// (repeatable; dnsmasq's --pid-file): dnsmasq reads the hosts and servers files again with
    /// no restart. A pid file or process that is not there is logged and skipped.
    #[arg(long = "reload-pid", value_name = "FILE")]
    pub reload_pid: Vec<std::path::PathBuf>,
    /// The name of the program the --reload-pid files name (/proc/PID/comm, its first 15
    /// characters): a pid whose process is another program, or none, is logged and not
    /// signalled (a stale pid file).
    #[arg(long = "reload-name", value_name = "NAME", default_value = "dnsmasq")]
    pub reload_name: String,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// A Corefile for CoreDNS, as OpenShift renders it.
    Corefile {
        /// The cluster and its nodes.
        #[command(flatten)]
        inputs: Inputs,
        /// Where the upstream servers come from.
        #[command(flatten)]
        upstream: Upstream,
        /// Write here (atomically) rather than to standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// The exit status and --watch.
        #[command(flatten)]
        out: Output,
    },
    /// DIR/dnsmasq.conf and the DIR/hosts and DIR/servers files it names. `dnsmasq --conf-file=DIR/dnsmasq.conf`
    /// serves the cluster.
    Dnsmasq {
        /// The cluster and its nodes.
        #[command(flatten)]
        inputs: Inputs,
        /// Where the upstream servers come from.
        #[command(flatten)]
        upstream: Upstream,
        /// Where the three files go.
        #[arg(long, value_name = "DIR")]
        out_dir: PathBuf,
        /// Addresses dnsmasq listens on (repeatable; default: dnsmasq's own).
        #[arg(long, value_name = "ADDR")]
        listen: Vec<IpAddr>,
        /// The exit status and --watch.
        #[command(flatten)]
        out: Output,
    },
    /// An /etc/hosts fragment: api and api-int, and every node.
    Hosts {
        /// The cluster and its nodes.
        #[command(flatten)]
        inputs: Inputs,
        /// Write here (atomically) rather than to standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// The exit status and --watch.
        #[command(flatten)]
        out: Output,
    },
    /// The infra-operator's DNSData in, a hosts file out (`IP name...`, sorted).
    Dnsdata {
        /// The DNSData YAML.
        input: PathBuf,
        /// Write here (atomically) rather than to standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// The exit status and --watch.
        #[command(flatten)]
        out: Output,
    },
    /// resolv.conf with this node's DNS server first (the resolv-prepender), or with
    /// --resolved a systemd-resolved drop-in.
    Resolv {
        /// This node's DNS server.
        #[arg(long, value_name = "ADDR")]
        nameserver: IpAddr,
        /// The cluster domain, put first in the search list.
        #[arg(long, value_name = "DOMAIN")]
        search: String,
        /// NetworkManager's resolv.conf.
        #[arg(long = "in", value_name = "FILE", required_unless_present = "resolved")]
        input: Option<PathBuf>,
        /// Write a systemd-resolved drop-in instead.
        #[arg(long)]
        resolved: bool,
        /// Write here (atomically) rather than to standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// The exit status and --watch.
        #[command(flatten)]
        out: Output,
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

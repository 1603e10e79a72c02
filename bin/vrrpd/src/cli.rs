//! The command line, defined once: `main` parses it, and the man page vrrpd(1) is generated
//! from it (see the `man_page` test), so the two cannot drift apart.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use ipi_core::Role;

/// Hold virtual IPs with VRRP (RFC 3768 v2, RFC 5798 v3): a stand-in for keepalived.
#[derive(Debug, Parser)]
#[command(name = "vrrpd", version, about, long_about = None, after_long_help = METRICS)]
pub struct Cli {
    /// More log output (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Less log output.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The METRICS part of `vrrpd --help` and vrrpd(1).
const METRICS: &str = "\
METRICS:
`vrrpd run --metrics ADDR:PORT` serves Prometheus metrics (text exposition format 0.0.4) at \
http://ADDR:PORT/metrics: GET only (other paths 404, other methods 405), one request per \
connection, at most 64 at once, 5 s for a whole exchange. The endpoint has no authentication, \
so ADDR must be a loopback address (127.0.0.1, [::1]) unless --metrics-allow-remote is given. \
Values are read from the running instances when scraped; counters start at 0 when vrrpd starts.

Per instance (label instance):
  vrrpd_instance_info{interface,vrid,version}  gauge, always 1
  vrrpd_instance_state{state}  gauge: 1 for the current state (init, backup, master, fault, stop), 0 for the others
  vrrpd_priority  gauge: effective priority (base moved by track weights)
  vrrpd_base_priority  gauge: configured priority
  vrrpd_transitions_total{from,to,reason}  counter; reason: startup, master_down_timer (the master went silent), \
priority_zero (the master resigned), preempt (a lower-priority master was preempted), higher_priority_advert \
(a master stepped down), advert, track_script, interface, reload, shutdown. The state machine says what changed; \
vrrpd derives why from the event it was handling and, for a backup taking over, the last advert it heard.
  vrrpd_adverts_sent_total, vrrpd_adverts_received_total  counters (received: valid adverts of the group)
  vrrpd_priority_zero_sent_total, vrrpd_priority_zero_received_total, vrrpd_became_master_total, \
vrrpd_interval_errors_total  counters
  vrrpd_adverts_invalid_total{reason}  counter: adverts dropped by the receive checks (hop_limit, length, \
version, type, checksum, auth_type, password, replay, addresses, unknown_peer, unicast, malformed, queue_full)
  vrrpd_foreign_routers  gauge: routers outside the group heard on the instance's VRID in the last 60 s
  vrrpd_foreign_router_info{interface,vrid,source,reason}  gauge, 1 per such router (reason: version, \
auth_type, password, addresses or unknown_peer)
  vrrpd_clashes_total  counter: appearances of foreign routers (each one logged once as a warning)
  vrrpd_vip_conflicts  gauge: the instance's VIPs that a host outside its group answers for on the wire
  vrrpd_vip_conflict_info{interface,vip,mac}  gauge, 1 per such VIP
  vrrpd_vip_probes_total  counter: probes of the instance's VIPs (at start, and on each clash)

Without an instance:
  vrrpd_adverts_unclaimed_total{reason}  counter: datagrams no instance claimed (vrid: a VRID not run here)
  vrrpd_script_runs_total{script,result}  counter: track script runs; result ok, failed, timeout or error \
(could not run)
  vrrpd_script_duration_seconds{script}  histogram of track script run times (buckets 5 ms to 5 s)
";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the VRRP instances of a keepalived.conf, or those OpenShift runs on a node.
    Run {
        /// Where the instances come from.
        #[command(flatten)]
        source: Source,
        /// Where one state file per instance (MASTER, BACKUP or FAULT) is written.
        #[arg(long, value_name = "DIR", default_value = "/run/vrrpd")]
        state_dir: PathBuf,
        /// The Prometheus endpoint.
        #[command(flatten)]
        metrics: Metrics,
        /// Probing the VIPs on the wire.
        #[command(flatten)]
        probe: Probe,
    },
    /// Print, as keepalived.conf, the configuration `run` would use.
    Render {
        /// Where the instances come from.
        #[command(flatten)]
        source: Source,
    },
    /// Check a keepalived.conf: exit 0 if it is valid, 2 with every error otherwise; warnings
    /// (what vrrpd accepts and leaves aside: LVS, SMTP, DBus, SNMP, ...) go to stderr either way.
    CheckConfig {
        /// The file to check (`-` for standard input).
        #[arg(short = 'f', long = "config", value_name = "FILE")]
        config: PathBuf,
        /// The configuration id that the file's `@ID` and `@^ID` lines are compared with
        /// (keepalived's -i; default: the host name up to its first dot).
        #[arg(short = 'i', long = "config-id", value_name = "ID")]
        config_id: Option<String>,
    },
    /// Print the API and Ingress VRRP router ids OpenShift derives from a cluster name.
    Vrid {
        /// The cluster name (metadata.name of install-config.yaml).
        name: String,
    },
    /// Show every running instance: state, priorities, master, scripts, counters.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// The state directory of the vrrpd to ask.
        #[arg(long, value_name = "DIR", default_value = "/run/vrrpd")]
        state_dir: PathBuf,
    },
    /// Print every VRRP advertisement seen on an interface or in a capture file.
    Watch {
        /// Where the adverts come from.
        #[command(flatten)]
        input: Input,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
        /// Print PASS passwords as they are on the wire (without it: `<redacted>`).
        #[arg(long)]
        show_secrets: bool,
        /// Mark adverts on this keepalived.conf's VRIDs that come from routers outside its
        /// groups (other addresses, authentication or version; not a listed unicast peer).
        #[arg(short = 'f', long = "config", value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Listen for a while and list the VRIDs in use with their routers; with --cluster-name,
    /// say whether the API and Ingress VRIDs OpenShift derives from that name are free
    /// (exit 0) or taken (exit 1, with close names whose pair is free). Only multicast adverts
    /// can be heard: routers advertising by unicast to others are invisible.
    Survey {
        /// Where the adverts come from.
        #[command(flatten)]
        input: Input,
        /// How long to listen: 5s, 500ms, 1.5s, 1m, 1h (a bare number is seconds; at least three
        /// advert intervals: OpenShift's are 1 s).
        #[arg(long = "for", value_name = "DURATION", default_value = "5s", value_parser = ipi_core::duration::parse)]
        listen_for: Duration,
        /// The cluster name (metadata.name of install-config.yaml) whose VRIDs to check.
        #[arg(long, value_name = "NAME")]
        cluster_name: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Where `watch` and `survey` read adverts: an interface or a capture file.
#[derive(Debug, Clone, Args)]
pub struct Input {
    /// Listen on this interface (IPv4 and IPv6, VRRPv2 and v3).
    #[arg(
        long,
        value_name = "IF",
        conflicts_with = "pcap",
        required_unless_present = "pcap"
    )]
    pub interface: Option<String>,
    /// Read this pcap file instead.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
}

/// `vrrpd run --probe-timing`, `--no-probe`.
#[derive(Debug, Clone, Args)]
pub struct Probe {
    /// How each instance's VIPs are probed on the wire when it starts and when a foreign
    /// router appears on its VRID (RFC 5227 ARP probes from 0.0.0.0, RFC 4862 solicitations
    /// from ::): `fast` (3 probes, under 0.7 s), `rfc5227` (up to 7 s) or
    /// PROBES,WAIT_MS,MIN_MS,MAX_MS,ANSWER_MS. A VIP that a host outside the group answers for
    /// is a warning, in `vrrpd status` and the metrics; the instance runs on.
    #[arg(long, value_name = "SPEC", default_value = "fast")]
    pub probe_timing: ipi_core::acd::Timing,
    /// Never probe the VIPs.
    #[arg(long, conflicts_with = "probe_timing")]
    pub no_probe: bool,
}

/// `vrrpd run --metrics`.
#[derive(Debug, Clone, Args)]
pub struct Metrics {
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics (a loopback address unless
    /// --metrics-allow-remote; the endpoint has no authentication).
    #[arg(long = "metrics", value_name = "ADDR:PORT")]
    pub listen: Option<SocketAddr>,
    /// Let --metrics listen on an address other than loopback.
    #[arg(long = "metrics-allow-remote", requires = "listen")]
    pub allow_remote: bool,
}

/// A keepalived.conf, the cluster description OpenShift would render one from, or a MetalLB
/// pool whose reserved addresses are held (the pool mode).
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("model").args(["cluster", "pool"])))]
pub struct Source {
    /// A keepalived.conf (`-` for standard input).
    #[arg(
        short = 'f',
        long = "config",
        value_name = "FILE",
        conflicts_with_all = ["cluster", "pool"],
        required_unless_present_any = ["cluster", "pool"]
    )]
    pub config: Option<PathBuf>,
    /// The cluster's install-config.yaml.
    #[arg(long, value_name = "FILE", requires_all = ["role", "interface"])]
    pub cluster: Option<PathBuf>,
    /// This node's role.
    #[arg(long, value_enum, requires = "cluster")]
    pub role: Option<Role>,
    /// The interface that holds the VIPs (the pool mode: one the L2Advertisement names; by
    /// default the first of those that exists here).
    #[arg(long, value_name = "IF", requires = "model")]
    pub interface: Option<String>,
    /// The node inventory (ipi-nodes(5)): unicast peers and VIP checks; the pool mode's nodes.
    #[arg(long, value_name = "FILE", requires = "model")]
    pub nodes: Option<PathBuf>,
    /// Send adverts to the other nodes (from --nodes) instead of multicast.
    #[arg(long, requires = "cluster")]
    pub unicast: bool,
    /// Track scripts from this directory (chk_ocp_script.sh, chk_ocp_script_both.sh,
    /// chk_ingress.sh: ipi-net's contrib/keepalived, on `lb-proxy check`) instead of
    /// /etc/keepalived's and curl.
    #[arg(long, value_name = "DIR", requires = "cluster")]
    pub scripts_dir: Option<PathBuf>,
    /// Who the track scripts run as (global_defs' script_user, USER or USER:GROUP). By default
    /// the first of the users keepalived_script and ipi-net-script that exists, else vrrpd's
    /// own; OpenShift's templates say root.
    #[arg(long, value_name = "USER[:GROUP]", requires = "cluster")]
    pub script_user: Option<String>,
    /// The configuration id that the file's `@ID` and `@^ID` lines are compared with
    /// (keepalived's -i; default: the host name up to its first dot).
    #[arg(
        short = 'i',
        long = "config-id",
        value_name = "ID",
        requires = "config"
    )]
    pub config_id: Option<String>,
    /// Pool mode: hold every address reserved from this MetalLB IPAddressPool in ipam's store,
    /// each a VRRP v3 instance (0.1 s adverts) unicast among the nodes of --nodes that the
    /// L2Advertisement selects, led by the node rendezvous hashing picks.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "cluster",
        requires_all = ["l2advertisement", "nodes"]
    )]
    pub pool: Option<PathBuf>,
    /// Pool mode: the L2Advertisement (ipAddressPools, ipAddressPoolSelectors, nodeSelectors
    /// matched on the inventory's names and roles, interfaces).
    #[arg(long, value_name = "FILE", requires = "pool")]
    pub l2advertisement: Option<PathBuf>,
    /// Pool mode: ipam's store (a directory, or etcd://HOST:PORT[,HOST:PORT...][/PREFIX]),
    /// followed live: a reservation made or released is held or let go within a second.
    #[arg(
        long,
        value_name = "URL",
        default_value = "/var/lib/ipi-net/ipam",
        requires = "pool"
    )]
    pub store: String,
    /// Pool mode: this node's name in --nodes (default: the host name up to its first dot).
    #[arg(long, value_name = "NAME", requires = "pool")]
    pub node: Option<String>,
    /// Pool mode: the cluster's install-config.yaml, whose API and Ingress VRIDs the pool's
    /// instances avoid and whose VIPs the pool must not hold.
    #[arg(long, value_name = "FILE", requires = "pool")]
    pub pool_cluster: Option<PathBuf>,
}

impl Source {
    /// The pool mode's options, when `--pool` is given.
    pub fn pool_options(&self) -> Option<crate::pool::Options> {
        let pool = self.pool.clone()?;
        Some(crate::pool::Options {
            pool,
            l2advertisement: self.l2advertisement.clone().unwrap_or_default(),
            store: self.store.clone(),
            nodes: self.nodes.clone().unwrap_or_default(),
            node: self
                .node
                .clone()
                .unwrap_or_else(crate::config::lexer::short_hostname),
            interface: self.interface.clone(),
            cluster: self.pool_cluster.clone(),
        })
    }
}

impl From<&Source> for crate::config::Source {
    fn from(s: &Source) -> Self {
        crate::config::Source {
            config: s.config.clone(),
            cluster: s.cluster.clone(),
            role: s.role,
            interface: s.interface.clone(),
            nodes: s.nodes.clone(),
            unicast: s.unicast,
            scripts_dir: s.scripts_dir.clone(),
            script_user: s.script_user.clone(),
            config_id: s.config_id.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    // A table of command lines, accepted then refused: longer, not harder to read.
    #[allow(clippy::too_many_lines)]
    fn parses_the_documented_commands() {
        for args in [
            &["vrrpd", "run", "-f", "/etc/keepalived/keepalived.conf"][..],
            &[
                "vrrpd",
                "run",
                "--config",
                "k.conf",
                "--state-dir",
                "/tmp/s",
            ],
            &[
                "vrrpd",
                "run",
                "--cluster",
                "ic.yaml",
                "--role",
                "bootstrap",
                "--interface",
                "eth0",
            ],
            &[
                "vrrpd",
                "render",
                "--cluster",
                "ic.yaml",
                "--role",
                "master",
                "--interface",
                "eth0",
                "--nodes",
                "n",
                "--unicast",
            ],
            &[
                "vrrpd",
                "run",
                "--cluster",
                "ic.yaml",
                "--role",
                "worker",
                "--interface",
                "eth0",
                "--scripts-dir",
                "/etc/ipi-net/keepalived",
            ],
            &["vrrpd", "check-config", "-f", "k.conf"],
            &["vrrpd", "vrid", "managed"],
            &["vrrpd", "status", "--json"],
            &["vrrpd", "watch", "--pcap", "x.pcap", "--json"],
            &["vrrpd", "watch", "--interface", "eth0"],
            &["vrrpd", "watch", "--interface", "eth0", "-f", "k.conf"],
            &["vrrpd", "run", "-f", "k", "--metrics", "127.0.0.1:9650"],
            &["vrrpd", "run", "-f", "k", "--metrics", "[::1]:9650"],
            &[
                "vrrpd",
                "run",
                "-f",
                "k",
                "--metrics",
                "0.0.0.0:9650",
                "--metrics-allow-remote",
            ],
            &["vrrpd", "survey", "--interface", "eth0"],
            &[
                "vrrpd",
                "survey",
                "--interface",
                "eth0",
                "--for",
                "500ms",
                "--cluster-name",
                "ostest",
                "--json",
            ],
            &["vrrpd", "survey", "--pcap", "x.pcap", "--cluster-name", "x"],
            &[
                "vrrpd",
                "run",
                "--pool",
                "p.yaml",
                "--l2advertisement",
                "l2.yaml",
                "--nodes",
                "n",
                "--node",
                "master-0",
                "--store",
                "etcd://192.0.2.1:2379",
                "--pool-cluster",
                "ic.yaml",
            ],
            &[
                "vrrpd",
                "render",
                "--pool",
                "p.yaml",
                "--l2advertisement",
                "l2.yaml",
                "--nodes",
                "n",
                "--interface",
                "eth0",
            ],
        ] {
            Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        for args in [
            &["vrrpd", "run"][..],
            &["vrrpd", "run", "--cluster", "ic.yaml"],
            &[
                "vrrpd",
                "run",
                "-f",
                "k",
                "--cluster",
                "ic.yaml",
                "--role",
                "master",
                "--interface",
                "e",
            ],
            &["vrrpd", "run", "--pool", "p.yaml", "--nodes", "n"],
            &[
                "vrrpd",
                "run",
                "--pool",
                "p",
                "--l2advertisement",
                "l",
                "--nodes",
                "n",
                "-f",
                "k",
            ],
            &["vrrpd", "run", "-f", "k", "--node", "master-0"],
            &["vrrpd", "run", "-f", "k", "--store", "/s"],
            &["vrrpd", "watch"],
            &["vrrpd", "survey"],
            &["vrrpd", "survey", "--interface", "e", "--for", "0s"],
            &["vrrpd", "survey", "--interface", "e", "--for", "5d"],
            &["vrrpd", "run", "-f", "k", "--metrics", "localhost:9650"],
            &["vrrpd", "run", "-f", "k", "--metrics-allow-remote"],
            &[
                "vrrpd",
                "run",
                "-f",
                "k",
                "--scripts-dir",
                "/etc/ipi-net/keepalived",
            ],
            &[
                "vrrpd",
                "run",
                "--cluster",
                "ic.yaml",
                "--role",
                "leader",
                "--interface",
                "e",
            ],
        ] {
            assert!(
                Cli::try_parse_from(args).is_err(),
                "{args:?} should be refused"
            );
        }
    }
}

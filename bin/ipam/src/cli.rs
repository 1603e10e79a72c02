//! The command line of ipam.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use ipi_store::store::access::{EtcdAccess, Password, CLI_NAMES};
use ipi_store::store::StoreSpec;

/// IP address management for the cluster: VIPs validated against the machine networks and the
/// nodes; addresses reserved from NetConfig networks, MetalLB pools and CNI ranges without ever
/// handing one out twice, in a store on one machine (a directory) or many (etcd).
///
/// With CNI_COMMAND in the environment, ipam is a CNI IPAM plugin (see `ipam cni`).
#[derive(Debug, Parser)]
#[command(name = "ipam", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The store reservations live in.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The store: a directory (or file://DIR) for one machine, etcd://HOST:PORT[,HOST:PORT...]
    /// or, over TLS, etcd+https://HOST:PORT[,HOST:PORT...] for many (a /PREFIX may follow).
    #[arg(long, value_name = "URL", env = "IPAM_STORE", default_value = ipi_store::store::DEFAULT_DIR)]
    pub store: String,
    /// How to get into an etcd store.
    #[command(flatten)]
    pub etcd: EtcdArgs,
}

impl StoreArgs {
    /// The store and its settings.
    pub fn spec(&self) -> StoreSpec {
        self.etcd.spec(&self.store)
    }
}

/// TLS files and credentials for an etcd store; each is refused, by name, where it does not
/// fit the store (a directory, plaintext etcd://), never ignored.
#[derive(Debug, Clone, Default, Args)]
pub struct EtcdArgs {
    /// The CA bundle (PEM) that signed etcd's server certificate: etcd+https:// needs it.
    #[arg(long, value_name = "FILE", env = "IPAM_ETCD_CACERT")]
    pub etcd_cacert: Option<PathBuf>,
    /// The client certificate (PEM) for an etcd that asks for one (--client-cert-auth), with
    /// --etcd-key.
    #[arg(long, value_name = "FILE", env = "IPAM_ETCD_CERT")]
    pub etcd_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", env = "IPAM_ETCD_KEY")]
    pub etcd_key: Option<PathBuf>,
    /// The etcd user (etcd's authentication), with --etcd-password-file.
    #[arg(long, value_name = "USER", env = "IPAM_ETCD_USER")]
    pub etcd_user: Option<String>,
    /// A file holding the user's password (a final newline is not part of it). Only over
    /// etcd+https://.
    #[arg(long, value_name = "FILE", env = "IPAM_ETCD_PASSWORD_FILE")]
    pub etcd_password_file: Option<PathBuf>,
}

impl EtcdArgs {
    /// The store at `url` with these settings.
    pub fn spec(&self, url: &str) -> StoreSpec {
        StoreSpec {
            url: url.to_owned(),
            etcd: EtcdAccess {
                ca: self.etcd_cacert.clone(),
                cert: self.etcd_cert.clone(),
                key: self.etcd_key.clone(),
                user: self.etcd_user.clone(),
                password: self.etcd_password_file.clone().map(Password::File),
                names: CLI_NAMES,
            },
        }
    }
}

/// Asking the wire whether an address is in use before it is handed out.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// Probe each address on interface IF first (RFC 5227 ARP probes from 0.0.0.0 for IPv4,
    /// RFC 4862 duplicate address detection from :: for IPv6); needs CAP_NET_RAW.
    #[arg(long, value_name = "IF")]
    pub probe: Option<String>,
    /// The probes' pace: `fast` (3 probes, under 0.7 s), `rfc5227` (RFC 5227's constants, up
    /// to 7 s) or PROBES,WAIT_MS,MIN_MS,MAX_MS,ANSWER_MS.
    #[arg(long, value_name = "SPEC", default_value = "fast", requires = "probe")]
    pub probe_timing: ipi_core::acd::Timing,
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
    /// NetConfig files (network.openstack.org/v1beta1): the networks reservations come from.
    Netconfig {
        /// What to do with one.
        #[command(subcommand)]
        command: NetconfigCommand,
    },
    /// Reserve an address on every network an IPSet asks for; print its status.reservations.
    /// The same IPSet again gets the same answer.
    Reserve {
        /// The NetConfig.
        #[arg(long, value_name = "FILE")]
        netconfig: PathBuf,
        /// The IPSet (its spec.networks; a status in it is ignored).
        #[arg(long, value_name = "FILE")]
        ipset: PathBuf,
        /// The store.
        #[command(flatten)]
        store: StoreArgs,
        /// An address another host answers for is skipped, and kept in the store as
        /// `answered/ADDRESS` until `ipam release answered/ADDRESS`.
        #[command(flatten)]
        probe: ProbeArgs,
        /// JSON rather than YAML.
        #[arg(long)]
        json: bool,
    },
    /// Release every address reserved for NAME (an IPSet, or a pool request), in every pool;
    /// `answered/ADDRESS` frees an address that `--probe` found in use on the wire.
    Release {
        /// The IPSet's or the request's name.
        name: String,
        /// The store.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List every reservation in the store, by pool and address.
    List {
        /// The store.
        #[command(flatten)]
        store: StoreArgs,
        /// JSON rather than text.
        #[arg(long)]
        json: bool,
    },
    /// What a CNI network holds that this node's runtime no longer does: every reservation of
    /// the network and what its runtime's GC makes of it (leaked: this node's, not attached,
    /// older than the network's gc_grace; else kept, and why). Nothing is freed without --free.
    Gc {
        /// The network config, as the runtime gives it to the plugin (a NetworkAttachmentDefinition's
        /// config), or the runtime's conflist (podman's, /etc/cni/net.d's) holding one plugin
        /// with an ipam section: that section names the ranges and the store.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// The attachments the runtime holds, one CONTAINERID/IFNAME a line (as `ipam list`
        /// names their owners; blank lines and # comments skipped); - for stdin.
        #[arg(long, value_name = "FILE")]
        keep: PathBuf,
        /// This node's name, as its ADDs recorded it (default: the host name).
        #[arg(long, value_name = "NAME", env = "IPAM_NODE_NAME")]
        node: Option<String>,
        /// Free the leaked ones, as the runtime's GC would.
        #[arg(long)]
        free: bool,
        /// JSON rather than text.
        #[arg(long)]
        json: bool,
    },
    /// MetalLB address pools.
    Pool {
        /// What to do with one.
        #[command(subcommand)]
        command: PoolCommand,
    },
    /// Act as a CNI IPAM plugin: CNI_COMMAND (ADD, DEL, CHECK, VERSION, GC), CNI_CONTAINERID,
    /// CNI_IFNAME and CNI_ARGS from the environment, the network config on stdin, the result or
    /// a CNI error object on stdout (exit 1 on error). Plain `ipam` does the same whenever
    /// CNI_COMMAND is set, so `"type": "ipam"` finds it on the CNI path.
    Cni,
}

/// `ipam netconfig ...`.
#[derive(Debug, Subcommand)]
pub enum NetconfigCommand {
    /// Check a NetConfig with the infra-operator's rules and ours (no overlapping cidrs or
    /// ranges); list every problem and exit 1 if any.
    Validate {
        /// The NetConfig file (YAML or JSON).
        file: PathBuf,
    },
}

/// `ipam pool ...`.
#[derive(Debug, Subcommand)]
pub enum PoolCommand {
    /// Reserve an address of a MetalLB IPAddressPool for NAME and print it; requests with the
    /// same sharing key share one address. The same NAME again gets the same answer.
    Reserve {
        /// The IPAddressPool (metallb.io/v1beta1).
        #[arg(long, value_name = "FILE")]
        pool: PathBuf,
        /// Who the address is for (a service, say).
        #[arg(long, value_name = "NAME")]
        name: String,
        /// Share one address among every request with this key.
        #[arg(long, value_name = "KEY")]
        sharing_key: Option<String>,
        /// The store.
        #[command(flatten)]
        store: StoreArgs,
        /// An address another host answers for is skipped, and kept in the store as
        /// `answered/ADDRESS` until `ipam release answered/ADDRESS`.
        #[command(flatten)]
        probe: ProbeArgs,
        /// JSON rather than text.
        #[arg(long)]
        json: bool,
    },
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
    /// not a node's address; with --probe, not answered on the wire); list every problem in the
    /// installer's words and exit 1 if any.
    Validate {
        /// The cluster and its nodes.
        #[command(flatten)]
        cluster: ClusterArgs,
        /// A VIP another host answers for is a problem (once the other rules pass).
        #[command(flatten)]
        probe: ProbeArgs,
    },
    /// Suggest VIPs as OpenStack's installer does: hosts 5 (API) and 7 (Ingress) of the first
    /// machine network of each family, moving on to the next free address when one is a node's,
    /// reserved in the store or (with --probe) answered on the wire.
    Suggest {
        /// The cluster (only its machine networks are read) and its nodes.
        #[command(flatten)]
        cluster: ClusterArgs,
        /// A store whose reservations the VIPs must avoid.
        #[arg(long, value_name = "URL", env = "IPAM_STORE")]
        store: Option<String>,
        /// How to get into it, if it is an etcd store.
        #[command(flatten)]
        etcd: EtcdArgs,
        /// A VIP another host answers for is passed over.
        #[command(flatten)]
        probe: ProbeArgs,
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

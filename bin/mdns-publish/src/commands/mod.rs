//! One function per subcommand: each turns its command-line arguments into what the library
//! takes, runs it, reports errors on stderr and returns the exit status (ipi_core::exit:
//! 0 success, 1 failed, 2 usage/config).
//!
//! - [`run`]: publish this node ([`crate::publish`]).
//! - [`browse`]: the others, as a node inventory ([`crate::lookup`]).

use std::net::IpAddr;
use std::process::ExitCode;

use ipi_core::exit::Status;
use ipi_core::ClusterError;

use crate::cli::{self, OnConflict};
use crate::config::{Config, ConfigError, OpenShiftNode, Source};
use crate::key::ClusterKey;
use crate::lookup::{self, Browse, Output};
use crate::publish;

/// `mdns-publish run`: until SIGTERM (0); 1 on a name conflict or when it cannot start (an
/// interface, a socket); 2 when the configuration is wrong.
pub fn run(args: &cli::Run) -> ExitCode {
    ipi_core::service::logging(args.verbose, args.quiet);
    let (bind, source) = match source(args) {
        Ok(s) => s,
        Err(e) => return usage(&e.to_string()),
    };
    let key = match ClusterKey::given_or_default(args.cluster_key.as_deref()) {
        Ok(k) => k,
        Err(e) => return usage(&e.to_string()),
    };
    let on_conflict = match args.on_conflict {
        OnConflict::Exit => publish::OnConflict::Exit,
        OnConflict::Wait => publish::OnConflict::Wait,
    };
    match publish::run(bind, &source, on_conflict, key) {
        Ok(()) => Status::Success.into(),
        Err(e) => {
            eprintln!("mdns-publish: {e}");
            Status::Failed.into()
        }
    }
}

/// What `run` was given that cannot be published.
#[derive(Debug, thiserror::Error)]
enum SourceError {
    /// clap requires these with --cluster; checked again rather than unwrapped.
    #[error("--cluster needs --hostname, --role and --bind")]
    Incomplete,
    /// The config file, or a host name that cannot publish etcd-N.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The cluster's install-config.yaml.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// The address whose interface is published and what is published there: from the config
/// file, or what OpenShift publishes for the node.
fn source(args: &cli::Run) -> Result<(IpAddr, Source), SourceError> {
    if let Some(path) = &args.config {
        let config = Config::load(path)?;
        let hostname = nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bind = args.bind.unwrap_or(config.bind_address);
        return Ok((bind, Source::Config { config, hostname }));
    }
    let (Some(cluster), Some(hostname), Some(role), Some(bind)) =
        (&args.cluster, &args.hostname, args.role, args.bind)
    else {
        return Err(SourceError::Incomplete);
    };
    let cluster = ipi_core::Cluster::load(cluster, None)?;
    let node = OpenShiftNode::new(&cluster, hostname, role)?;
    Ok((bind, Source::OpenShift(node)))
}

/// `mdns-publish browse`: 0 when a node was found, 1 when none was or it failed; with
/// `--watch`, runs until killed.
pub fn browse(args: &cli::Browse) -> ExitCode {
    // Warnings (what a round left out and why) and errors on stderr.
    ipi_core::service::logging(0, false);
    let key = match ClusterKey::given_or_default(args.cluster_key.as_deref()) {
        Ok(k) => k,
        Err(e) => return usage(&e.to_string()),
    };
    let b = Browse {
        kind: args.kind.clone(),
        filter: args.filter.clone(),
        min_srv: args.min_srv,
        round: args.timeout,
        bind: args.bind,
        key,
    };
    let out = Output {
        json: args.json,
        file: args.output.clone(),
        watch: args.watch,
        metrics: args.metrics.clone(),
    };
    let runtime = match ipi_core::service::runtime() {
        Ok(r) => r,
        Err(e) => return usage(&e.to_string()),
    };
    match runtime.block_on(lookup::browse(&b, &out)) {
        Ok(true) => Status::Success.into(),
        Ok(false) => Status::Failed.into(),
        Err(e) => {
            eprintln!("mdns-publish browse: {e}");
            Status::Failed.into()
        }
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("mdns-publish: {message}");
    Status::Usage.into()
}

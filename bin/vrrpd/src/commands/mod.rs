//! One function per subcommand: each loads what it needs, reports errors on stderr with their
//! place, and returns the exit status (ipi_core::exit: 0 success, 1 failed, 2 usage/config).
//!
//! - [`check_config`] and [`render`]: the configuration side ([`crate::config`]).
//! - [`run`] and [`status`]: the daemon and its state directory.
//! - [`watch`]: adverts on the wire or in a capture, decoded; [`vrid`]: OpenShift's VRIDs;
//!   [`survey`]: the VRIDs in use on a link, and whether a cluster's are free.

pub mod survey;

pub use survey::survey;

use std::path::Path;
use std::process::ExitCode;

use ipi_core::exit::Status;

use crate::cli;
use crate::config::{Source, SourceError};

/// `vrrpd vrid NAME`: the API and Ingress VRIDs of the cluster `name`, on one line.
pub fn vrid(name: &str) -> ExitCode {
    let vrids = ipi_core::vrid::Vrids::for_cluster(name);
    println!("{} {}", vrids.api, vrids.ingress);
    Status::Success.into()
}

/// `vrrpd check-config -f FILE [-i ID]`: 0 when valid, 2 with every error on stderr; warnings
/// (what is accepted without effect in vrrpd) on stderr either way.
pub fn check_config(config: &Path, config_id: Option<&str>) -> ExitCode {
    let read = crate::config::read(config, &crate::config::LexOptions::with_id(config_id));
    for (location, message) in &read.warnings.0 {
        eprintln!("{location}: warning: {message}");
    }
    match read.config {
        Ok(c) => {
            eprintln!(
                "{}: valid: {} instance(s), {} script(s), {} sync group(s)",
                config.display(),
                c.instances.len(),
                c.scripts.len(),
                c.sync_groups.len()
            );
            Status::Success.into()
        }
        Err(errors) => {
            eprintln!("{errors}");
            Status::Usage.into()
        }
    }
}

/// `vrrpd render (-f FILE | --cluster ...)`: the configuration as keepalived.conf on stdout;
/// 2 with the errors when the input is wrong.
pub fn render(source: &cli::Source) -> ExitCode {
    let loaded = match source.pool_options() {
        Some(options) => crate::pool::load(&options).map_err(|e| e.to_string()),
        None => crate::config::load_source(source).map_err(|e| e.to_string()),
    };
    match loaded {
        Ok(c) => {
            print!("{}", crate::config::write::write(&c));
            Status::Success.into()
        }
        Err(e) => {
            eprintln!("{e}");
            Status::Usage.into()
        }
    }
}

/// `vrrpd run (-f FILE | --cluster ...) --state-dir DIR [--metrics ADDR:PORT]`: runs until
/// SIGTERM; 2 when the configuration (or --metrics) is wrong, 1 when it cannot start (an
/// interface, a socket, the metrics port).
pub fn run(
    source: &cli::Source,
    state_dir: &Path,
    metrics: &cli::Metrics,
    probe: &cli::Probe,
    verbose: u8,
    quiet: bool,
) -> ExitCode {
    ipi_core::service::logging(verbose, quiet);
    let metrics = match metrics_listener(metrics) {
        Ok(listener) => listener,
        Err(status) => return status.into(),
    };
    let runtime = match crate::daemon::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("vrrpd: {e}");
            return Status::Failed.into();
        }
    };
    let loaded = match source.pool_options() {
        Some(options) => pool_loader(options, &runtime),
        None => file_loader(Source::from(source)),
    };
    let (config, reload, changes) = match loaded {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("{e}");
            return Status::Usage.into();
        }
    };
    let probe = (!probe.no_probe).then_some(probe.probe_timing);
    match crate::daemon::run(runtime, config, state_dir, reload, changes, metrics, probe) {
        Ok(()) => Status::Success.into(),
        Err(e) => {
            eprintln!("vrrpd: {e}");
            Status::Failed.into()
        }
    }
}

/// What `run` starts with: the configuration, how to load it again, and what says when to.
type Loaded = (
    crate::config::Config,
    crate::daemon::Loader,
    Option<tokio::sync::mpsc::UnboundedReceiver<()>>,
);

/// A keepalived.conf or the cluster: loaded again on SIGHUP.
fn file_loader(source: Source) -> Result<Loaded, String> {
    let config = crate::config::load_source(source.clone()).map_err(|e| e.to_string())?;
    let reload: crate::daemon::Loader = if source.is_reloadable() {
        Box::new(move || crate::config::load_source(source.clone()))
    } else {
        Box::new(|| Err(SourceError::NotReloadable))
    };
    Ok((config, reload, None))
}

/// The pool mode: the files read on SIGHUP, the store followed (by a task on the daemon's
/// `runtime`), the configuration built again from both whenever either changes.
fn pool_loader(
    options: crate::pool::Options,
    runtime: &tokio::runtime::Runtime,
) -> Result<Loaded, String> {
    let spec = crate::pool::load_spec(&options).map_err(|e| e.to_string())?;
    let (latest, changes) = runtime
        .block_on(crate::pool::follow::start(
            &options.store,
            spec.store_pool(),
        ))
        .map_err(|e| format!("--store: {e}"))?;
    let config = crate::pool::build(&spec, &latest.get()).map_err(|e| e.to_string())?;
    let followed = spec.store_pool().to_owned();
    let reload: crate::daemon::Loader = Box::new(move || {
        let spec = crate::pool::load_spec(&options).map_err(SourceError::other)?;
        if spec.store_pool() != followed {
            return Err(SourceError::Other(format!(
                "{}: the pool is now {:?}: the store follows {followed:?} until a restart",
                options.pool.display(),
                spec.pool.name
            )));
        }
        crate::pool::build(&spec, &latest.get()).map_err(SourceError::other)
    });
    Ok((config, reload, Some(changes)))
}

/// The metrics endpoint's socket, bound before the daemon starts so that a taken port is an
/// error at once. The endpoint has no authentication: only loopback unless allowed.
fn metrics_listener(m: &cli::Metrics) -> Result<Option<std::net::TcpListener>, Status> {
    let Some(address) = m.listen else {
        return Ok(None);
    };
    if !address.ip().is_loopback() && !m.allow_remote {
        eprintln!(
            "vrrpd: --metrics {address}: not a loopback address; the endpoint has no \
             authentication (give --metrics-allow-remote to serve it there anyway)"
        );
        return Err(Status::Usage);
    }
    std::net::TcpListener::bind(address).map(Some).map_err(|e| {
        eprintln!("vrrpd: --metrics {address}: {e}");
        Status::Failed
    })
}

/// `vrrpd status [--json] --state-dir DIR`: 0 with the status, 1 when no vrrpd runs there.
pub fn status(json: bool, state_dir: &Path) -> ExitCode {
    match crate::daemon::status::read(state_dir) {
        Ok(v) => {
            if json {
                println!("{v}");
            } else {
                print!("{}", crate::daemon::status::to_text(&v));
            }
            Status::Success.into()
        }
        Err(e) => {
            eprintln!("vrrpd status: {e}");
            Status::Failed.into()
        }
    }
}

/// `vrrpd watch (--interface IF | --pcap FILE) [--json] [--show-secrets] [-f FILE]`.
///
/// Exit 0 when the capture was read (or the reader of stdout went away), 1 when the interface
/// cannot be watched or the capture cannot be read, 2 when the configuration is wrong.
pub fn watch(
    interface: Option<&str>,
    pcap: Option<&Path>,
    format: crate::watch::Format,
    config: Option<&Path>,
) -> ExitCode {
    use crate::watch;
    let groups = match config.map(crate::config::load).transpose() {
        Ok(c) => c.as_ref().map(watch::Groups::of).unwrap_or_default(),
        Err(errors) => {
            eprintln!("{errors}");
            return Status::Usage.into();
        }
    };
    if let Some(path) = pcap {
        let mut seen = match watch::read_capture(path) {
            Ok(seen) => seen,
            Err(e) => {
                eprintln!("vrrpd watch: {e}");
                return Status::Failed.into();
            }
        };
        for s in &mut seen {
            if let Ok(advert) = &s.outcome {
                s.foreign = groups.foreign(advert, None);
            }
        }
        let mut out = std::io::stdout().lock();
        for s in &seen {
            if watch::print(&mut out, s, format).is_err() {
                break;
            }
        }
        return Status::Success.into();
    }
    let Some(interface) = interface else {
        eprintln!("vrrpd watch: give --interface IF or --pcap FILE");
        return Status::Usage.into();
    };
    let runtime = match ipi_core::service::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("vrrpd watch: cannot start the event loop: {e}");
            return Status::Failed.into();
        }
    };
    match runtime.block_on(watch::listen(interface, format, &groups)) {
        Ok(()) => Status::Success.into(),
        Err(e) => {
            eprintln!("vrrpd watch: {e}");
            Status::Failed.into()
        }
    }
}

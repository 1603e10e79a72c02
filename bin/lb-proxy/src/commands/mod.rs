//! One function per subcommand: each turns the command line into the library's own types,
//! reports errors on stderr, and returns the exit status (ipi_core::exit: 0 success, 1
//! failed, 2 usage or configuration).
//!
//! - [`check_config`] and [`render`]: the configuration side ([`crate::config`]).
//! - [`run`]: the daemon ([`crate::daemon`]).
//! - [`check`]: the track script ([`crate::http::check`]); with `--servers`, the servers of
//!   lb-proxy's stats page ([`servers`]).

mod servers;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use ipi_core::exit::Status;

use crate::cli;
use crate::config::{self, Loaded, Source};
use crate::daemon::redirect::{Redirect, Wanted};
use crate::daemon::{self, Options, Runtime};
use crate::forward::Transfer;
use crate::http::Url;

/// `lb-proxy check-config -f FILE`: 0 when valid, 2 with every error on stderr; warnings
/// (what is accepted without effect) on stderr either way.
pub fn check_config(path: &Path) -> ExitCode {
    let (loaded, warnings) = config::load_warned(path);
    for (at, why) in &warnings.0 {
        eprintln!("warning: {at}: {why}");
    }
    match loaded {
        Ok(c) => {
            eprintln!("{}: valid: {} proxies", path.display(), c.proxies.len());
            Status::Success.into()
        }
        Err(errors) => {
            eprintln!("{errors}");
            Status::Usage.into()
        }
    }
}

/// `lb-proxy render (-f FILE | --cluster ...)`: the configuration as haproxy.cfg on stdout;
/// 2 with the errors when the input is wrong.
pub fn render(source: &cli::Source) -> ExitCode {
    match load(source) {
        Ok((_, loaded)) => {
            print!("{}", config::write::write(&loaded.config));
            Status::Success.into()
        }
        Err(status) => status,
    }
}

/// `lb-proxy run (-f FILE | --cluster ...)`: runs until a signal stops it; 2 when the
/// configuration is wrong, 1 when it cannot start (a socket, a thread).
pub fn run(args: cli::Run) -> ExitCode {
    ipi_core::service::logging(args.verbose, args.quiet);
    let (source, loaded) = match load(&args.source) {
        Ok(l) => l,
        Err(status) => return status,
    };
    let options = options(&args, loaded.api_vips.as_deref());
    let reload = Box::new(move || config::load_source(&source).map(|l| l.config));
    match daemon::run(loaded.config, options, reload) {
        Ok(()) => Status::Success.into(),
        Err(e) => {
            eprintln!("lb-proxy: {e}");
            Status::Failed.into()
        }
    }
}

/// `lb-proxy check URL`: quiet like `curl -s`; 0 on 2xx/3xx, 1 otherwise, 2 for a bad URL.
/// With `servers`, URL is lb-proxy's stats page: [`servers::report`] on stdout, 0 when every
/// backend has a server UP, 1 when one has none, 2 when the page cannot be read.
pub fn check(text: &str, timeout: Duration, servers: bool) -> ExitCode {
    let url = match Url::parse(text) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("{e}");
            return Status::Usage.into();
        }
    };
    let runtime = match ipi_core::service::runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("lb-proxy check: {e}");
            return Status::Failed.into();
        }
    };
    if servers {
        return runtime.block_on(report_servers(url, text, timeout));
    }
    match runtime.block_on(crate::http::check(&url, timeout)) {
        Ok(_) => Status::Success.into(),
        Err(_) => Status::Failed.into(),
    }
}

/// `lb-proxy check --servers URL`: reads `URL;json` and prints the report.
async fn report_servers(mut url: Url, shown: &str, timeout: Duration) -> ExitCode {
    url.path.push_str(";json");
    let read = match crate::http::page(&url, timeout).await {
        Ok(a) if a.status == 200 => serde_json::from_slice(&a.body).map_err(|e| e.to_string()),
        Ok(a) => Err(format!("HTTP {}", a.status)),
        Err(e) => Err(e.to_string()),
    };
    match read.and_then(|stats| servers::report(&stats)) {
        Ok((text, served)) => {
            print!("{text}");
            if served {
                Status::Success.into()
            } else {
                Status::Failed.into()
            }
        }
        Err(why) => {
            eprintln!("lb-proxy check --servers {shown}: {why}");
            Status::Usage.into()
        }
    }
}

/// The configuration the command line names, and the library's [`Source`] to read it again;
/// Err(2) once the error is on stderr.
fn load(source: &cli::Source) -> Result<(Source, Loaded), ExitCode> {
    let source = match (&source.config, &source.cluster, &source.nodes) {
        (Some(path), _, _) => Source::File(path.clone()),
        (None, Some(cluster), Some(nodes)) => Source::Cluster {
            config: cluster.clone(),
            nodes: nodes.clone(),
        },
        // clap insists on one or the other already.
        _ => {
            eprintln!("give -f FILE, or --cluster FILE --nodes INVENTORY");
            return Err(Status::Usage.into());
        }
    };
    match config::load_source(&source) {
        Ok(loaded) => Ok((source, loaded)),
        Err(e) => {
            eprintln!("{e}");
            Err(Status::Usage.into())
        }
    }
}

/// How the daemon runs, from `run`'s options; `cluster_vips` as [`Redirect::choose`] takes
/// them.
fn options(args: &cli::Run, cluster_vips: Option<&[std::net::IpAddr]>) -> Options {
    let wanted = Wanted {
        vips: args.redirect_vips.clone(),
        off: args.no_redirect,
        flag_file: args.flag_file.clone(),
        interval: args.redirect_interval,
    };
    Options {
        copy: if args.copy {
            Transfer::Buffered
        } else {
            Transfer::Splice
        },
        redirect: Redirect::choose(wanted, cluster_vips),
        threads: args.threads,
        runtime: match args.runtime {
            cli::Runtime::PerCore => Runtime::PerCore,
            cli::Runtime::WorkStealing => Runtime::WorkStealing,
        },
    }
}

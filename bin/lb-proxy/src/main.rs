//! `lb-proxy`: command-line wiring only; the logic lives in the library.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ipi_core::exit::Status;
use lb_proxy::cli::{Cli, Command};
use lb_proxy::daemon::redirect::Redirect;
use lb_proxy::daemon::Options;
use lb_proxy::forward::Transfer;

/// Where keepalived's chk_ocp_lb looks for the redirect (OpenShift's flag file).
const OPENSHIFT_FLAG_FILE: &str = "/var/run/keepalived/iptables-rule-exists";

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::CheckConfig { config } => match lb_proxy::config::load(&config) {
            Ok(c) => {
                eprintln!("{}: valid: {} proxies", config.display(), c.proxies.len());
                Status::Success.into()
            }
            Err(errors) => {
                eprintln!("{errors}");
                Status::Usage.into()
            }
        },
        Command::Render { source } => match lb_proxy::config::load_source(&source) {
            Ok((c, _)) => {
                print!("{}", lb_proxy::config::write::write(&c));
                Status::Success.into()
            }
            Err(e) => {
                eprintln!("{e}");
                Status::Usage.into()
            }
        },
        Command::Run {
            source,
            redirect_vips,
            no_redirect,
            flag_file,
            redirect_interval,
            copy,
            threads,
            runtime,
            verbose,
            quiet,
        } => {
            ipi_core::service::logging(verbose, quiet);
            let (config, api_vips) = match lb_proxy::config::load_source(&source) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{e}");
                    return Status::Usage.into();
                }
            };
            let cluster = source.cluster.is_some();
            let vips = if redirect_vips.is_empty() && cluster && !no_redirect {
                api_vips
            } else {
                redirect_vips
            };
            let redirect = (!vips.is_empty()).then(|| Redirect {
                vips,
                flag_file: flag_file.or_else(|| cluster.then(|| OPENSHIFT_FLAG_FILE.into())),
                interval: redirect_interval,
            });
            let options = Options {
                copy: if copy {
                    Transfer::Buffered
                } else {
                    Transfer::Splice
                },
                redirect,
                threads,
                runtime,
            };
            let reload = Box::new(move || lb_proxy::config::load_source(&source).map(|(c, _)| c));
            match lb_proxy::daemon::run(config, options, reload) {
                Ok(()) => Status::Success.into(),
                Err(e) => {
                    eprintln!("lb-proxy: {e}");
                    Status::Failed.into()
                }
            }
        }
        Command::Check { url, timeout } => {
            let url = match lb_proxy::http::Url::parse(&url) {
                Ok(u) => u,
                Err(e) => {
                    eprintln!("{e}");
                    return Status::Usage.into();
                }
            };
            check(&url, timeout)
        }
    }
}

/// `lb-proxy check`: quiet like `curl -s`; exit 0 on 2xx/3xx, 1 otherwise.
fn check(url: &lb_proxy::http::Url, timeout: Duration) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("lb-proxy check: {e}");
            return Status::Failed.into();
        }
    };
    match runtime.block_on(lb_proxy::http::check(url, timeout)) {
        Ok(_) => Status::Success.into(),
        Err(_) => Status::Failed.into(),
    }
}

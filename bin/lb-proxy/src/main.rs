//! `lb-proxy`: command-line wiring only; the logic lives in the library.

use std::process::ExitCode;

use clap::Parser;
use ipi_core::exit::Status;
use lb_proxy::cli::{Cli, Command};

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
        Command::Run { .. } => ipi_core::exit::not_implemented("lb-proxy run", 4),
        Command::Render { source } => match lb_proxy::config::load_source(&source) {
            Ok(c) => {
                print!("{}", lb_proxy::config::write::write(&c));
                Status::Success.into()
            }
            Err(e) => {
                eprintln!("{e}");
                Status::Usage.into()
            }
        },
        Command::Check { .. } => ipi_core::exit::not_implemented("lb-proxy check", 4),
    }
}

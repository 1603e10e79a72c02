//! `lb-proxy`: command-line wiring only; the logic lives in the library.

use std::process::ExitCode;

use clap::Parser;
use lb_proxy::cli::{Cli, Command};
use lb_proxy::commands;

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::CheckConfig { config } => commands::check_config(&config),
        Command::Render { source } => commands::render(&source),
        Command::Run(run) => commands::run(run),
        Command::Check {
            url,
            timeout,
            servers,
        } => commands::check(&url, timeout, servers),
    }
}

//! `vrrpd`: command-line wiring only; the logic lives in the library.

use std::process::ExitCode;

use clap::Parser;
use vrrpd::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Vrid { name } => vrrpd::commands::vrid(&name),
        Command::CheckConfig { config } => vrrpd::commands::check_config(&config),
        Command::Render { source } => vrrpd::commands::render(&source),
        Command::Run { source, state_dir } => {
            vrrpd::commands::run(&source, &state_dir, cli.verbose, cli.quiet)
        }
        Command::Status { json, state_dir } => vrrpd::commands::status(json, &state_dir),
        Command::Watch {
            interface,
            pcap,
            json,
        } => vrrpd::commands::watch(interface.as_deref(), pcap.as_deref(), json),
    }
}

//! `vrrpd`: command-line wiring only; the logic lives in the library.

use std::process::ExitCode;

use clap::Parser;
use ipi_core::exit::Status;
use ipi_core::vrid::Vrids;
use vrrpd::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Vrid { name } => {
            let vrids = Vrids::for_cluster(&name);
            println!("{} {}", vrids.api, vrids.ingress);
            Status::Success.into()
        }
        Command::Run { .. }
        | Command::Render { .. }
        | Command::CheckConfig { .. }
        | Command::Status { .. }
        | Command::Watch { .. } => ipi_core::exit::not_implemented("vrrpd", 3),
    }
}

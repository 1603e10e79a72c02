//! `mdns-publish`: command-line wiring only; the logic lives in the library.

use std::process::ExitCode;

use clap::Parser;
use mdns_publish::cli::{Cli, Command};
use mdns_publish::commands;

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run(args) => commands::run(&args),
        Command::Browse(args) => commands::browse(&args),
    }
}

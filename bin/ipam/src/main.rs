//! `ipam`: command-line wiring only; the logic lives in the library.
//!
//! Exit status: 0 success; 1 a check failed (`vip validate`, `netconfig validate`) or a request
//! cannot be met (no free address, a fixed address taken or refused); 2 bad input or usage;
//! 3 the store could not be used (nothing was done). In CNI mode, CNI's own rules.

use std::process::ExitCode;

use clap::Parser;
use ipam::cli::Cli;
use ipam::commands;

fn main() -> ExitCode {
    if std::env::var_os("CNI_COMMAND").is_some() {
        return ipam::cni::main();
    }
    commands::run(Cli::parse().command)
}

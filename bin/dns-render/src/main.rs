//! `dns-render`: command-line wiring only; the logic lives in the library.
//!
//! Exit status: 0 success (with --exit-changed: 0 when an output changed, 1 when every output
//! was already so), 2 bad input or usage; the previous outputs are left as they were.

use std::process::ExitCode;

use clap::Parser;
use dns_render::cli::Cli;

fn main() -> ExitCode {
    // Every subcommand is one render job; commands::render runs any of them.
    dns_render::commands::render(&Cli::parse().command)
}

//! `vrrpd`: command-line wiring only; the logic lives in the library.

use std::process::ExitCode;

use clap::Parser;
use vrrpd::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Vrid { name } => vrrpd::commands::vrid(&name),
        Command::CheckConfig { config, config_id } => {
            vrrpd::commands::check_config(&config, config_id.as_deref())
        }
        Command::Render { source } => vrrpd::commands::render(&source),
        Command::Run {
            source,
            state_dir,
            metrics,
            probe,
        } => vrrpd::commands::run(
            &source,
            &state_dir,
            &metrics,
            &probe,
            cli.verbose,
            cli.quiet,
        ),
        Command::Status { json, state_dir } => vrrpd::commands::status(json, &state_dir),
        Command::Watch {
            input,
            json,
            show_secrets,
            config,
        } => vrrpd::commands::watch(
            input.interface.as_deref(),
            input.pcap.as_deref(),
            vrrpd::watch::Format { json, show_secrets },
            config.as_deref(),
        ),
        Command::Survey {
            input,
            listen_for,
            cluster_name,
            json,
        } => {
            let source = vrrpd::commands::survey::Source::of(
                input.interface.as_deref(),
                input.pcap.as_deref(),
                listen_for,
            );
            vrrpd::commands::survey(source, cluster_name.as_deref(), json)
        }
    }
}

//! `dns-render`: command-line wiring only; the logic lives in the library.
//!
//! Exit status: 0 success (with --exit-changed: 0 when an output changed, 1 when every output
//! was already so), 2 bad input or usage; the previous outputs are left as they were.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Parser;
use dns_render::cli::{Cli, Command};
use dns_render::job;
use ipi_core::exit::Status;

fn main() -> ExitCode {
    let command = Cli::parse().command;
    let out = match &command {
        Command::Corefile { out, .. }
        | Command::Dnsmasq { out, .. }
        | Command::Hosts { out, .. }
        | Command::Dnsdata { out, .. }
        | Command::Resolv { out, .. } => out.clone(),
    };
    if out.watch {
        watch(&command);
    }
    match job::render(&command).and_then(|o| job::write(&o)) {
        Ok(true) => Status::Success.into(),
        Ok(false) if out.exit_changed => Status::Failed.into(),
        Ok(false) => Status::Success.into(),
        Err(e) => {
            eprintln!("dns-render: {e}");
            Status::Usage.into()
        }
    }
}

/// Renders whenever an input file changes (by modification time, looked at every second);
/// never returns.
fn watch(command: &Command) -> ! {
    let stamp = |c: &Command| -> Vec<Option<SystemTime>> {
        job::inputs(c)
            .iter()
            .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
            .collect()
    };
    let mut last = None;
    loop {
        let now = stamp(command);
        if last.as_ref() != Some(&now) {
            match job::render(command).and_then(|o| job::write(&o)) {
                Ok(true) => eprintln!("dns-render: written"),
                Ok(false) => {}
                Err(e) => eprintln!("dns-render: {e} (the previous output is kept)"),
            }
            last = Some(now);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

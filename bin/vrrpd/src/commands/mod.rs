//! One function per subcommand: each loads what it needs, reports errors on stderr with their
//! place, and returns the exit status (ipi_core::exit: 0 success, 1 failed, 2 usage/config).
//!
//! - [`check_config`] and [`render`]: the configuration side ([`crate::config`]).
//! - [`run`] and [`status`]: the daemon and its state directory.
//! - [`watch`]: adverts on the wire or in a capture, decoded.

use std::path::Path;
use std::process::ExitCode;

use ipi_core::exit::Status;

use crate::cli::Source;

/// `vrrpd check-config -f FILE`: 0 when valid, 2 with every error on stderr.
pub fn check_config(config: &Path) -> ExitCode {
    match crate::config::load(config) {
        Ok(c) => {
            eprintln!(
                "{}: valid: {} instance(s), {} script(s), {} sync group(s)",
                config.display(),
                c.instances.len(),
                c.scripts.len(),
                c.sync_groups.len()
            );
            Status::Success.into()
        }
        Err(errors) => {
            eprintln!("{errors}");
            Status::Usage.into()
        }
    }
}

/// `vrrpd render (-f FILE | --cluster ...)`.
pub fn render(_source: &Source) -> ExitCode {
    ipi_core::exit::not_implemented("vrrpd render", 3)
}

/// `vrrpd run (-f FILE | --cluster ...) --state-dir DIR`.
pub fn run(_source: &Source, _state_dir: &Path, _verbose: u8, _quiet: bool) -> ExitCode {
    ipi_core::exit::not_implemented("vrrpd run", 3)
}

/// `vrrpd status [--json] --state-dir DIR`.
pub fn status(_json: bool, _state_dir: &Path) -> ExitCode {
    ipi_core::exit::not_implemented("vrrpd status", 3)
}

/// `vrrpd watch (--interface IF | --pcap FILE) [--json]`.
///
/// Exit 0 when the capture was read (or the reader of stdout went away), 1 when the interface
/// cannot be watched or the capture cannot be read.
pub fn watch(interface: Option<&str>, pcap: Option<&Path>, json: bool) -> ExitCode {
    use crate::watch;
    if let Some(path) = pcap {
        let seen = match watch::read_capture(path) {
            Ok(seen) => seen,
            Err(e) => {
                eprintln!("vrrpd watch: {e}");
                return Status::Failed.into();
            }
        };
        let mut out = std::io::stdout().lock();
        for s in &seen {
            if watch::print(&mut out, s, json).is_err() {
                break;
            }
        }
        return Status::Success.into();
    }
    let Some(interface) = interface else {
        eprintln!("vrrpd watch: give --interface IF or --pcap FILE");
        return Status::Usage.into();
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("vrrpd watch: cannot start the event loop: {e}");
            return Status::Failed.into();
        }
    };
    match runtime.block_on(watch::listen(interface, json)) {
        Ok(()) => Status::Success.into(),
        Err(e) => {
            eprintln!("vrrpd watch: {e}");
            Status::Failed.into()
        }
    }
}

//! One function per subcommand: each loads what it needs, reports errors on stderr with their
//! place, and returns the exit status (ipi_core::exit: 0 success, 1 failed, 2 usage/config).
//!
//! - [`check_config`] and [`render`]: the configuration side ([`crate::config`]).
//! - [`run`] and [`status`]: the daemon and its state directory.
//! - [`watch`]: adverts on the wire or in a capture, decoded.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::Source;

/// `vrrpd check-config -f FILE`.
pub fn check_config(_config: &Path) -> ExitCode {
    ipi_core::exit::not_implemented("vrrpd check-config", 3)
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
pub fn watch(_interface: Option<&str>, _pcap: Option<&Path>, _json: bool) -> ExitCode {
    ipi_core::exit::not_implemented("vrrpd watch", 3)
}

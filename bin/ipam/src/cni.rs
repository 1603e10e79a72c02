//! ipam as a CNI IPAM plugin (being built).

use std::process::ExitCode;

/// Runs one CNI command from the environment and stdin.
pub fn main() -> ExitCode {
    eprintln!("ipam: the CNI plugin is being built (issue #7)");
    ipi_core::exit::Status::Usage.into()
}

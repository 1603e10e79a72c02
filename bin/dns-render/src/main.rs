//! `dns-render`: render the cluster's DNS configuration.
//!
//! Not built yet (issue #6): it says so and exits with the usage/configuration
//! status, so that nothing mistakes it for a working program.

fn main() -> std::process::ExitCode {
    ipi_core::exit::not_implemented("dns-render", 6)
}

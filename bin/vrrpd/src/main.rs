//! `vrrpd`: hold virtual IPs with VRRP (stands in for keepalived).
//!
//! Not built yet (issue #3): it says so and exits with the usage/configuration
//! status, so that nothing mistakes it for a working program.

fn main() -> std::process::ExitCode {
    ipi_core::exit::not_implemented("vrrpd", 3)
}

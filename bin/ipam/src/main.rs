//! `ipam`: IP address management: VIPs, reservations, CNI IPAM.
//!
//! Not built yet (issue #7): it says so and exits with the usage/configuration
//! status, so that nothing mistakes it for a working program.

fn main() -> std::process::ExitCode {
    ipi_core::exit::not_implemented("ipam", 7)
}

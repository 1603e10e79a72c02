//! `mdns-publish`: advertise and discover nodes over multicast DNS.
//!
//! Not built yet (issue #5): it says so and exits with the usage/configuration
//! status, so that nothing mistakes it for a working program.

fn main() -> std::process::ExitCode {
    ipi_core::exit::not_implemented("mdns-publish", 5)
}

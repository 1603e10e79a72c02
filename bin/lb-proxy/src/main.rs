//! `lb-proxy`: the API load balancer (stands in for haproxy).
//!
//! Not built yet (issue #4): it says so and exits with the usage/configuration
//! status, so that nothing mistakes it for a working program.

fn main() -> std::process::ExitCode {
    ipi_core::exit::not_implemented("lb-proxy", 4)
}

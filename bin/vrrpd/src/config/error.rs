//! Configuration errors: every one collected, each with its file and line (ipi-core's).

/// Every problem found in a configuration, in the order found.
pub type ConfigErrors = ipi_core::place::Errors;

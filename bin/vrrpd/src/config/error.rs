//! Configuration errors and warnings: every one collected, each with its file and line
//! (ipi-core's).

/// Every problem found in a configuration, in the order found.
pub type ConfigErrors = ipi_core::place::Errors;

/// What was accepted but does nothing in vrrpd (keepalived's LVS, mail, SNMP, ...), or what
/// keepalived itself only logs (an include that matches nothing), in the order found.
pub type ConfigWarnings = ipi_core::place::Errors;

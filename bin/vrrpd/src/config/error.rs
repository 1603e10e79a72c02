//! Configuration errors and warnings: every one collected, each with its file and line
//! (ipi-core's).

/// Every problem found in a configuration, in the order found.
pub type ConfigErrors = ipi_core::place::Errors;

/// What was accepted but does nothing in vrrpd (keepalived's LVS, mail, SNMP, ...), or what
/// keepalived itself only logs (an include that matches nothing), in the order found.
pub type ConfigWarnings = ipi_core::place::Errors;

/// What giving the statements meaning finds: errors, which refuse the file, and warnings,
/// where vrrpd does as keepalived does with something keepalived itself only warns about
/// (or is silent on): each warning says what keepalived does.
#[derive(Debug, Default)]
pub struct Found {
    /// The errors.
    pub errors: ConfigErrors,
    /// The warnings.
    pub warnings: ConfigWarnings,
}

impl Found {
    /// An error at `location`.
    pub fn push(&mut self, location: &ipi_core::place::Location, message: impl Into<String>) {
        self.errors.push(location, message);
    }

    /// A warning at `location`.
    pub fn warn(&mut self, location: &ipi_core::place::Location, message: impl Into<String>) {
        self.warnings.push(location, message);
    }
}

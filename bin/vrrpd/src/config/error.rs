//! Configuration errors: every one collected, each with its file and line.

use std::fmt;

use super::model::Location;

/// Every problem found in a configuration, in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<(Location, String)>);

impl ConfigErrors {
    /// Records a problem at `location`.
    pub fn push(&mut self, location: &Location, message: impl Into<String>) {
        self.0.push((location.clone(), message.into()));
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (location, message)) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{location}: {message}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

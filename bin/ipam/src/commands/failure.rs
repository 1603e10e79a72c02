//! What a command ends with: a [`Status`], or a [`Failure`] with its status and message.

use std::fmt;

use ipi_core::exit::Status;
use ipi_store::store::StoreError;

/// A command that failed: the status it exits with and the message for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The exit status.
    pub status: Status,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// What a command ends with.
pub type Outcome = Result<Status, Failure>;

/// A failure with `status`.
pub(super) fn failed(status: Status, message: impl ToString) -> Failure {
    Failure {
        status,
        message: message.to_string(),
    }
}

/// A usage or configuration error (2).
pub(super) fn usage(message: impl ToString) -> Failure {
    failed(Status::Usage, message)
}

/// A store that cannot be used: a bad URL or setting is usage (2), the rest unavailable (3).
pub(super) fn store_failed(e: StoreError) -> Failure {
    match e {
        StoreError::Url { .. } | StoreError::Setting { .. } => usage(e),
        _ => failed(Status::Unavailable, e),
    }
}

//! Why a step of a lab scenario could not be taken: the one error type of the cluster, its
//! units and its supervisor.

use ipi_lab::LabError;

use crate::units::UnitError;

/// Why a step could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The lab failed.
    #[error(transparent)]
    Lab(#[from] LabError),
    /// A unit, role or environment file is wrong.
    #[error(transparent)]
    Unit(#[from] UnitError),
    /// A file or process could not be used.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// What a step waited for did not happen; with what the daemons said.
    #[error("{0}")]
    Step(String),
}

impl ClusterError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClusterError {
        let what = what.into();
        move |source| ClusterError::Io { what, source }
    }
}

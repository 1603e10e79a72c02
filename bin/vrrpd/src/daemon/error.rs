//! Why the daemon cannot start.

use std::path::PathBuf;

use super::setup::SetupError;

/// Why the daemon cannot start. Each names what failed and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The state directory cannot be made.
    #[error("state directory {}: {source}", path.display())]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No tokio runtime.
    #[error("cannot start the event loop: {0}")]
    Runtime(std::io::Error),
    /// The ambient capabilities (a unit's `AmbientCapabilities=`) cannot be kept from scripts.
    #[error("cannot clear the ambient capabilities, which every script would get: {0}")]
    Ambient(std::io::Error),
    /// No rtnetlink connection.
    #[error(transparent)]
    Netlink(#[from] crate::net::Error),
    /// The configuration cannot run here.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The metrics endpoint cannot be served.
    #[error("metrics endpoint: {0}")]
    Metrics(std::io::Error),
    /// A tracked interface cannot be watched.
    #[error("track_interface {name}: {source}")]
    TrackInterface {
        /// The interface.
        name: String,
        /// Why.
        source: crate::net::Error,
    },
}

//! Exit statuses: the API that shell scripts, systemd units and keepalived track scripts see.
//!
//! docs/ARCHITECTURE.md, conventions: `0` success or healthy, `1` a check that failed or unhealthy, `2` a
//! usage or configuration error. A program that needs another status documents it in its man
//! page and defines it next to these, so that one table holds them all.

use std::process::ExitCode;

/// How a program ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Status {
    /// The command did what it was asked, or the thing checked is healthy.
    Success = 0,
    /// A check ran and failed, or the thing checked is unhealthy. Not an error of the caller's.
    Failed = 1,
    /// The command line, a configuration file or an input was wrong: nothing was done.
    Usage = 2,
    /// Something the command needs (ipam's store: etcd out of reach, a corrupt directory, a
    /// disk that refuses) could not be used: nothing was done, and trying again later may work.
    Unavailable = 3,
}

impl Status {
    /// The numeric status as the process reports it.
    pub const fn code(self) -> u8 {
        self as u8
    }
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        ExitCode::from(status.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(Status::Success.code(), 0);
        assert_eq!(Status::Failed.code(), 1);
        assert_eq!(Status::Usage.code(), 2);
        assert_eq!(Status::Unavailable.code(), 3);
    }
}

//! What a node does in the cluster: the one role type every program and test uses.
//!
//! With the `clap` feature it is also a command-line value (`--role master`), so a program's
//! `cli` needs no role type of its own.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a node does in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Role {
    /// The temporary node that holds the API until the control plane is up.
    Bootstrap,
    /// A control-plane node (`master` or `control-plane` in Kubernetes labels).
    #[serde(alias = "control-plane")]
    #[cfg_attr(feature = "clap", value(alias = "control-plane"))]
    Master,
    /// A compute node; runs the Ingress routers.
    Worker,
}

impl Role {
    /// The role's name as our formats write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Bootstrap => "bootstrap",
            Role::Master => "master",
            Role::Worker => "worker",
        }
    }

    /// The role a name stands for; `control-plane` is the newer name of `master`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "bootstrap" => Some(Role::Bootstrap),
            "master" | "control-plane" => Some(Role::Master),
            "worker" => Some(Role::Worker),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

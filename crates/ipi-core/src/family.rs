//! IP address families: a leaf that the cluster model, the VIP rules and the programs share.

use std::net::IpAddr;

/// An IP address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl Family {
    /// The family of an address.
    pub fn of(address: IpAddr) -> Self {
        if address.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        }
    }
}

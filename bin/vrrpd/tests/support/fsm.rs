//! Helpers the virtual-clock FSM tests share: addresses, instants and VRRPv3 instances.
//! Each test binary uses a few of them (`#[path]`-included with `#[allow(dead_code)]`).

use std::net::{IpAddr, Ipv4Addr};

use vrrpd::fsm::{Instance, InstanceParams, Instant, Version};

/// `192.0.2.{last}`.
pub fn addr(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
}

/// `t` milliseconds on the virtual clock.
pub fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// VRRPv3 with a 1 s interval on `vrid`, with `priority`, from `192.0.2.{last}`.
pub fn v3_on(vrid: u8, priority: u8, last: u8) -> InstanceParams {
    let mut p = InstanceParams::new(vrid, priority, addr(last));
    p.version = Version::V3;
    p
}

/// The instance `p` describes; panics when it is refused.
pub fn router(p: InstanceParams) -> Instance {
    Instance::new(p).unwrap()
}

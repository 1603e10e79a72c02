//! Scenarios shared by the cross-program tests and the demos: each runs real programs in the
//! network-namespace lab ([`ipi_lab`]) and reports what happened, so that a test can assert it
//! and a demo can print it.
//!
//! - [`vrrp`]: a VRRP group's keepalived.conf, started under keepalived or vrrpd.
//! - [`failover`]: two routers, the master cut off, the backup takes over, the link heals.

pub mod failover;
pub mod vrrp;

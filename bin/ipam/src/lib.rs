//! ipam: IP address management for an on-prem cluster.
//!
//! - [`cli`]: the command line (and so the man pages); [`commands`]: one function per
//!   subcommand.
//! - [`vip`]: VIP suggestion (validation is ipi-core's rules).
//! - [`alloc`]: the allocator: reserve, share, release, never an address twice;
//!   [`answered`]: the same, moving past addresses another host answers for on the wire.
//! - [`netconfig`]: NetConfig networks and IPSet requests (network.openstack.org).
//! - [`cni`]: the CNI IPAM plugin.
//!
//! Where reservations live (a locked directory, or etcd), address arithmetic and the MetalLB
//! readers are the `ipi_store` crate's, shared with vrrpd's pool mode.

pub mod alloc;
pub mod answered;
pub mod cli;
pub mod cni;
pub mod commands;
pub mod netconfig;
pub mod vip;

//! ipam: IP address management for an on-prem cluster.
//!
//! - [`cli`]: the command line (and so the man pages); [`commands`]: one function per
//!   subcommand.
//! - [`vip`]: VIP suggestion (validation is ipi-core's rules).
//! - [`range`]: address arithmetic and the [`range::Space`] a pool hands addresses out from.
//! - [`alloc`]: the allocator: reserve, share, release, never an address twice;
//!   [`answered`]: the same, moving past addresses another host answers for on the wire.
//! - [`netconfig`]: NetConfig networks and IPSet requests (network.openstack.org).
//! - [`pool`]: MetalLB IPAddressPools and sharing keys; [`l2adv`]: L2Advertisements.
//! - [`cni`]: the CNI IPAM plugin.
//! - [`store`]: where reservations live: a locked directory, or etcd.

pub mod alloc;
pub mod answered;
pub mod cli;
pub mod cni;
pub mod commands;
pub mod l2adv;
pub mod netconfig;
pub mod pool;
pub mod range;
pub mod store;
pub mod vip;

//! ipam: IP address management for an on-prem cluster.
//!
//! - [`cli`]: the command line (and so the man pages).
//! - [`vip`]: VIP suggestion (validation is ipi-core's rules).
//!
//! Built so far (issue #7): `ipam vip validate` and `ipam vip suggest`. Reservations
//! (NetConfig / IPSet), pools, the CNI plugin and the stores are not built yet.

pub mod cli;
pub mod vip;

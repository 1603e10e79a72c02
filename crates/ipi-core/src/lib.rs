//! ipi-core: what the ipi-net programs share.
//!
//! - [`cluster`]: the cluster model read from `install-config.yaml`.
//! - [`inventory`]: the node inventory (from `kubectl get nodes -o json` or our own format);
//!   [`role`]: what a node does; [`family`]: IPv4 or IPv6.
//! - [`vip`]: the installer's VIP rules, and ours on top.
//! - [`vrid`]: VRRP router ids derived from the cluster name, as OpenShift does.
//! - [`vrrp`]: the VRRP advertisement codec and timers.
//! - [`acd`]: address conflict detection on the wire (RFC 5227 ARP probes, RFC 4862 DAD),
//!   and the Ethernet frames that announce an address.
//! - [`atomic`]: atomic, change-aware file writes, and reading a file that must be a regular one.
//! - [`secret`]: passwords kept out of logs and compared in constant time.
//! - [`duration`]: durations on the command line.
//! - [`exit`]: exit statuses; [`service`]: logging, systemd notification and the async runtime
//!   for the programs.
//! - [`field`]: installer-style field errors; [`name`]: DNS name rules.

#![warn(missing_docs)]

pub mod acd;
pub mod atomic;
pub mod capture;
pub mod cluster;
pub mod duration;
pub mod exit;
pub mod family;
pub mod field;
pub mod inventory;
pub mod name;
pub mod place;
pub mod role;
pub mod secret;
pub mod service;
pub mod vip;
pub mod vrid;
pub mod vrrp;

pub use cluster::{Cluster, ClusterError, Platform};
pub use family::Family;
pub use inventory::{Inventory, InventoryError, Node};
pub use role::Role;

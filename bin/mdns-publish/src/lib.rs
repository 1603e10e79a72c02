//! mdns-publish: advertise a node over multicast DNS (RFC 6762 / 6763) and browse the others
//! into a node inventory.
//!
//! - [`cli`]: the command line (and so the man pages); [`commands`]: one function per
//!   subcommand.
//! - [`config`]: mdns-publisher's config file, and what OpenShift publishes for a node.
//! - [`records`]: the records a node publishes; [`key`]: the cluster key that signs them.
//! - [`responder`]: the responder as plain data (probing, announcing, answering, conflicts).
//! - [`browse`]: what answers say, as an inventory; [`lookup`]: browsing on the wire.
//! - [`link`]: what may come in from the link; [`net`]: sockets and interfaces;
//!   [`publish`]: `run` on the wire.

pub mod browse;
pub mod cli;
pub mod commands;
pub mod config;
pub mod key;
pub mod link;
pub mod lookup;
pub mod net;
pub mod publish;
pub mod records;
pub mod responder;
pub mod tally;
pub mod watch;

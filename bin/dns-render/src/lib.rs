//! dns-render: the cluster's DNS (CoreDNS, dnsmasq, hosts, resolv.conf) from the cluster model
//! and the node inventory.
//!
//! - [`cli`]: the command line (and so the man pages); [`commands`]: the subcommands, as
//!   [`job`]s.
//! - [`render`]: the model the templates see, and the built-in minijinja templates.
//! - [`resolv`]: upstream servers from resolv.conf, and the resolv-prepender.
//! - [`dnsdata`]: the infra-operator's DNSData as a hosts file.
//! - [`job`]: one run: everything rendered first, then written atomically; or a watch.
//! - [`reload`]: SIGHUP to a server (dnsmasq) through its pid file once its files changed.

pub mod cli;
pub mod commands;
pub mod dnsdata;
pub mod job;
pub mod reload;
pub mod render;
pub mod resolv;

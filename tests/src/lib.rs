//! Scenarios shared by the cross-program tests and the demos: each runs real programs in the
//! network-namespace lab ([`ipi_lab`]) and reports what happened, so that a test can assert it
//! and a demo can print it.
//!
//! - [`vrrp`]: a VRRP group's keepalived.conf, started under keepalived or vrrpd.
//! - [`failover`]: two routers, the master cut off, the backup takes over, the link heals.
//! - [`cluster`]: the cluster in a box (a bootstrap node, three masters, two workers, started
//!   through the contrib units read by [`units`]), its VIPs, DNS and failovers. Its nodes' units
//!   run under `supervisor` (systemd's part, as far as the lab needs it); what its clients ask
//!   (dig, an HTTP GET) is in `probe`.
//! - [`pool`]: vrrpd's pool mode: nodes holding a MetalLB pool's reserved addresses, the
//!   store on files or etcd.
//! - [`rfc`]: the VRRP timers as the RFCs write them, for expected times.
//! - [`nspawn`]: the same cluster under a real systemd: a Debian root (mmdebstrap) with our
//!   `.deb` packages, one `systemd-nspawn` container per node in its lab host's namespace.

pub mod chaos;
pub mod cluster;
mod error;
pub mod failover;
pub mod nspawn;
pub mod pool;
mod probe;
pub mod restart;
pub mod rfc;
mod supervisor;
pub mod units;
pub mod upstream;
pub mod vrrp;

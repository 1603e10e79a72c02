//! vrrpd: a VRRP router (RFC 3768 v2, RFC 5798 v3) that can stand in for keepalived.
//!
//! - [`cli`]: the command line (and so the man page); [`commands`]: one function per subcommand.
//! - [`config`]: keepalived.conf, read with file:line errors.
//! - [`fsm`]: the protocol as a sans-IO state machine, tested with a virtual clock.
//! - [`net`]: the Linux network IO: VRRP sockets, VIPs, gratuitous ARP / NA, link state.
//! - [`watch`]: adverts on the wire or in a capture, decoded for people and scripts.
//! - [`pool`]: the pool mode: a MetalLB pool's reserved addresses, spread over the nodes.
//! - [`survey`]: the VRIDs in use on a link, and a free API/Ingress pair for a cluster name.

pub mod cli;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod fsm;
pub mod net;
pub mod pool;
pub mod survey;
pub mod watch;

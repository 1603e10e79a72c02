//! The network IO primitives of vrrpd on Linux: a thin async (tokio) layer between the sans-IO
//! [`crate::fsm`] and the kernel. Nothing here decides anything about VRRP; it opens, sends,
//! receives, adds, removes and watches, and says precisely what failed where.
//!
//! - [`vrrp_socket`]: raw IP protocol 112 sockets, one per family and interface, with the TTL /
//!   hop limit, multicast membership, source address and receive metadata VRRP needs.
//! - [`address`]: interfaces and their addresses over rtnetlink; adding and removing VIPs,
//!   idempotently.
//! - [`announce`]: gratuitous ARP and unsolicited neighbour advertisements for VIPs.
//! - [`link`]: an interface's up/down state as a stream, for `track_interface`.
//! - [`route`]: routes held with an instance's state (`virtual_routes`), idempotently.
//! - [`vmac`]: keepalived's `use_vmac` macvlans, made, set up and deleted.
//!
//! Everything that talks to the kernel runs in the network namespace of the thread that calls
//! it (sockets belong to the namespace they were created in), and the rtnetlink parts spawn
//! their connection onto the current tokio runtime, so they must be called inside one.

pub mod address;
pub mod announce;
mod error;
pub mod link;
pub mod route;
pub mod vmac;
pub mod vrrp_socket;

pub use address::{AddressFlags, Interface, InterfaceAddress, Netlink, Outcome, Vip};
pub use announce::Announcer;
pub use error::Error;
pub use link::{AddressWatcher, LinkState, LinkWatcher};
pub use route::{Route, Rule};
pub use vmac::VmacSpec;
pub use vrrp_socket::{multicast_group, Received, SocketConfig, VrrpSocket};

//! ipi-store: the address store and the address formats that more than one program reads
//! (ipam reserves in the store, vrrpd's pool mode follows it), so that each has one reader.
//!
//! - [`store`]: where reservations live: a locked directory, or etcd; followed as they change.
//! - [`range`]: address arithmetic, the [`range::Space`] a pool hands addresses out from, and
//!   the [`range::Pool`] it is in the store.
//! - [`pool`]: MetalLB IPAddressPools; [`l2adv`]: L2Advertisements.
//! - [`object`]: Kubernetes objects as read from a file, and the [`object::Problems`] of one.

pub mod l2adv;
pub mod object;
pub mod pool;
pub mod range;
pub mod store;

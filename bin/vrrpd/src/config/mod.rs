//! keepalived.conf: the model vrrpd runs ([`model`]), read with file:line errors.

pub mod model;

pub use model::{
    Command, Config, GlobalDefs, Location, Notify, SyncGroup, TrackedInterface, TrackedScript,
    User, VirtualAddress, VrrpInstance, VrrpScript,
};

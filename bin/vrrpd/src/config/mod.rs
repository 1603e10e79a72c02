//! keepalived.conf: the model vrrpd runs ([`model`]), read with file:line errors.
//!
//! [`lexer`] reads the lines as keepalived does (words, quotes, comments, braces anywhere,
//! includes, `$` definitions, `@` conditional lines), [`tree`] makes blocks of them,
//! [`ignored`] sets aside (with a warning) what keepalived knows but vrrpd has no part in,
//! [`parse`] gives the rest meaning, [`checks`] looks across blocks, [`write`] writes a model back as keepalived.conf,
//! [`openshift`] builds the model OpenShift runs on a node from the cluster, and [`source`] says
//! which of the two `run` and `render` use. Every problem is collected, none stops the reading,
//! so one run of `vrrpd check-config` lists them all.

pub mod checks;
pub mod error;
mod glob;
pub mod ignored;
mod known;
pub mod lexer;
mod load;
pub mod model;
pub mod openshift;
pub mod parse;
mod route;
pub mod source;
pub mod tree;
pub mod write;

pub use error::{ConfigErrors, ConfigWarnings};
pub use lexer::LexOptions;
pub use load::{load, load_as, parse_str, read, read_str, Read};
pub use model::{
    Command, Config, FileInit, GlobalDefs, Location, Notify, NotifyFifo, ParamMatch, RouteType,
    Service, SyncGroup, TrackFile, TrackProcess, TrackedFile, TrackedInterface, TrackedProcess,
    TrackedScript, User, VirtualAddress, VirtualRoute, VirtualRule, Vmac, VrrpInstance, VrrpScript,
};
pub use source::{load_source, Source, SourceError};

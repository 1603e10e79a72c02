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
pub mod model;
pub mod openshift;
pub mod parse;
mod route;
pub mod source;
pub mod tree;
pub mod write;

use std::path::Path;

pub use error::{ConfigErrors, ConfigWarnings};
pub use lexer::LexOptions;
pub use model::{
    Command, Config, FileInit, GlobalDefs, Location, Notify, NotifyFifo, ParamMatch, RouteType,
    Service, SyncGroup, TrackFile, TrackProcess, TrackedFile, TrackedInterface, TrackedProcess,
    TrackedScript, User, VirtualAddress, VirtualRoute, VirtualRule, Vmac, VrrpInstance, VrrpScript,
};
pub use source::{load_source, Source, SourceError};

/// A configuration read, with its warnings: what was accepted without effect in vrrpd.
#[derive(Debug, Clone)]
pub struct Read {
    /// The configuration, or every error.
    pub config: Result<Config, ConfigErrors>,
    /// Every warning, errors or not.
    pub warnings: ConfigWarnings,
}

/// Reads a configuration from `text`; `origin` names it in errors and anchors includes.
pub fn read_str(text: &str, origin: &str, options: &LexOptions) -> Read {
    let mut found = error::Found::default();
    let nodes = tree::parse(
        text,
        origin,
        options,
        &mut found.errors,
        &mut found.warnings,
    );
    let nodes = ignored::set_aside(nodes, &mut found.warnings);
    let config = parse::config(&nodes, &mut found);
    checks::check(&config, &mut found.errors);
    Read {
        config: found.errors.into_result(config),
        warnings: found.warnings,
    }
}

/// Reads a configuration file (`-`: standard input).
pub fn read(path: &Path, options: &LexOptions) -> Read {
    match ipi_core::place::read(path) {
        Ok(text) => read_str(&text, &path.display().to_string(), options),
        Err(errors) => Read {
            config: Err(errors),
            warnings: ConfigWarnings::default(),
        },
    }
}

/// Reads a configuration from `text` with keepalived's default options (the host name as the
/// configuration id); the warnings are logged.
pub fn parse_str(text: &str, origin: &str) -> Result<Config, ConfigErrors> {
    logged(read_str(text, origin, &LexOptions::default()))
}

/// Reads a configuration file (`-`: standard input) as [`parse_str`].
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    load_as(path, &LexOptions::default())
}

/// Reads a configuration file (`-`: standard input) with these options; the warnings are
/// logged.
pub fn load_as(path: &Path, options: &LexOptions) -> Result<Config, ConfigErrors> {
    logged(read(path, options))
}

fn logged(read: Read) -> Result<Config, ConfigErrors> {
    for (location, message) in &read.warnings.0 {
        tracing::warn!("{location}: {message}");
    }
    read.config
}

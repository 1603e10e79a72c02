//! keepalived.conf: the model vrrpd runs ([`model`]), read with file:line errors.
//!
//! [`tree`] reads the syntax (words, quotes, comments, blocks, includes), [`parse`] gives it
//! meaning, [`checks`] looks across blocks. Every problem is collected, none stops the reading,
//! so one run of `vrrpd check-config` lists them all.

pub mod checks;
pub mod error;
pub mod model;
pub mod parse;
pub mod tree;

use std::io::Read;
use std::path::Path;

pub use error::ConfigErrors;
pub use model::{
    Command, Config, GlobalDefs, Location, Notify, SyncGroup, TrackedInterface, TrackedScript,
    User, VirtualAddress, VrrpInstance, VrrpScript,
};

/// Reads a configuration from `text`; `origin` names it in errors and anchors includes.
pub fn parse_str(text: &str, origin: &str) -> Result<Config, ConfigErrors> {
    let mut errors = ConfigErrors::default();
    let nodes = tree::parse(text, origin, &mut errors);
    let config = parse::config(&nodes, &mut errors);
    checks::check(&config, &mut errors);
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

/// Reads a configuration file (`-`: standard input).
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    let origin = path.display().to_string();
    let text = if origin == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map(|_| text)
    } else {
        std::fs::read_to_string(path)
    };
    match text {
        Ok(text) => parse_str(&text, &origin),
        Err(e) => Err(ConfigErrors(vec![(
            Location {
                file: origin,
                line: 0,
            },
            format!("cannot read it: {e}"),
        )])),
    }
}

//! Reading a configuration: lexed, made into blocks, set aside, given meaning and checked, every
//! problem collected.

use std::path::Path;

use super::error::{self, ConfigErrors, ConfigWarnings};
use super::lexer::LexOptions;
use super::model::Config;
use super::{checks, ignored, parse, tree};

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

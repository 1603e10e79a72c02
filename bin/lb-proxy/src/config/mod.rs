//! haproxy.cfg: the model lb-proxy runs ([`model`]), read by [`parse`] with every error at its
//! file and line, then checked across sections.

pub mod model;
pub mod parse;

use std::path::Path;

pub use ipi_core::place::{Errors, Location};
pub use model::{Config, Kind, Mode, Proxy, Server};

/// Reads haproxy.cfg text; `origin` names it in errors.
pub fn parse_str(text: &str, origin: &str) -> Result<Config, Errors> {
    let mut errors = Errors::default();
    let config = parse::config(text, origin, &mut errors);
    check(&config, &mut errors);
    errors.into_result(config)
}

/// Reads a haproxy.cfg file (`-`: standard input).
pub fn load(path: &Path) -> Result<Config, Errors> {
    let text = ipi_core::place::read(path)?;
    parse_str(&text, &path.display().to_string())
}

/// What no single section can know: references between sections, and what lb-proxy does not do.
fn check(c: &Config, errors: &mut Errors) {
    for p in &c.proxies {
        let at = &p.location;
        let backend_named = |name: &str| c.proxy(name).is_some_and(|b| b.kind != Kind::Frontend);
        if let Some(b) = &p.default_backend {
            if !backend_named(b) {
                errors.push(
                    at,
                    format!("{}: default_backend `{b}` names no backend", p.name),
                );
            }
        }
        if let Some(m) = &p.monitor_fail {
            if !backend_named(&m.backend) {
                errors.push(
                    at,
                    format!(
                        "{}: monitor fail counts `{}`, which names no backend",
                        p.name, m.backend
                    ),
                );
            }
        }
        if p.kind != Kind::Backend && p.binds.is_empty() {
            errors.push(
                at,
                format!(
                    "{}: a {} needs a `bind`",
                    p.name,
                    if p.kind == Kind::Frontend {
                        "frontend"
                    } else {
                        "listen section"
                    }
                ),
            );
        }
        let forwards = p.default_backend.is_some() || !p.servers.is_empty();
        if p.mode == Mode::Http && forwards {
            errors.push(
                at,
                format!(
                    "{}: lb-proxy forwards TCP only: `mode http` is for monitor-uri and stats",
                    p.name
                ),
            );
        }
        if p.mode == Mode::Tcp && (p.monitor_uri.is_some() || p.stats.enabled) {
            errors.push(
                at,
                format!("{}: monitor-uri and stats need `mode http`", p.name),
            );
        }
        for s in &p.servers {
            if s.check_ssl && !s.verify_none {
                errors.push(&s.location, format!("server {}: check-ssl needs `verify none` (lb-proxy does not verify certificates of health checks)", s.name));
            }
        }
    }
}

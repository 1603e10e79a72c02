//! lb-proxy: the API load balancer of an on-prem cluster (stands in for haproxy).
//!
//! - [`cli`]: the command line (and so the man pages).
//! - [`config`]: haproxy.cfg, read with file:line errors.
//!
//! Built so far (issue #4): the configuration reader, `check-config` and `render`. The proxy
//! itself, health checks and `check` are not built yet and say so.

pub mod cli;
pub mod config;

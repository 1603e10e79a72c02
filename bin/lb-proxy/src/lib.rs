//! lb-proxy: the API load balancer of an on-prem cluster (stands in for haproxy).
//!
//! - [`cli`]: the command line (and so the man pages); [`commands`]: one function per
//!   subcommand, turning the command line into the library's types.
//! - [`config`]: haproxy.cfg, read with file:line errors; what OpenShift runs.
//! - [`daemon`]: `run`: listeners, sessions, checks, monitor and stats, the VIP redirect.
//! - [`forward`]: moving bytes (splice(2), or a buffer) with haproxy's timeouts.
//! - [`balance`]: round robin with dynamic weights and slow start.
//! - [`health`]: haproxy's health counters and the probes.
//! - [`http`]: the small HTTP(S) client of the checks and of `lb-proxy check`.
//! - [`tcpcheck`]: haproxy's `tcp-check` rules and `http-check expect` verdicts.

pub mod balance;
pub mod cli;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod fds;
pub mod forward;
pub mod health;
pub mod hello;
pub mod http;
pub mod tcpcheck;

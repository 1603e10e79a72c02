//! `vrrpd survey`: listen, list the VRIDs in use, judge a cluster name's pair.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use ipi_core::exit::Status;

use crate::survey::{self, Survey};

/// Where a survey listens.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// An interface, for a while.
    Interface(&'a str, Duration),
    /// A capture file.
    Pcap(&'a Path),
}

impl<'a> Source<'a> {
    /// The capture file if given, else the interface (clap requires one of them); neither is
    /// an empty interface name, which cannot be listened on.
    pub fn of(interface: Option<&'a str>, pcap: Option<&'a Path>, listen_for: Duration) -> Self {
        match (pcap, interface) {
            (Some(path), _) => Source::Pcap(path),
            (None, interface) => Source::Interface(interface.unwrap_or(""), listen_for),
        }
    }
}

/// `vrrpd survey (--interface IF [--for DURATION] | --pcap FILE) [--cluster-name NAME]
/// [--json]`: 0 when the survey ran and (given a name) its pair is free, 1 when the pair is
/// taken or the interface cannot be listened on, 2 for a name that is not a DNS label.
pub fn survey(source: Source<'_>, cluster_name: Option<&str>, json: bool) -> ExitCode {
    if let Some(name) = cluster_name {
        if let Err(e) = ipi_core::name::check_label(name) {
            eprintln!("vrrpd survey: --cluster-name {name:?}: {e}");
            return Status::Usage.into();
        }
    }
    let heard = match listen(source) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("vrrpd survey: {e}");
            return Status::Failed.into();
        }
    };
    let verdict = cluster_name.map(|name| survey::verdict(name, &heard));
    if json {
        println!("{}", survey::to_json(&heard, verdict.as_ref()));
    } else {
        print!("{}", survey::to_text(&heard, verdict.as_ref()));
    }
    match verdict {
        Some(v) if !v.free() => Status::Failed.into(),
        _ => Status::Success.into(),
    }
}

fn listen(source: Source<'_>) -> anyhow::Result<Survey> {
    use anyhow::Context as _;
    match source {
        Source::Pcap(path) => Ok(survey::read_capture(path)?),
        Source::Interface(interface, listen_for) => {
            let runtime = ipi_core::service::runtime().context("cannot start the event loop")?;
            let s = runtime.block_on(survey::listen(interface, listen_for));
            s.with_context(|| format!("interface {interface}"))
        }
    }
}

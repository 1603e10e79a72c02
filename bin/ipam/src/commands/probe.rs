//! `--probe IF`: the commands' side of asking the wire (`ipi_core::acd`): probing, saying on
//! stderr what answered, and the installer-style problem of a VIP that is in use.

use std::net::IpAddr;
use std::time::Duration;

use ipi_core::acd::{self, Mac};
use ipi_core::field::{FieldError, FieldErrors, FieldPath};
use ipi_core::{Cluster, ClusterError};

use super::failure::{failed, usage, Failure};
use crate::cli::ProbeArgs;
use ipi_core::exit::Status;

/// A probe that could not be made: 2 when the interface is wrong, 3 when the socket failed
/// (no CAP_NET_RAW, say).
pub(super) fn probe_failed(e: acd::Error) -> Failure {
    match e {
        acd::Error::NoSuchInterface(_) | acd::Error::NoMac(_) => usage(e),
        acd::Error::Io { .. } => failed(Status::Unavailable, e),
    }
}

/// Probes `addresses` at once on the `--probe` interface (none without one): those answered,
/// with the answering MAC, each said on stderr.
pub(super) fn answered(
    args: &ProbeArgs,
    addresses: &[IpAddr],
) -> Result<Vec<(IpAddr, Mac)>, acd::Error> {
    let Some(interface) = &args.probe else {
        return Ok(Vec::new());
    };
    let report = acd::probe_addresses(interface, addresses, args.probe_timing, Duration::ZERO)?;
    let out: Vec<(IpAddr, Mac)> = report.answered().map(|(ip, mac, _)| (ip, mac)).collect();
    for (ip, mac) in &out {
        eprintln!(
            "ipam: {ip} is in use on {interface}: answered by {}",
            acd::mac_string(*mac)
        );
    }
    Ok(out)
}

/// One address at a time, for the allocator ([`crate::answered::Check`]).
pub(super) fn check(
    args: &ProbeArgs,
) -> impl FnMut(IpAddr) -> Result<Option<Mac>, acd::Error> + '_ {
    move |ip| Ok(answered(args, &[ip])?.first().map(|(_, mac)| *mac))
}

/// The VIPs of `cluster` that the wire answers for, as the installer's field errors
/// (`platform.baremetal.apiVIPs[0]: Invalid value: "192.0.2.5": IP address already in use
/// ...`), from the file `origin`.
pub(super) fn vips_in_use(args: &ProbeArgs, cluster: &Cluster, origin: &str) -> Outcome {
    let Some(interface) = &args.probe else {
        return Ok(());
    };
    let all: Vec<IpAddr> = cluster
        .api_vips
        .iter()
        .chain(&cluster.ingress_vips)
        .copied()
        .collect();
    let taken = answered(args, &all).map_err(probe_failed)?;
    let platform = FieldPath::new("platform").child(cluster.platform.key());
    let mut errors = FieldErrors::default();
    for (field, vips) in [
        ("apiVIPs", &cluster.api_vips),
        ("ingressVIPs", &cluster.ingress_vips),
    ] {
        for (i, vip) in vips.iter().enumerate() {
            if let Some((_, mac)) = taken.iter().find(|(ip, _)| ip == vip) {
                errors.push(FieldError::invalid(
                    platform.child(field).index(i),
                    vip,
                    format!(
                        "IP address already in use: answered on {interface} by {}",
                        acd::mac_string(*mac)
                    ),
                ));
            }
        }
    }
    errors.into_result(()).map_err(|errors| {
        failed(
            Status::Failed,
            ClusterError::Invalid {
                origin: origin.to_owned(),
                errors,
            },
        )
    })
}

type Outcome = Result<(), Failure>;

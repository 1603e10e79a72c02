//! The cluster's layout: its nodes and roles, VIPs, timers and ports, and the options a run
//! takes (which stack, where the programs are).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ipi_core::Role;

use crate::error::ClusterError;

/// The API VIP of the lab cluster.
pub const API_VIP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 100);
/// The Ingress VIP of the lab cluster.
pub const INGRESS_VIP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 101);
/// The cluster's domain: `metadata.name` and `baseDomain` of [`ipi_lab::install_config`].
pub const DOMAIN: &str = "lab.example.com";
/// The hosts, in the order the lab numbers them (192.0.2.1 is the bootstrap node).
pub const LAYOUT: [(&str, Role); 6] = [
    ("bootstrap", Role::Bootstrap),
    ("master-0", Role::Master),
    ("master-1", Role::Master),
    ("master-2", Role::Master),
    ("worker-0", Role::Worker),
    ("worker-1", Role::Worker),
];

/// OpenShift's advert_int (1 s), in centiseconds.
pub const ADVERT_CS: u16 = 100;
/// A master's API priority with every track script passing (vrrpd's OpenShift render: 40 +
/// chk_ocp_lb 20 + chk_ocp_both 5).
pub const MASTER_API: u8 = 65;
/// A worker's Ingress priority with its router up (20 + chk_ingress 50).
pub const WORKER_INGRESS: u8 = 70;
/// chk_ingress's interval (1 s) and fall (1), in centiseconds: a stopped router is seen within
/// one interval.
pub const CHK_INGRESS_CS: u16 = 100;

/// The client's host name: the host after the nodes (192.0.2.7), running nothing of ours.
pub const CLIENT: &str = "client";
/// The API port, through the API VIP.
pub const API_PORT: u16 = 6443;

/// How long a step waits at most for a VIP to move, or for the client to be served through it
/// again: the Master_Down_Interval (3.7 s) and the track scripts' intervals many times over on
/// a loaded machine, so that a slow move is measured and reported rather than cut short (the
/// smoke test judges the times against the VRRP timers).
pub(super) const MOVE_LIMIT: Duration = Duration::from_secs(60);
/// How often conditions are polled while a move is timed.
pub(super) const POLL: Duration = Duration::from_millis(10);
/// The interval of the emulated path units.
pub(super) const PATH_POLL: Duration = Duration::from_millis(100);

/// Which daemons hold the VIPs and balance the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stack {
    /// Ours: ipi-vrrpd.service and ipi-lb-proxy.service (contrib/systemd).
    #[default]
    Ours,
    /// keepalived.service and haproxy.service (with haproxy-monitor.service, which redirects
    /// VIP:6443 to haproxy) in their place, from [`upstream::dir`], their configurations
    /// rendered by `vrrpd render` and `lb-proxy render` from the same inputs.
    Upstream,
}

/// Where the programs and the units come from.
#[derive(Debug, Clone)]
pub struct Options {
    /// The directory of the freshly built vrrpd, lb-proxy, mdns-publish, dns-render.
    pub bin_dir: PathBuf,
    /// The contrib directory (`systemd/`, `roles/`, `keepalived/`).
    pub contrib: PathBuf,
    /// Which daemons hold the VIPs and balance the API.
    pub stack: Stack,
}

impl Options {
    /// The programs beside this executable (`target/PROFILE/`, also from `deps/` for a test),
    /// and this source tree's contrib.
    pub fn beside_current_exe() -> Result<Options, ClusterError> {
        let exe = std::env::current_exe().map_err(ClusterError::io("find this executable"))?;
        let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
        if dir.ends_with("deps") {
            dir.pop();
        }
        Ok(Options {
            bin_dir: dir,
            contrib: Path::new(env!("CARGO_MANIFEST_DIR")).join("../contrib"),
            stack: Stack::Ours,
        })
    }
}

/// Builds the programs the units run in the profile of `options.bin_dir` (a no-op when they
/// are fresh, as after a workspace build).
pub fn build_programs(options: &Options) -> Result<(), ClusterError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.args(["build", "--quiet", "--bins"])
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"));
    for p in ["vrrpd", "lb-proxy", "mdns-publish", "dns-render"] {
        c.args(["-p", p]);
    }
    if options.bin_dir.ends_with("release") {
        c.arg("--release");
    }
    let status = c.status().map_err(ClusterError::io("run cargo build"))?;
    if status.success() {
        Ok(())
    } else {
        Err(ClusterError::Step(format!(
            "building the programs failed: {status}"
        )))
    }
}

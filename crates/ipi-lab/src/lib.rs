//! The network-namespace lab: throwaway hosts on a private bridge, for every network test of
//! ipi-net and for the demos.
//!
//! A [`Lab`] owns one Linux bridge living in a network namespace of its own, and [`Host`]s:
//! network namespaces whose `eth0` is one end of a veth pair plugged into that bridge. Nothing
//! touches the namespace the tests run in. Hosts get documentation addresses (192.0.2.0/24 and
//! 2001:db8::/64 unless told otherwise), a multicast route, and IPv6 without duplicate address
//! detection, so that they are usable at once.
//!
//! - [`Lab::host`] adds a host; [`Host::run`] runs a command in it, [`Host::spawn`] starts a
//!   [`Daemon`] whose output goes to files; [`Lab::partition`] / [`Lab::heal`] take a host off
//!   the bridge with its carrier up (a split brain), [`Lab::link_down`] / [`Lab::link_up`] drop
//!   its carrier. [`Lab::container`] adds a namespace with nothing but `lo` for a CNI plugin
//!   to plug a container's interface into.
//! - [`Host::mac`] and [`Host::neighbour`] say what a host's ARP/NDP cache sends an address
//!   to (whether a VIP's move reached a client).
//! - [`Host::capture`] / [`Lab::capture`] record packets with tcpdump into a pcap file.
//! - [`wait_for`] polls a condition against a deadline; [`tshark_fields`] reads a capture back
//!   through tshark; [`install_config`] writes a lab cluster's install-config.yaml.
//!
//! Everything is torn down when the lab is dropped, also when a test panics; namespaces left by
//! a process that died (kill -9) are swept by the next [`Lab::new`]. Names carry the process id
//! and a counter, so labs in parallel tests never collide.
//!
//! [`mounts::MountNamespace`] gives a host its own view of chosen paths (tmpfs or bind mounts of
//! lab directories) for programs with fixed paths. [`avahi::Avahi`] runs the real avahi-daemon
//! on a host. [`api::ApiServer`] stands in for a Kubernetes API server (HTTPS `/readyz`), in a
//! host or on loopback; [`router::Router`] for an OpenShift router (`:1936/healthz`).
//! [`man::check`] keeps every program's man pages in step with its command line,
//! [`completions::check`] its shell completions.
//!
//! Tests call [`available`] first: without CAP_NET_ADMIN they are skipped with a message, except
//! under CI ([`in_ci`]: `CI` set to any true value), where a lab that cannot be built is a
//! failure; [`tool`] and [`cannot_run`] do the same for a missing program.

pub mod api;
pub mod avahi;
mod cmd;
pub mod completions;
pub mod corpus;
mod daemon;
pub mod etcd;
mod lab;
pub mod man;
pub mod mounts;
pub mod pki;
pub mod router;
mod wait;

pub use cmd::{LabError, Output};
pub use daemon::{Capture, Daemon, Usage};
pub use lab::{teardown_all, Host, Lab, Neighbour, Traffic};
pub use wait::wait_for;

/// CAP_NET_ADMIN's bit in the capability sets (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;

/// Whether this process can build labs. Without CAP_NET_ADMIN it prints why the caller is
/// skipped and returns false; under CI ([`in_ci`]) it panics instead, so CI never passes by
/// skipping.
pub fn available() -> bool {
    has_net_admin()
        || cannot_run("the lab needs CAP_NET_ADMIN to build network namespaces (run as root)")
}

/// Whether this is a CI run: `CI` set to anything but empty, `0`, `false`, `no` or `off` (CI
/// services set `true`, some `1`; `.ci/run` sets it itself).
pub fn in_ci() -> bool {
    ci_says(std::env::var("CI").ok().as_deref())
}

/// Whether a value of `CI` (None: unset) says this is a CI run.
fn ci_says(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "false" | "no" | "off"
        )
    })
}

/// Whether a test of generated files (man pages, completions) should write them instead of
/// comparing: `variable` set, and not under CI. Under CI they are always compared, so that a
/// variable left in the environment cannot turn the check into a write that passes.
pub fn updating(variable: &str) -> bool {
    std::env::var_os(variable).is_some() && !in_ci()
}

/// A test cannot run, for `reason` (a tool missing, no privileges): under CI that fails the
/// test, elsewhere it prints `skipped: REASON` and returns false, for `if !... { return; }`.
pub fn cannot_run(reason: &str) -> bool {
    if in_ci() {
        panic!("CI and this test cannot run: {reason} (scripts/test installs what tests need)");
    }
    eprintln!("skipped: {reason}");
    false
}

/// Whether `program` can be run (found on PATH, or a path that exists); if not,
/// [`cannot_run`] naming the Debian package that has it.
pub fn tool(program: &str, package: &str) -> bool {
    let found = if program.contains('/') {
        std::path::Path::new(program).is_file()
    } else {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
    };
    found
        || cannot_run(&format!(
            "{program} is not installed (Debian package {package})"
        ))
}

/// Whether the effective capability set holds CAP_NET_ADMIN.
pub fn has_net_admin() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| effective_caps(&status))
        .is_some_and(|caps| caps & (1 << CAP_NET_ADMIN) != 0)
}

fn effective_caps(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line.trim_start_matches("CapEff:").trim(), 16).ok()
}

/// Writes `DIR/install-config.yaml` for the lab cluster `lab.example.com` (a baremetal
/// platform) with these machine networks and VIPs (no platform section when there are no
/// VIPs, as before anyone chose them); returns its path.
pub fn install_config(
    dir: &std::path::Path,
    networks: &[&str],
    api: &[&str],
    ingress: &[&str],
) -> std::path::PathBuf {
    let list = |v: &[&str]| v.iter().map(|x| format!("\n    - {x}")).collect::<String>();
    let nets: String = networks
        .iter()
        .map(|n| format!("\n  - cidr: {n}"))
        .collect();
    let mut text = format!(
        "apiVersion: v1\nbaseDomain: example.com\nmetadata:\n  name: lab\nnetworking:\n  machineNetwork:{nets}\n"
    );
    if !api.is_empty() || !ingress.is_empty() {
        text.push_str(&format!(
            "platform:\n  baremetal:\n    apiVIPs:{}\n    ingressVIPs:{}\n",
            list(api),
            list(ingress)
        ));
    }
    let path = dir.join("install-config.yaml");
    if let Err(e) = std::fs::write(&path, text) {
        panic!("{}: {e}", path.display());
    }
    path
}

/// The packets of the capture `pcap` that match the display filter `filter`, as tshark
/// dissects them: per packet, the values of `fields` (`-T fields -e ...`), in order. Panics
/// when tshark fails, which in a test is a failure.
pub fn tshark_fields(pcap: &std::path::Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut command = std::process::Command::new("tshark");
    command
        .arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields"]);
    for f in fields {
        command.args(["-e", f]);
    }
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("tshark -r {}: {e}", pcap.display()));
    assert!(
        out.status.success(),
        "tshark -r {} -Y {filter}: {}",
        pcap.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_is_any_value_of_ci_but_the_ones_that_say_no() {
        for yes in ["true", "1", "yes", " TRUE ", "github-actions"] {
            assert!(ci_says(Some(yes)), "{yes:?}");
        }
        for no in ["", "0", "false", "No", " off\n"] {
            assert!(!ci_says(Some(no)), "{no:?}");
        }
        assert!(!ci_says(None));
    }

    #[test]
    fn capabilities_from_proc_status() {
        let root = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(effective_caps(root), Some(0x1ff_ffff_ffff));
        assert_eq!(effective_caps("Name:\tx\n"), None);
        let user = "CapEff:\t0000000000000000\n";
        assert_eq!(effective_caps(user).map(|c| c & (1 << 12)), Some(0));
    }
}

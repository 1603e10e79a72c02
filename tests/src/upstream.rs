//! The cluster's upstream stack ([`crate::cluster::Stack::Upstream`]): keepalived and haproxy
//! in place of vrrpd and lb-proxy, on the same nodes and from the same inputs. Their lab units
//! (Debian's keepalived.service and haproxy.service, and a stand-in for OpenShift's
//! haproxy-monitor) and the scripts those units run are in `tests/fixtures/upstream`, whose
//! README says where each line comes from. This module knows which of a role's units they
//! replace, installs the scripts on a node, and reads keepalived's state the way `vrrpd
//! status` reads vrrpd's: from keepalived's own JSON dump.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use ipi_lab::wait_for;

use crate::error::ClusterError;

/// Where the upstream stack's units and scripts are: `tests/fixtures/upstream`.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/upstream")
}

/// The units that take the place of ours (a role's other units stay).
const REPLACES: [(&str, &[&str]); 2] = [
    ("ipi-vrrpd.service", &["keepalived.service"]),
    (
        "ipi-lb-proxy.service",
        &["haproxy.service", "haproxy-monitor.service"],
    ),
];

/// The scripts the units run, installed in every node's `/etc/ipi-net/upstream`.
const SCRIPTS: [&str; 2] = ["render.sh", "haproxy-monitor.sh"];

/// Where a node's keepalived writes its JSON dump (its unit's `TMPDIR`).
const JSON_DUMP: &str = "run/keepalived/keepalived.json";

/// A role's units (from `contrib/roles/ROLE`) with ours replaced by the upstream ones.
pub(crate) fn units(listed: &[String]) -> Vec<String> {
    listed
        .iter()
        .flat_map(|u| match REPLACES.iter().find(|(ours, _)| ours == u) {
            Some((_, theirs)) => theirs.iter().map(|t| (*t).to_string()).collect(),
            None => vec![u.clone()],
        })
        .collect()
}

/// Whether `unit` is one of the upstream stack's (its file is in [`dir`]).
pub(crate) fn is_upstream(unit: &str) -> bool {
    REPLACES.iter().any(|(_, theirs)| theirs.contains(&unit))
}

/// Copies the upstream scripts into `to` (the node's `/etc/ipi-net/upstream`).
pub(crate) fn install_scripts(to: &Path) -> Result<(), ClusterError> {
    std::fs::create_dir_all(to).map_err(ClusterError::io(format!("create {}", to.display())))?;
    for s in SCRIPTS {
        let from = dir().join(s);
        std::fs::copy(&from, to.join(s))
            .map_err(ClusterError::io(format!("copy {}", from.display())))?;
    }
    Ok(())
}

/// keepalived's signal for a JSON dump (SIGRTMIN+2 on Linux), as `keepalived --signum=JSON`
/// says.
fn json_signal() -> Option<u32> {
    static SIGNAL: OnceLock<Option<u32>> = OnceLock::new();
    *SIGNAL.get_or_init(|| {
        let out = Command::new("keepalived")
            .arg("--signum=JSON")
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    })
}

/// keepalived's VRRP instances as its JSON dump says (the main process `pid` asked for it):
/// (instance, state as `vrrpd status` names it, effective priority). Empty when keepalived
/// does not answer within a second.
pub(crate) fn keepalived_status(pid: u32) -> Vec<(String, String, u64)> {
    // The dump is in the node's /run, which its processes see through /proc/PID/root.
    let file = PathBuf::from(format!("/proc/{pid}/root")).join(JSON_DUMP);
    let Some(signal) = json_signal() else {
        return Vec::new();
    };
    let _ = std::fs::remove_file(&file);
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
    if !sent.is_ok_and(|s| s.success()) {
        return Vec::new();
    }
    let mut dump = None;
    wait_for(Duration::from_secs(1), Duration::from_millis(10), || {
        dump = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        dump.is_some()
    });
    dump.as_ref()
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .map(|i| {
            let d = &i["data"];
            (
                d["iname"].as_str().unwrap_or("?").to_string(),
                state_name(d["state"].as_u64()).to_string(),
                d["effective_priority"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// keepalived's state numbers (vrrp.h: VRRP_STATE_INIT, _BACK, _MAST, _FAULT) by the names
/// `vrrpd status` gives them.
fn state_name(n: Option<u64>) -> &'static str {
    match n {
        Some(0) => "INIT",
        Some(1) => "BACKUP",
        Some(2) => "MASTER",
        Some(3) => "FAULT",
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ours_are_replaced_and_the_rest_stays() {
        let listed: Vec<String> = [
            "ipi-vrrpd.service",
            "ipi-mdns-publish.service",
            "ipi-lb-proxy.service",
            "ipi-dnsmasq.service",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            units(&listed),
            [
                "keepalived.service",
                "ipi-mdns-publish.service",
                "haproxy.service",
                "haproxy-monitor.service",
                "ipi-dnsmasq.service"
            ]
        );
        assert!(is_upstream("haproxy-monitor.service"));
        assert!(!is_upstream("ipi-dnsmasq.service"));
    }

    #[test]
    fn every_unit_and_script_is_in_the_fixtures() {
        for (_, theirs) in REPLACES {
            for u in theirs {
                assert!(dir().join(u).is_file(), "{u}");
            }
        }
        for s in SCRIPTS {
            assert!(dir().join(s).is_file(), "{s}");
        }
    }
}

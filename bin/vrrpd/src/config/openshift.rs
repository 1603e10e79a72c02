//! What OpenShift's on-prem templates configure on a node, from the cluster model: the API
//! instance (bootstrap and masters) and the Ingress instance (masters and workers), their
//! track scripts, weights and passwords, as in tests/fixtures/seeds/managed-keepalived-*.conf.
//!
//! Two things differ from OpenShift's templates, both for clients: every instance sets
//! `preempt_on_lower_priority`, so a failing track script moves its VIP within Skew_Time of the
//! drop rather than Master_Down_Interval; and a role with an IPv4 and an IPv6 VIP puts both
//! instances in one `vrrp_sync_group`, so that both VIPs stay on one node (OpenShift MCO #4844).

use std::net::IpAddr;
use std::time::Duration;

use ipi_core::vip::VipKind;
use ipi_core::{Cluster, Family, Inventory, Role};

use super::model::{
    Command, Config, GlobalDefs, Location, Notify, SyncGroup, TrackedScript, User, VirtualAddress,
    VrrpInstance, VrrpScript,
};
use crate::fsm::{GarpParams, InitialState};

/// API priority on the bootstrap node: above any master's 40 + 20 + 5, so the VIP stays there
/// while the bootstrap node lives.
pub const BOOTSTRAP_API_PRIORITY: u8 = 70;
/// API priority on masters.
pub const MASTER_API_PRIORITY: u8 = 40;
/// Ingress priority on masters and workers.
pub const INGRESS_PRIORITY: u8 = 20;

fn command(line: &str) -> Command {
    Command {
        words: line.split_whitespace().map(str::to_string).collect(),
        location: Location::default(),
    }
}

fn script(name: &str, line: &str, interval: u64, weight: i32, rise: u32, fall: u32) -> VrrpScript {
    VrrpScript {
        name: name.to_string(),
        command: command(line),
        interval: Duration::from_secs(interval),
        timeout: Duration::from_secs(interval),
        weight,
        rise,
        fall,
        user: None,
        init_fail: false,
        location: Location::default(),
    }
}

/// Which track scripts the instances run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scripts {
    /// OpenShift's: /etc/keepalived/chk_ocp_script.sh, chk_ocp_script_both.sh, and curl for
    /// Ingress (the rendered keepalived.conf is OpenShift's, byte for byte).
    OpenShift,
    /// `DIR/chk_ocp_script.sh`, `DIR/chk_ocp_script_both.sh` and `DIR/chk_ingress.sh` (ipi-net's
    /// contrib/keepalived, on `lb-proxy check`: no curl). An absolute path without white space
    /// or a trailing `/`.
    Dir(String),
}

/// This node, as OpenShift configures VRRP on it.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    /// Its role.
    pub role: Role,
    /// The interface its VIPs go on.
    pub interface: &'a str,
    /// The node inventory: the unicast peers.
    pub nodes: Option<&'a Inventory>,
    /// Adverts go to the inventory's nodes that run the instance instead of the multicast
    /// group.
    pub unicast: bool,
    /// Who the track scripts run as; vrrpd's default users when absent.
    pub script_user: Option<&'a User>,
}

/// The configuration OpenShift runs on `node`: its role's global_defs and scripts, then the API
/// instances (bootstrap and masters), then the Ingress ones (masters and workers), the primary
/// family's first. With `node.unicast`, adverts go to the inventory's nodes that run the
/// instance (bootstrap and masters for the API, masters and workers for Ingress) instead of the
/// multicast group. A role with both families' VIPs gets a sync group of its two instances,
/// named `CLUSTER_API_DUAL_STACK` / `CLUSTER_INGRESS_DUAL_STACK`.
pub fn from_cluster(cluster: &Cluster, node: &Node<'_>, scripts: &Scripts) -> Config {
    let lines = ScriptLines::of(scripts);
    let mut c = Config {
        global: global_defs(node),
        scripts: role_scripts(node.role, &lines),
        ..Config::default()
    };
    let families = [cluster.primary_family(), other(cluster.primary_family())];
    for kind in VipKind::ALL {
        let Some((priority, tracked)) = on(kind, node.role) else {
            continue;
        };
        let mut members = Vec::new();
        for (n, family) in families.iter().enumerate() {
            if let Some(vip) = cluster.vip(kind, *family) {
                let name = format!(
                    "{}_{}",
                    cluster.name,
                    suffix(instance_name(kind), n, *family)
                );
                let mut i = instance(name, node, cluster.vrid(kind), priority, vip, tracked);
                i.auth_pass = vip.is_ipv4().then(|| password(kind, &cluster.name).into());
                i.unicast_peers = peers(node, &roles(kind), Family::of(vip));
                members.push(i.name.clone());
                c.instances.push(i);
            }
        }
        // Both families of a role move together (keepalived's way: a sync group). The primary
        // family's instance comes first: it breaks ties between equal priorities for both.
        if members.len() > 1 {
            c.sync_groups.push(SyncGroup {
                name: format!("{}_{}_DUAL_STACK", cluster.name, instance_name(kind)),
                members,
                notify: Notify::default(),
                location: Location::default(),
            });
        }
    }
    c
}

/// The command lines of the three track scripts.
struct ScriptLines {
    /// The API load balancer (`chk_ocp_script.sh`).
    lb: String,
    /// The API load balancer and server both (`chk_ocp_script_both.sh`).
    both: String,
    /// The Ingress router.
    ingress: String,
}

impl ScriptLines {
    fn of(scripts: &Scripts) -> ScriptLines {
        match scripts {
            Scripts::OpenShift => ScriptLines {
                lb: "/usr/bin/timeout 1.9 /etc/keepalived/chk_ocp_script.sh".to_string(),
                both: "/usr/bin/timeout 1.9 /etc/keepalived/chk_ocp_script_both.sh".to_string(),
                ingress: "/usr/bin/timeout 0.9 /usr/bin/curl -o /dev/null -Lfs \
                          http://localhost:1936/healthz/ready"
                    .to_string(),
            },
            Scripts::Dir(dir) => ScriptLines {
                lb: format!("/usr/bin/timeout 1.9 {dir}/chk_ocp_script.sh"),
                both: format!("/usr/bin/timeout 1.9 {dir}/chk_ocp_script_both.sh"),
                ingress: format!("/usr/bin/timeout 0.9 {dir}/chk_ingress.sh"),
            },
        }
    }
}

/// The templates' global_defs, with script security on every role (OpenShift's worker template
/// has none) and scripts run as `node.script_user`, by default not root (the templates' `root`
/// is `--script-user root`).
fn global_defs(node: &Node<'_>) -> GlobalDefs {
    GlobalDefs {
        router_id: None,
        script_user: node.script_user.cloned(),
        enable_script_security: true,
        vrrp_version: ipi_core::vrrp::Version::V2,
        garp: GarpParams::default(),
        ..GlobalDefs::default()
    }
}

/// The track scripts of a role's template, in its order.
fn role_scripts(role: Role, lines: &ScriptLines) -> Vec<VrrpScript> {
    match role {
        Role::Bootstrap => vec![script("chk_ocp", &lines.lb, 1, 50, 1, 1)],
        Role::Master => vec![
            script("chk_ocp_lb", &lines.lb, 2, 20, 3, 2),
            script("chk_ocp_both", &lines.both, 2, 5, 3, 2),
            script("chk_ingress", &lines.ingress, 1, 50, 1, 1),
        ],
        Role::Worker => vec![script("chk_ingress", &lines.ingress, 1, 50, 1, 1)],
    }
}

/// The instance name's part for a VIP, as OpenShift's keepalived template writes it.
fn instance_name(kind: VipKind) -> &'static str {
    match kind {
        VipKind::Api => "API",
        VipKind::Ingress => "INGRESS",
    }
}

/// A role's priority and track scripts for this VIP; None when the role does not run it.
fn on(kind: VipKind, role: Role) -> Option<(u8, &'static [&'static str])> {
    match (kind, role) {
        (VipKind::Api, Role::Bootstrap) => Some((BOOTSTRAP_API_PRIORITY, &["chk_ocp"])),
        (VipKind::Api, Role::Master) => {
            Some((MASTER_API_PRIORITY, &["chk_ocp_lb", "chk_ocp_both"]))
        }
        (VipKind::Api, Role::Worker) => None,
        (VipKind::Ingress, Role::Master | Role::Worker) => {
            Some((INGRESS_PRIORITY, &["chk_ingress"]))
        }
        (VipKind::Ingress, Role::Bootstrap) => None,
    }
}

/// The roles whose nodes run this VIP's instance: the unicast peers.
fn roles(kind: VipKind) -> [Role; 2] {
    match kind {
        VipKind::Api => [Role::Bootstrap, Role::Master],
        VipKind::Ingress => [Role::Master, Role::Worker],
    }
}

/// The PASS password OpenShift's template gives the VIP's instances.
fn password(kind: VipKind, cluster_name: &str) -> String {
    match kind {
        VipKind::Api => format!("{cluster_name}_api_vip"),
        VipKind::Ingress => format!("{cluster_name}_ingress_vip"),
    }
}

/// The unicast peers of an instance of `family` run by `roles`: every address of that family
/// of the inventory's nodes with one of them, sorted; none in multicast mode.
fn peers(node: &Node<'_>, roles: &[Role], family: Family) -> Vec<IpAddr> {
    let Some(nodes) = node.nodes.filter(|_| node.unicast) else {
        return Vec::new();
    };
    let mut out: Vec<IpAddr> = nodes
        .nodes()
        .iter()
        .filter(|n| roles.iter().any(|r| n.has_role(*r)))
        .flat_map(|n| n.addresses.iter().copied())
        .filter(|a| Family::of(*a) == family)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// An instance as the templates write it, without password or peers.
fn instance(
    name: String,
    node: &Node<'_>,
    vrid: u8,
    priority: u8,
    vip: IpAddr,
    tracked: &[&str],
) -> VrrpInstance {
    VrrpInstance {
        interface: node.interface.to_string(),
        state: Some(InitialState::Backup),
        vrid,
        priority,
        vips: vec![VirtualAddress::host(vip)],
        track_scripts: tracked
            .iter()
            .map(|s| TrackedScript {
                name: s.to_string(),
                weight: None,
            })
            .collect(),
        // A failing track script lowers this node's priority; the next node takes over after
        // Skew_Time of hearing it, not Master_Down_Interval (vrrpd's keyword, off elsewhere).
        preempt_on_lower_priority: true,
        ..VrrpInstance::new(name, GarpParams::default(), Location::default())
    }
}

/// `API` for the primary family's instance, `API_V6` / `API_V4` for the other one.
fn suffix(kind: &str, n: usize, family: Family) -> String {
    match (n, family) {
        (0, _) => kind.to_string(),
        (_, Family::V6) => format!("{kind}_V6"),
        (_, Family::V4) => format!("{kind}_V4"),
    }
}

fn other(f: Family) -> Family {
    match f {
        Family::V4 => Family::V6,
        Family::V6 => Family::V4,
    }
}

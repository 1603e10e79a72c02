//! What OpenShift's on-prem templates configure on a node, from the cluster model: the API
//! instance (bootstrap and masters) and the Ingress instance (masters and workers), their
//! track scripts, weights and passwords, as in tests/fixtures/seeds/managed-keepalived-*.conf.

use std::net::IpAddr;
use std::time::Duration;

use ipi_core::{Cluster, Family, Inventory, Role};

use super::model::{
    Command, Config, GlobalDefs, Location, Notify, TrackedScript, User, VirtualAddress,
    VrrpInstance, VrrpScript,
};
use crate::cli::NodeRole;
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

/// The configuration OpenShift runs on a node of `role` whose VIPs go on `interface`. With
/// `unicast`, adverts go to the inventory's nodes that run the instance (bootstrap and masters
/// for the API, masters and workers for Ingress) instead of the multicast group.
pub fn from_cluster(
    cluster: &Cluster,
    role: NodeRole,
    interface: &str,
    nodes: Option<&Inventory>,
    unicast: bool,
    scripts: &Scripts,
) -> Config {
    let name = &cluster.name;
    let vrids = cluster.vrids();
    let mut c = Config {
        global: GlobalDefs {
            router_id: None,
            script_user: Some(User {
                user: "root".into(),
                group: None,
            }),
            enable_script_security: true,
            vrrp_version: ipi_core::vrrp::Version::V2,
            garp: GarpParams::default(),
        },
        ..Config::default()
    };
    let (lb, both, ingress) = match scripts {
        Scripts::OpenShift => (
            "/usr/bin/timeout 1.9 /etc/keepalived/chk_ocp_script.sh".to_string(),
            "/usr/bin/timeout 1.9 /etc/keepalived/chk_ocp_script_both.sh".to_string(),
            "/usr/bin/timeout 0.9 /usr/bin/curl -o /dev/null -Lfs http://localhost:1936/healthz/ready"
                .to_string(),
        ),
        Scripts::Dir(dir) => (
            format!("/usr/bin/timeout 1.9 {dir}/chk_ocp_script.sh"),
            format!("/usr/bin/timeout 1.9 {dir}/chk_ocp_script_both.sh"),
            format!("/usr/bin/timeout 0.9 {dir}/chk_ingress.sh"),
        ),
    };
    let (lb, both, ingress) = (lb.as_str(), both.as_str(), ingress.as_str());
    let (api, with_ingress, api_scripts): (Option<u8>, bool, Vec<&str>) = match role {
        NodeRole::Bootstrap => {
            c.scripts.push(script("chk_ocp", lb, 1, 50, 1, 1));
            (Some(BOOTSTRAP_API_PRIORITY), false, vec!["chk_ocp"])
        }
        NodeRole::Master => {
            c.scripts.push(script("chk_ocp_lb", lb, 2, 20, 3, 2));
            c.scripts.push(script("chk_ocp_both", both, 2, 5, 3, 2));
            c.scripts.push(script("chk_ingress", ingress, 1, 50, 1, 1));
            (
                Some(MASTER_API_PRIORITY),
                true,
                vec!["chk_ocp_lb", "chk_ocp_both"],
            )
        }
        NodeRole::Worker => {
            // Workers' template has no global_defs: their one script runs as keepalived's
            // default user.
            c.global = GlobalDefs::default();
            c.scripts.push(script("chk_ingress", ingress, 1, 50, 1, 1));
            (None, true, Vec::new())
        }
    };
    let families = [cluster.primary_family(), other(cluster.primary_family())];
    let peers = |roles: &[Role], family: Family| -> Vec<IpAddr> {
        let Some(nodes) = nodes.filter(|_| unicast) else {
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
    };
    let instance = |suffix: &str,
                    vrid: u8,
                    priority: u8,
                    pass: String,
                    vip: IpAddr,
                    scripts: &[&str],
                    roles: &[Role]| {
        VrrpInstance {
            name: format!("{name}_{suffix}"),
            interface: interface.to_string(),
            state: Some(InitialState::Backup),
            vrid,
            priority,
            advert_int_cs: 100,
            version: None,
            native_ipv6: false,
            preempt: true,
            preempt_delay_cs: 0,
            auth_pass: vip.is_ipv4().then_some(pass),
            vips: vec![VirtualAddress {
                address: vip,
                prefix_len: if vip.is_ipv4() { 32 } else { 128 },
                dev: None,
                label: None,
            }],
            mcast_src_ip: None,
            unicast_src_ip: None,
            unicast_peers: peers(roles, Family::of(vip)),
            track_scripts: scripts
                .iter()
                .map(|s| TrackedScript {
                    name: s.to_string(),
                    weight: None,
                })
                .collect(),
            track_interfaces: Vec::new(),
            dont_track_primary: false,
            notify: Notify::default(),
            garp: GarpParams::default(),
            lower_prio_no_advert: false,
            location: Location::default(),
        }
    };
    if let Some(priority) = api {
        for (n, family) in families.iter().enumerate() {
            if let Some(vip) = cluster.api_vip(*family) {
                let suffix = suffix("API", n, *family);
                let roles = [Role::Bootstrap, Role::Master];
                c.instances.push(instance(
                    &suffix,
                    vrids.api,
                    priority,
                    format!("{name}_api_vip"),
                    vip,
                    &api_scripts,
                    &roles,
                ));
            }
        }
    }
    if with_ingress {
        for (n, family) in families.iter().enumerate() {
            if let Some(vip) = cluster.ingress_vip(*family) {
                let suffix = suffix("INGRESS", n, *family);
                let roles = [Role::Master, Role::Worker];
                c.instances.push(instance(
                    &suffix,
                    vrids.ingress,
                    INGRESS_PRIORITY,
                    format!("{name}_ingress_vip"),
                    vip,
                    &["chk_ingress"],
                    &roles,
                ));
            }
        }
    }
    c
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

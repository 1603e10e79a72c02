//! What keepalived reads that is not vrrpd's job: LVS (`virtual_server` and its checkers), SMTP
//! alerts, DBus, SNMP, BFD, keepalived's own process management, scheduling and memory
//! locking, static addresses, routes and rules. A file holding them is accepted; each such keyword or section gets one warning
//! with its place and is set aside before [`super::parse`] sees the file. Anything else stays
//! for the parser, where a word vrrpd does not read is an error.

use std::fmt;

use super::error::ConfigWarnings;
use super::tree::Node;

/// A part of keepalived that vrrpd has no part in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// IPVS virtual servers, their real servers and checkers.
    Lvs,
    /// Mail alerts.
    Smtp,
    /// The DBus interface.
    Dbus,
    /// The SNMP subagent.
    Snmp,
    /// Bidirectional forwarding detection.
    Bfd,
    /// Real-time scheduling, priorities, CPU affinity, memory locking, resource limits.
    Scheduling,
    /// keepalived's own processes: names, pid files, instances, reloads, umask, buffers.
    Process,
    /// Static addresses, routes and rules, which keepalived adds at start whatever the VIPs do.
    Statics,
}

impl fmt::Display for Area {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Area::Lvs => {
                "keepalived would run these IPVS virtual servers and their health checkers; \
                 LVS is not part of vrrpd"
            }
            Area::Smtp => {
                "keepalived would mail these alerts; vrrpd sends no mail (SMTP alerts are not \
                 part of vrrpd: a notify script can)"
            }
            Area::Dbus => {
                "keepalived would publish its instances on DBus; DBus is not part of vrrpd"
            }
            Area::Snmp => {
                "keepalived would serve its MIBs to an SNMP agent; SNMP is not part of vrrpd \
                 (its Prometheus metrics say the same)"
            }
            Area::Bfd => "keepalived would run these BFD sessions; BFD is not part of vrrpd",
            Area::Scheduling => {
                "keepalived would set its own scheduling, priority, affinity or memory locking; \
                 those are not part of vrrpd (systemd's unit sets vrrpd's)"
            }
            Area::Process => {
                "keepalived would name, number or time its own processes by it; keepalived's \
                 process management is not part of vrrpd"
            }
            Area::Statics => {
                "keepalived would add these at start and keep them whatever the VRRP state; \
                 vrrpd leaves them to the system's network configuration (they never move \
                 with a VIP)"
            }
        })
    }
}

/// Top-level sections and keywords.
const ROOT: &[(&str, Area)] = &[
    ("virtual_server", Area::Lvs),
    ("virtual_server_group", Area::Lvs),
    ("net_namespace_ipvs", Area::Lvs),
    ("bfd_instance", Area::Bfd),
    ("use_pid_dir", Area::Process),
    ("instance", Area::Process),
    ("child_wait_time", Area::Process),
    ("static_ipaddress", Area::Statics),
    ("static_routes", Area::Statics),
    ("static_rules", Area::Statics),
];

/// `global_defs` keywords.
const GLOBAL: &[(&str, Area)] = &[
    ("notification_email", Area::Smtp),
    ("notification_email_from", Area::Smtp),
    ("smtp_server", Area::Smtp),
    ("smtp_helo_name", Area::Smtp),
    ("smtp_connect_timeout", Area::Smtp),
    ("smtp_alert", Area::Smtp),
    ("smtp_alert_vrrp", Area::Smtp),
    ("smtp_alert_checker", Area::Smtp),
    ("no_email_faults", Area::Smtp),
    ("no_checker_emails", Area::Smtp),
    ("lvs_id", Area::Lvs),
    ("lvs_timeouts", Area::Lvs),
    ("lvs_flush", Area::Lvs),
    ("lvs_flush_on_stop", Area::Lvs),
    ("lvs_flush_onstop", Area::Lvs),
    ("lvs_sync_daemon", Area::Lvs),
    ("lvs_notify_fifo", Area::Lvs),
    ("lvs_notify_fifo_script", Area::Lvs),
    ("lvs_netlink_cmd_rcv_bufs", Area::Lvs),
    ("lvs_netlink_cmd_rcv_bufs_force", Area::Lvs),
    ("lvs_netlink_monitor_rcv_bufs", Area::Lvs),
    ("lvs_netlink_monitor_rcv_bufs_force", Area::Lvs),
    ("lvs_process_name", Area::Lvs),
    ("checker_process_name", Area::Lvs),
    ("checker_log_all_failures", Area::Lvs),
    ("rs_init_notifies", Area::Lvs),
    ("nftables_ipvs", Area::Lvs),
    ("nftables_ipvs_priority", Area::Lvs),
    ("nftables_ipvs_start_fwmark", Area::Lvs),
    ("checker_priority", Area::Lvs),
    ("checker_no_swap", Area::Lvs),
    ("checker_rt_priority", Area::Lvs),
    ("checker_cpu_affinity", Area::Lvs),
    ("checker_rlimit_rttime", Area::Lvs),
    ("checker_rlimit_rtime", Area::Lvs),
    ("enable_dbus", Area::Dbus),
    ("dbus_service_name", Area::Dbus),
    ("snmp_socket", Area::Snmp),
    ("enable_traps", Area::Snmp),
    ("enable_snmp_vrrp", Area::Snmp),
    ("enable_snmp_keepalived", Area::Snmp),
    ("enable_snmp_rfc", Area::Snmp),
    ("enable_snmp_rfcv2", Area::Snmp),
    ("enable_snmp_rfcv3", Area::Snmp),
    ("enable_snmp_checker", Area::Snmp),
    ("bfd_process_name", Area::Bfd),
    ("bfd_priority", Area::Bfd),
    ("bfd_no_swap", Area::Bfd),
    ("bfd_rt_priority", Area::Bfd),
    ("bfd_cpu_affinity", Area::Bfd),
    ("bfd_rlimit_rttime", Area::Bfd),
    ("bfd_rlimit_rtime", Area::Bfd),
    ("vrrp_priority", Area::Scheduling),
    ("vrrp_no_swap", Area::Scheduling),
    ("vrrp_rt_priority", Area::Scheduling),
    ("vrrp_cpu_affinity", Area::Scheduling),
    ("vrrp_rlimit_rttime", Area::Scheduling),
    ("vrrp_rlimit_rtime", Area::Scheduling),
    ("max_auto_priority", Area::Scheduling),
    ("min_auto_priority_delay", Area::Scheduling),
    ("process_names", Area::Process),
    ("process_name", Area::Process),
    ("vrrp_process_name", Area::Process),
    ("umask", Area::Process),
    ("random_seed", Area::Process),
    ("reload_check_config", Area::Process),
    ("reload_time_file", Area::Process),
    ("reload_repeat", Area::Process),
    ("reload_file", Area::Process),
    ("include_check", Area::Process),
    ("config_save_dir", Area::Process),
    ("tmp_config_directory", Area::Process),
    ("data_use_instance", Area::Process),
    ("vrrp_netlink_cmd_rcv_bufs", Area::Process),
    ("vrrp_netlink_cmd_rcv_bufs_force", Area::Process),
    ("vrrp_netlink_monitor_rcv_bufs", Area::Process),
    ("vrrp_netlink_monitor_rcv_bufs_force", Area::Process),
    ("process_monitor_rcv_bufs", Area::Process),
    ("process_monitor_rcv_bufs_force", Area::Process),
    ("vrrp_rx_bufs_policy", Area::Process),
    ("vrrp_rx_bufs_multiplier", Area::Process),
];

/// Keywords of `vrrp_instance` and `vrrp_sync_group`.
const INSTANCE: &[(&str, Area)] = &[
    ("smtp_alert", Area::Smtp),
    ("lvs_sync_daemon_interface", Area::Lvs),
    ("kernel_rx_buf_size", Area::Process),
    ("debug", Area::Process),
];

/// Where a keyword is, for the table that applies.
fn table(parent: Option<&str>) -> &'static [(&'static str, Area)] {
    match parent {
        None => ROOT,
        Some("global_defs") => GLOBAL,
        Some("vrrp_instance" | "vrrp_sync_group") => INSTANCE,
        Some(_) => &[],
    }
}

/// The area of keepalived a keyword belongs to, if vrrpd sets it aside there.
pub fn area(parent: Option<&str>, keyword: &str) -> Option<Area> {
    table(parent)
        .iter()
        .find(|(k, _)| *k == keyword)
        .map(|&(_, a)| a)
}

/// The statements without what is not vrrpd's job, one warning for each left out.
pub fn set_aside(nodes: Vec<Node>, warnings: &mut ConfigWarnings) -> Vec<Node> {
    keep(nodes, None, warnings)
}

fn keep(nodes: Vec<Node>, parent: Option<&str>, warnings: &mut ConfigWarnings) -> Vec<Node> {
    let mut kept = Vec::with_capacity(nodes.len());
    for mut node in nodes {
        if let Some(area) = area(parent, &node.keyword) {
            warnings.push(
                &node.location,
                format!("ignored: {area} (`{}`)", node.keyword),
            );
            continue;
        }
        if parent.is_none() {
            if let Some(block) = node.block.take() {
                node.block = Some(keep(block, Some(&node.keyword), warnings));
            }
        }
        kept.push(node);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::Location;

    fn node(keyword: &str, block: Option<Vec<Node>>, line: usize) -> Node {
        Node {
            keyword: keyword.into(),
            args: Vec::new(),
            block,
            location: Location::new("k.conf", line),
        }
    }

    #[test]
    fn one_warning_per_section_or_keyword_with_its_place() {
        let nodes = vec![
            node(
                "global_defs",
                Some(vec![
                    node("smtp_server", None, 2),
                    node("router_id", None, 3),
                ]),
                1,
            ),
            node(
                "virtual_server",
                Some(vec![node("real_server", None, 6)]),
                5,
            ),
            node("vrrp_instance", Some(vec![node("smtp_alert", None, 9)]), 8),
        ];
        let mut warnings = ConfigWarnings::default();
        let kept = set_aside(nodes, &mut warnings);
        assert_eq!(
            warnings.to_string(),
            "k.conf:2: ignored: keepalived would mail these alerts; vrrpd sends no mail (SMTP \
             alerts are not part of vrrpd: a notify script can) (`smtp_server`)\n\
             k.conf:5: ignored: keepalived would run these IPVS virtual servers and their \
             health checkers; LVS is not part of vrrpd (`virtual_server`)\n\
             k.conf:9: ignored: keepalived would mail these alerts; vrrpd sends no mail (SMTP \
             alerts are not part of vrrpd: a notify script can) (`smtp_alert`)"
        );
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].block.as_ref().unwrap().len(), 1);
        assert!(kept[1].block.as_ref().unwrap().is_empty());
    }
}

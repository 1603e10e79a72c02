//! VIPs probed on the wire by vrrpd, in the lab. A host outside the group holds the VIPs
//! (IPv4 and IPv6) as plain addresses: vrrpd warns, naming VIP, MAC and interface, in its log,
//! `vrrpd status --json` and the metrics, and runs on as MASTER; once the address is gone, a
//! clash (a foreign router appearing on the VRID) probes again and the warning clears. No
//! false alarm: a second router of the group that starts while the first holds the VIPs is
//! answered by it (tshark shows the answer) and reports nothing, nor does vrrpd joining a group
//! whose master is the real keepalived; a router probing VIPs it holds itself reports nothing
//! either. The probes themselves: ARP from 0.0.0.0, NS from ::.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use ipi_lab::{Daemon, Host, Lab};
use ipi_net_tests::vrrp::{Router, Speaker};
use support::{status, until};

#[allow(
    dead_code,
    reason = "each test binary uses a part of the shared helpers"
)]
mod support;

const VIP4: &str = "192.0.2.200";
const VIP6: &str = "2001:db8::200";
const METRICS: &str = "127.0.0.1:9651";

/// VRRPv3, 0.5 s adverts: VI_4 (VRID 61) holds VIP4, VI_6 (VRID 62) holds VIP6.
fn conf(priority: u8) -> String {
    let instance = |name: &str, vrid: u8, vip: &str, prefix: u8| {
        format!(
            "vrrp_instance {name} {{\n    interface eth0\n    virtual_router_id {vrid}\n    \
             priority {priority}\n    advert_int 0.5\n    virtual_ipaddress {{\n        \
             {vip}/{prefix}\n    }}\n}}\n"
        )
    };
    format!(
        "global_defs {{\n    vrrp_version 3\n}}\n{}{}",
        instance("VI_4", 61, VIP4, 32),
        instance("VI_6", 62, VIP6, 128)
    )
}

fn instance<'a>(s: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    s["instances"]
        .as_array()
        .and_then(|list| list.iter().find(|i| i["name"] == name))
        .unwrap_or(&serde_json::Value::Null)
}

fn ready() -> bool {
    ipi_lab::available()
        && ipi_lab::tool("tshark", "tshark")
        && ipi_lab::tool("tcpdump", "tcpdump")
        && ipi_lab::tool("curl", "curl")
}

fn plain_address(host: &Host, verb: &str, address: &str) {
    let prefix = if address.contains(':') { "/64" } else { "/24" };
    let with = format!("{address}{prefix}");
    let mut args = vec!["addr", verb, with.as_str(), "dev", "eth0"];
    if verb == "add" {
        args.push("nodad");
    }
    let out = host.run("ip", args).unwrap();
    assert!(out.success, "{}", out.stderr);
}

fn scrape(host: &Host) -> String {
    let url = format!("http://{METRICS}/metrics");
    host.run("curl", ["-sf", "--max-time", "2", url.as_str()])
        .unwrap()
        .stdout
}

#[test]
// One scenario read top to bottom: the warning everywhere it shows, then cleared.
#[allow(clippy::too_many_lines)]
fn a_vip_held_outside_the_group_is_warned_with_its_mac_and_the_instance_runs_on() {
    if !ready() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, holder, k) = (
        lab.host("a").unwrap(),
        lab.host("holder").unwrap(),
        lab.host("k").unwrap(),
    );
    plain_address(&holder, "add", VIP4);
    plain_address(&holder, "add", VIP6);
    let mac = holder.mac().unwrap();
    let capture = a.capture("probes", "arp or icmp6").unwrap();
    let da = support::vrrpd_with(&a, &conf(100), &["--metrics", METRICS]);
    for (name, vip) in [("VI_4", VIP4), ("VI_6", VIP6)] {
        until(
            &format!("{name}: MASTER with a conflict on {vip} by {mac}"),
            Duration::from_secs(10),
            &[&da],
            || {
                let s = status(&a);
                let i = instance(&s, name);
                let c = &i["vip_conflicts"][0];
                i["state"] == "MASTER"
                    && c["vip"] == vip
                    && c["mac"] == mac.as_str()
                    && c["interface"] == "eth0"
                    && c["evidence"] == "answered"
                    && i["vip_probes"] == 1
            },
        );
    }
    let pcap = capture.stop().unwrap();
    let log = da.log();
    assert!(
        log.contains(&format!("VI_4: VIP {VIP4} is in use on eth0 by {mac}"))
            && log.contains(&format!("VI_6: VIP {VIP6} is in use on eth0 by {mac}")),
        "{log}"
    );
    // The metrics say the same.
    let metrics = scrape(&a);
    for (name, vip) in [("VI_4", VIP4), ("VI_6", VIP6)] {
        let info = format!(
            "vrrpd_vip_conflict_info{{instance=\"{name}\",interface=\"eth0\",vip=\"{vip}\",mac=\"{mac}\"}} 1"
        );
        assert!(metrics.contains(&info), "{info}\nnot in\n{metrics}");
        assert!(
            metrics.contains(&format!("vrrpd_vip_conflicts{{instance=\"{name}\"}} 1")),
            "{metrics}"
        );
    }
    // `vrrpd status` as text too.
    let state = support::state_dir(&a);
    let text = a
        .run(
            env!("CARGO_BIN_EXE_vrrpd"),
            ["status", "--state-dir", state.to_str().unwrap()],
        )
        .unwrap()
        .stdout;
    assert!(
        text.contains(&format!("VIP {VIP4} in use on eth0 by {mac}")),
        "{text}"
    );
    // The probes on the wire: ARP from 0.0.0.0 for the VIP, NS from :: for the IPv6 VIP.
    probes_from_nowhere(&pcap, &a.mac().unwrap());

    // The addresses leave the stranger; foreign routers appear on both VRIDs (k: other groups
    // on VRIDs 61 and 62 with other VIPs), and the probes they trigger find the VIPs free,
    // while a holds them itself: no false alarm from our own VIPs.
    plain_address(&holder, "del", VIP4);
    plain_address(&holder, "del", VIP6);
    let foreign = "global_defs {\n    vrrp_version 3\n}\nvrrp_instance OTHER {\n    \
        interface eth0\n    virtual_router_id 61\n    priority 50\n    advert_int 0.5\n    \
        virtual_ipaddress {\n        192.0.2.201/32\n    }\n}\nvrrp_instance OTHER6 {\n    \
        interface eth0\n    virtual_router_id 62\n    priority 50\n    advert_int 0.5\n    \
        virtual_ipaddress {\n        2001:db8::201/128\n    }\n}\n";
    let dk = support::vrrpd_with(&k, foreign, &["--no-probe"]);
    for (name, vip) in [("VI_4", VIP4), ("VI_6", VIP6)] {
        until(
            &format!("{name}: a second probe after the clash, clear"),
            Duration::from_secs(10),
            &[&da, &dk],
            || {
                let s = status(&a);
                let i = instance(&s, name);
                i["clashes"] == 1
                    && i["vip_probes"] == 2
                    && i["vip_conflicts"] == serde_json::json!([])
                    && i["state"] == "MASTER"
            },
        );
        let cleared = format!("{name}: VIP {vip} is no longer answered by another host");
        assert!(da.log().contains(&cleared), "{}", da.log());
    }
    let metrics = scrape(&a);
    for name in ["VI_4", "VI_6"] {
        let zero = format!("vrrpd_vip_conflicts{{instance=\"{name}\"}} 0");
        assert!(metrics.contains(&zero), "{metrics}");
    }
    assert!(!metrics.contains("vrrpd_vip_conflict_info{"), "{metrics}");
}

/// ARP probes in `pcap` come from 0.0.0.0 with `mac`, for VIP4; NS for VIP6 from :: to its
/// solicited-node group, hop limit 255.
fn probes_from_nowhere(pcap: &Path, mac: &str) {
    let fields = |filter: &str, fields: &[&str]| ipi_lab::tshark_fields(pcap, filter, fields);
    let probes = fields(
        &format!("arp.opcode == 1 && arp.dst.proto_ipv4 == {VIP4} && arp.src.hw_mac == {mac}"),
        &["arp.src.proto_ipv4"],
    );
    assert!(!probes.is_empty(), "no ARP probe for {VIP4}");
    // The probes, and nothing else from a before it held the VIP, ask from 0.0.0.0.
    assert_eq!(probes[0], ["0.0.0.0"], "{probes:?}");
    let ns = fields(
        &format!("icmpv6.type == 135 && icmpv6.nd.ns.target_address == {VIP6}"),
        &["ipv6.src", "ipv6.dst", "ipv6.hlim"],
    );
    assert!(!ns.is_empty(), "no NS for {VIP6}");
    assert_eq!(ns[0], ["::", "ff02::1:ff00:200", "255"], "{ns:?}");
}

#[test]
fn the_groups_own_routers_are_no_conflict() {
    if !ready() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b) = (lab.host("a").unwrap(), lab.host("b").unwrap());
    let da: Daemon = support::vrrpd(&a, &conf(100));
    for name in ["VI_4", "VI_6"] {
        until(
            &format!("a: {name} MASTER"),
            Duration::from_secs(10),
            &[&da],
            || instance(&status(&a), name)["state"] == "MASTER",
        );
    }
    // b, of higher priority, starts while a holds the VIPs: a answers b's probes (its kernel
    // holds the addresses), and b, having heard a advertise the VRIDs, reports nothing.
    let capture = b.capture("answers", "arp or icmp6").unwrap();
    let db = support::vrrpd(&b, &conf(200));
    for name in ["VI_4", "VI_6"] {
        until(
            &format!("b: {name} MASTER after one probe"),
            Duration::from_secs(10),
            &[&da, &db],
            || {
                let s = status(&b);
                let i = instance(&s, name);
                i["state"] == "MASTER" && i["vip_probes"] == 1
            },
        );
    }
    let pcap = capture.stop().unwrap();
    for name in ["VI_4", "VI_6"] {
        let s = status(&b);
        assert_eq!(
            instance(&s, name)["vip_conflicts"],
            serde_json::json!([]),
            "{s}\n{}",
            db.log()
        );
    }
    assert!(!db.log().contains("is in use on"), "{}", db.log());
    // a did answer: an ARP reply for VIP4 and an NA for VIP6 from a's MAC.
    let a_mac = a.mac().unwrap();
    let seen =
        |filter: String| !ipi_lab::tshark_fields(&pcap, &filter, &["frame.number"]).is_empty();
    assert!(seen(format!(
        "arp.opcode == 2 && arp.src.proto_ipv4 == {VIP4} && arp.src.hw_mac == {a_mac}"
    )));
    assert!(seen(format!(
        "icmpv6.type == 136 && icmpv6.nd.na.target_address == {VIP6} && eth.src == {a_mac}"
    )));
}

#[test]
fn a_keepalived_master_of_the_group_is_no_conflict() {
    if !ready() || !ipi_lab::tool("keepalived", "keepalived") {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (k, b) = (lab.host("k").unwrap(), lab.host("b").unwrap());
    let kk = Router::start_with(&k, Speaker::Keepalived, &conf(200), 200, None).unwrap();
    let (vip4, vip6) = (VIP4.parse().unwrap(), VIP6.parse().unwrap());
    until(
        "keepalived holds both VIPs",
        Duration::from_secs(10),
        &[&kk.daemon],
        || support::holds(&k, vip4) && support::holds(&k, vip6),
    );
    // vrrpd joins the group as backup: keepalived's host answers its probes, and keepalived
    // advertises the VRIDs, so nothing is reported.
    let capture = b.capture("answers", "arp or icmp6").unwrap();
    let db = support::vrrpd(&b, &conf(100));
    for name in ["VI_4", "VI_6"] {
        until(
            &format!("b: {name} BACKUP after one probe"),
            Duration::from_secs(10),
            &[&db, &kk.daemon],
            || {
                let s = status(&b);
                let i = instance(&s, name);
                i["state"] == "BACKUP" && i["vip_probes"] == 1
            },
        );
        assert_eq!(
            instance(&status(&b), name)["vip_conflicts"],
            serde_json::json!([]),
            "{}",
            db.log()
        );
    }
    let pcap = capture.stop().unwrap();
    let k_mac = k.mac().unwrap();
    let filter =
        format!("arp.opcode == 2 && arp.src.proto_ipv4 == {VIP4} && arp.src.hw_mac == {k_mac}");
    assert!(
        !ipi_lab::tshark_fields(&pcap, &filter, &["frame.number"]).is_empty(),
        "keepalived's host never answered b's probe"
    );
}

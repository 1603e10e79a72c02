//! keepalived's `virtual_routes` and `virtual_rules` in the daemon: routes, then rules, added
//! when the instance takes its VIPs (after them), removed when it gives them up (before them),
//! with keepalived's routing protocol number 18.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use support::{state, until, vrrpd};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

/// `ip route show` of `table` in `host` (keepalived's protocol only), one route a line; a
/// table that does not exist (yet) holds none.
fn routes(host: &ipi_lab::Host, table: &str) -> String {
    let out = host
        .run("ip", ["route", "show", "table", table, "proto", "18"])
        .unwrap();
    if !out.success && out.stderr.contains("does not exist") {
        return String::new();
    }
    assert!(out.success, "ip route: {}", out.stderr);
    out.stdout
}

/// The rules of `host` that vrrpd adds (priority 1000).
fn rules(host: &ipi_lab::Host) -> String {
    let out = host
        .run("ip", ["rule", "show", "priority", "1000"])
        .unwrap();
    assert!(out.success, "ip rule: {}", out.stderr);
    out.stdout
}

#[test]
fn virtual_routes_come_and_go_with_the_vips() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let conf = "vrrp_instance VI_1 {\n    interface eth0\n    virtual_router_id 73\n    \
                priority 100\n    advert_int 1\n    virtual_ipaddress {\n        \
                198.51.100.73/32\n    }\n    virtual_routes {\n        \
                198.51.100.0/25 via 192.0.2.254 dev eth0 table 100\n        \
                src 198.51.100.73 203.0.113.0/24 dev eth0\n        \
                blackhole 203.0.113.128/25 metric 7\n        \
                203.0.113.64/26 dev eth0 scope host\n    }\n    virtual_rules {\n        \
                from 198.51.100.0/25 table 100 priority 1000\n    }\n}\n";
    let mut d = vrrpd(&a, conf);
    until("BACKUP", Duration::from_secs(5), &[&d], || {
        state(&a) == "BACKUP"
    });
    assert_eq!(routes(&a, "100"), "", "a backup holds no route");
    assert_eq!(routes(&a, "main"), "");
    assert_eq!(rules(&a), "");
    until("MASTER", Duration::from_secs(10), &[&d], || {
        state(&a) == "MASTER"
    });
    until("the routes", Duration::from_secs(2), &[&d], || {
        routes(&a, "100").contains("198.51.100.0/25 via 192.0.2.254 dev eth0")
            && routes(&a, "main").contains("203.0.113.0/24 dev eth0 scope link src 198.51.100.73")
            && routes(&a, "main").contains("blackhole 203.0.113.128/25 metric 7")
            && routes(&a, "main").contains("203.0.113.64/26 dev eth0 scope host")
            && rules(&a).contains("from 198.51.100.0/25 lookup 100")
    });
    d.stop();
    assert_eq!(routes(&a, "100"), "", "gone with the VIPs: {}", d.log());
    assert_eq!(routes(&a, "main"), "");
    assert_eq!(rules(&a), "", "the rule gone too");
}

//! One VRID in both spaces: a multicast instance and a unicast instance with the same VRID on
//! one interface (keepalived keeps unicast and multicast apart). Each router's multicast socket
//! also receives the unicast adverts sent to it; they belong to the unicast twin and must be
//! neither counted as invalid nor taken for a foreign router, and both instances elect as if
//! alone. Judged by a client reaching both VIPs.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

#[allow(dead_code, reason = "each test binary uses part of the shared support")]
mod support;

use std::net::IpAddr;
use std::time::Duration;

use ipi_lab::Lab;
use nix::sys::signal::Signal;
use support::{answers, status, two_routers, until, vrrpd};

const MULTICAST_VIP: &str = "192.0.2.200";
const UNICAST_VIP: &str = "192.0.2.201";

fn conf(priority: u8, src: &str, peer: &str) -> String {
    format!(
        "global_defs {{\n    vrrp_version 3\n}}\n\
         vrrp_instance M {{\n    interface eth0\n    virtual_router_id 7\n    priority {priority}\n    \
         advert_int 0.1\n    virtual_ipaddress {{\n        {MULTICAST_VIP}/32\n    }}\n}}\n\
         vrrp_instance U {{\n    interface eth0\n    virtual_router_id 7\n    priority {priority}\n    \
         advert_int 0.1\n    unicast_src_ip {src}\n    unicast_peer {{\n        {peer}\n    }}\n    \
         virtual_ipaddress {{\n        {UNICAST_VIP}/32\n    }}\n}}\n"
    )
}

fn vip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Every instance of `host`'s status: no rejected advert, no foreign router.
fn clean(status: &serde_json::Value) -> bool {
    status["instances"].as_array().is_some_and(|all| {
        all.len() == 2
            && all.iter().all(|i| {
                i["invalid"]
                    .as_object()
                    .is_some_and(serde_json::Map::is_empty)
                    && i["foreign_routers"].as_array().is_some_and(Vec::is_empty)
            })
    })
}

#[test]
fn a_multicast_and_a_unicast_instance_share_a_vrid() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b, client, _answer) = two_routers(&mut lab);
    let (ia, ib) = (a.ipv4().to_string(), b.ipv4().to_string());
    let da = vrrpd(&a, &conf(150, &ia, &ib));
    let db = vrrpd(&b, &conf(100, &ib, &ia));
    let both = [MULTICAST_VIP, UNICAST_VIP].map(vip);
    until(
        "a to hold both VIPs",
        Duration::from_secs(10),
        &[&da, &db],
        || both.iter().all(|v| support::holds(&a, *v)),
    );
    // Two seconds of adverts (twenty per instance, each router's multicast socket receiving the
    // other's unicast ones too): b never takes either VIP, nothing is rejected or named.
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            both.iter().all(|v| !support::holds(&b, *v)),
            "b took a VIP\n{}",
            support::logs(&[&da, &db])
        );
    }
    until("both statuses", Duration::from_secs(3), &[&da, &db], || {
        status(&a)["instances"]
            .as_array()
            .is_some_and(|i| i.len() == 2)
            && status(&b)["instances"]
                .as_array()
                .is_some_and(|i| i.len() == 2)
    });
    for (host, s) in [("a", status(&a)), ("b", status(&b))] {
        assert!(clean(&s), "{host}: {s:#}");
    }
    for v in both {
        assert_eq!(answers(&client, v).as_deref(), Some("a"), "{v}");
    }
    // a dies: b takes both, each by its own protocol, and the client is served there.
    da.signal(Signal::SIGKILL).unwrap();
    for v in both {
        until(
            &format!("the client at b for {v}"),
            Duration::from_secs(5),
            &[&db],
            || answers(&client, v).as_deref() == Some("b"),
        );
    }
    assert!(clean(&status(&b)), "{:#}", status(&b));
}

//! The same haproxy.cfg under the real haproxy (Debian's package) and under lb-proxy, side by
//! side against the same stand-in API servers: the same monitor answers, the same servers
//! marked DOWN after the same number of failed checks, UP again after the same number of good
//! ones, and the same round robin.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use support::{backends, config, get, ApiServer, Kind, Ports, Proxy};

/// A server's status as the proxy's stats page says it: our JSON, or haproxy's CSV.
fn status(kind: Kind, ports: Ports, server: &str) -> String {
    match kind {
        Kind::LbProxy => support::status(ports, server),
        Kind::Haproxy => {
            let (_, csv) = get(ports.stats(), "/;csv").unwrap();
            csv.lines()
                .map(|l| l.split(',').collect::<Vec<_>>())
                .find(|f| f.len() > 17 && f[0] == "masters" && f[1] == server)
                .map(|f| f[17].split_whitespace().next().unwrap_or("").to_string())
                .unwrap_or_default()
        }
    }
}

/// What one proxy did in the scenario.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    monitor_all_up: (u16, String),
    other_path: u16,
    checks_to_down: u64,
    checks_to_up: u64,
    rotation: Vec<String>,
    monitor_all_down: (u16, String),
}

fn scenario(kind: Kind) -> Seen {
    let b = backends(3);
    let ports = Ports::new();
    let refs: Vec<&ApiServer> = b.iter().collect();
    let cfg = config(ports, &refs, "", "inter 300ms fall 3 rise 2");
    let p = Proxy::start(kind, &cfg, ports, &[]);
    let monitor = ports.monitor();
    let wait = |what: &str, f: &mut dyn FnMut() -> bool| {
        ipi_lab::wait_for(Duration::from_secs(10), Duration::from_millis(10), f)
            .unwrap_or_else(|| panic!("{kind:?}: timed out waiting for {what}\n{}", p.log()));
    };
    // Let every server be fully UP (one good check after the start).
    wait("first checks", &mut || {
        b.iter().all(|s| s.readyz_requests() >= 2)
    });
    let monitor_all_up = get(monitor, "/haproxy_ready").unwrap();
    let other_path = get(monitor, "/elsewhere").unwrap().0;

    // m1 fails /readyz: how many checks until it is DOWN?
    let before = b[1].readyz_requests();
    b[1].set_ready(false);
    wait("m1 DOWN", &mut || status(kind, ports, "m1") == "DOWN");
    let checks_to_down = b[1].readyz_requests() - before;
    let before = b[1].readyz_requests();
    b[1].set_ready(true);
    wait("m1 UP", &mut || status(kind, ports, "m1") == "UP");
    let checks_to_up = b[1].readyz_requests() - before;

    // Round robin, from wherever the rotation stands: each server once in every three.
    let mut rotation: Vec<String> = (0..6)
        .map(|_| get(ports.front(), "/").unwrap().1.trim().to_string())
        .collect();
    let first = rotation[..3].to_vec();
    assert_eq!(rotation[3..], first[..], "{kind:?}: {rotation:?}");
    rotation.sort();

    for s in &b {
        s.set_ready(false);
    }
    wait("all DOWN", &mut || {
        get(monitor, "/haproxy_ready").unwrap().0 == 503
    });
    let monitor_all_down = get(monitor, "/haproxy_ready").unwrap();
    Seen {
        monitor_all_up,
        other_path,
        checks_to_down,
        checks_to_up,
        rotation,
        monitor_all_down,
    }
}

#[test]
fn the_same_config_behaves_the_same_under_haproxy_and_lb_proxy() {
    if !ipi_lab::tool("haproxy", "haproxy") {
        return;
    }
    let haproxy = scenario(Kind::Haproxy);
    let ours = scenario(Kind::LbProxy);
    eprintln!("haproxy: {haproxy:?}\nlb-proxy: {ours:?}");
    // A check may be in flight when the status is read: one more at most.
    assert!((3..=4).contains(&haproxy.checks_to_down), "{haproxy:?}");
    assert!((3..=4).contains(&ours.checks_to_down), "{ours:?}");
    assert!((2..=3).contains(&haproxy.checks_to_up), "{haproxy:?}");
    assert!((2..=3).contains(&ours.checks_to_up), "{ours:?}");
    let strip = |s: Seen| Seen {
        checks_to_down: 0,
        checks_to_up: 0,
        ..s
    };
    assert_eq!(strip(ours), strip(haproxy));
}

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

/// `stats auth` under both: written in `defaults`, it guards the stats of a section with no
/// `stats` line of its own (page, JSON, and lb-proxy's metrics), for any method, and refuses a
/// missing header, a wrong password or a wrong user; a section with `stats` lines of its own
/// starts afresh (haproxy's rule), so only its own account opens it. TCP sections ignore the
/// inherited stats with haproxy's warning. No password reaches lb-proxy's log.
#[test]
fn stats_auth_guards_every_stats_page_as_haproxys_does() {
    if !ipi_lab::tool("haproxy", "haproxy") {
        return;
    }
    for kind in [Kind::Haproxy, Kind::LbProxy] {
        stats_auth(kind);
    }
}

/// The `Authorization` header of `creds` (base64 of the test's accounts and wrong guesses).
fn basic(creds: &str) -> String {
    let encoded = match creds {
        "admin:s3cr3t-pw" => "YWRtaW46czNjcjN0LXB3",
        "ops:0ther-pw" => "b3BzOjB0aGVyLXB3",
        "own:th1rd-pw" => "b3duOnRoMXJkLXB3",
        "admin:s3cr3t-pX" => "YWRtaW46czNjcjN0LXBY",
        "root:s3cr3t-pw" => "cm9vdDpzM2NyM3QtcHc=",
        _ => unreachable!(),
    };
    format!("Authorization: Basic {encoded}\r\n")
}

/// The status `page` at `at` answers with the credentials `creds` (none: empty).
fn code(at: std::net::SocketAddr, page: &str, creds: &str) -> u16 {
    let headers = if creds.is_empty() {
        String::new()
    } else {
        basic(creds)
    };
    support::request(at, page, &headers).unwrap().0
}

fn stats_auth(kind: Kind) {
    let b = backends(1);
    let ports = Ports::new();
    let own = std::net::SocketAddr::from((support::loopback(), support::free_port()));
    let cfg = format!(
        "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n  \
         stats auth admin:s3cr3t-pw\n  stats auth ops:0ther-pw\n\
         frontend main\n  bind {}\n  default_backend masters\n\
         frontend monitor\n  bind {}\n  mode http\n  monitor-uri /haproxy_ready\n\
         listen inherited\n  bind {}\n  mode http\n\
         listen own\n  bind {own}\n  mode http\n  stats uri /\n  stats auth own:th1rd-pw\n\
         backend masters\n  server m0 {}\n",
        ports.front(),
        ports.monitor(),
        ports.stats(),
        b[0].address()
    );
    let p = Proxy::start(kind, &cfg, ports, &[]);
    let lb = kind == Kind::LbProxy;
    let inherited = ["/haproxy?stats", "/haproxy?stats;json", "/metrics"];
    for page in &inherited[..if lb { 3 } else { 2 }] {
        let at = ports.stats();
        for (creds, want) in [
            ("", 401),
            ("admin:s3cr3t-pX", 401),
            ("root:s3cr3t-pw", 401),
            ("own:th1rd-pw", 401),
            ("admin:s3cr3t-pw", 200),
            ("ops:0ther-pw", 200),
        ] {
            assert_eq!(code(at, page, creds), want, "{kind:?} {page} {creds:?}");
        }
    }
    let own_pages = ["/", "/;json", "/metrics"];
    for page in &own_pages[..if lb { 3 } else { 2 }] {
        for (creds, want) in [("", 401), ("admin:s3cr3t-pw", 401), ("own:th1rd-pw", 200)] {
            assert_eq!(
                code(own, page, creds),
                want,
                "{kind:?} own {page} {creds:?}"
            );
        }
    }
    // The monitor answers anyone, as haproxy's does.
    assert_eq!(code(ports.monitor(), "/haproxy_ready", ""), 200);
    let log = p.log();
    for name in ["frontend 'main'", "backend 'masters'"] {
        let warning = format!("'stats' statement ignored for {name} as it requires HTTP mode");
        assert!(log.contains(&warning), "{kind:?}: {warning}\n{log}");
    }
    if lb {
        let dropped = "own: the `stats auth` of defaults does not apply here";
        assert!(log.contains(dropped), "{log}");
        for pw in ["s3cr3t", "0ther", "th1rd"] {
            assert!(!log.contains(pw), "a password in the log:\n{log}");
        }
    }
}

//! The cluster-in-a-box smoke test: the demo's scenario (tests/src/cluster.rs), every step
//! asserted. A bootstrap node, three masters and two workers start through the contrib units;
//! the bootstrap node holds the API VIP and a worker the Ingress VIP; every DNS server answers
//! api, api-int, a name under apps and every node; requests through the API VIP reach the
//! bootstrap's API server, then, once the bootstrap node is removed and the VIP is on a master,
//! spread over the three masters; the master with the API VIP dies and another takes it, the
//! requests spread over the two left; the router on the worker with the Ingress VIP stops and
//! the VIP moves to the other worker. Timings are printed, never asserted.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ipi_net_tests::cluster::{Cluster, Options, Role, DOMAIN};

/// The programs the units run, built in this test's profile (a no-op when they are fresh, as
/// after a workspace build).
fn build_programs(options: &Options) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.args(["build", "--quiet", "--bins"])
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"));
    for p in ["vrrpd", "lb-proxy", "mdns-publish", "dns-render"] {
        c.args(["-p", p]);
    }
    if options.bin_dir.ends_with("release") {
        c.arg("--release");
    }
    let status = c.status().unwrap();
    assert!(status.success(), "building the programs failed");
}

#[test]
fn the_cluster_in_a_box() {
    if !ipi_lab::available() {
        return;
    }
    let options = Options::beside_current_exe().unwrap();
    build_programs(&options);
    let t0 = Instant::now();
    let say = |line: &str| eprintln!("{:7.3} {line}", t0.elapsed().as_secs_f64());
    let mut cluster = Cluster::up(&options, &mut |l| say(l)).unwrap_or_else(|e| panic!("{e}"));
    let masters: Vec<String> = cluster
        .nodes()
        .iter()
        .filter(|n| n.role == Role::Master)
        .map(|n| n.name.clone())
        .collect();
    for n in cluster.nodes() {
        let want = match n.role {
            Role::Bootstrap => vec!["ipi-vrrpd.service"],
            Role::Master => vec![
                "ipi-vrrpd.service",
                "ipi-lb-proxy.service",
                "ipi-mdns-publish.service",
                "ipi-mdns-browse.service",
                "ipi-dnsmasq.service",
            ],
            Role::Worker => vec![
                "ipi-vrrpd.service",
                "ipi-mdns-publish.service",
                "ipi-mdns-browse.service",
                "ipi-dnsmasq.service",
            ],
        };
        for unit in want {
            assert!(
                n.runs(unit),
                "{} does not run {unit}:\n{}",
                n.name,
                n.logs()
            );
        }
    }

    // At rest: API VIP on the bootstrap node, Ingress on a worker, full DNS everywhere.
    let settled = cluster
        .settle(Duration::from_secs(90))
        .unwrap_or_else(|e| panic!("{e}"));
    say(&format!("settled after {:.3} s", settled.as_secs_f64()));
    let h = cluster.holders();
    assert_eq!(h.api, ["bootstrap"]);
    assert!(h.ingress[0].starts_with("worker-"), "{h:?}");
    let dns = cluster
        .wait_dns(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dns.len(), 5, "a DNS server on every master and worker");
    let want = cluster.expected_dns();
    assert_eq!(want[&format!("api.{DOMAIN}")], ["192.0.2.100"]);
    assert_eq!(want[&format!("x.apps.{DOMAIN}")], ["192.0.2.101"]);
    assert_eq!(want[&format!("worker-1.{DOMAIN}")], ["192.0.2.6"]);
    for d in &dns {
        assert_eq!(d.answers, want, "{} answers", d.server);
    }
    // The bootstrap node has no load balancer: its own API server answers.
    let spread = cluster.requests("worker-0", 6).unwrap();
    say(&format!("through the API VIP: {spread:?}"));
    assert_eq!(spread.answered.get("bootstrap"), Some(&6), "{spread:?}");

    // The bootstrap node goes: a master takes the API VIP; requests spread over the three.
    let m = cluster.remove_bootstrap().unwrap_or_else(|e| panic!("{e}"));
    say(&format!(
        "bootstrap removed: API VIP on {} after {:.3} s",
        m.to,
        m.took.as_secs_f64()
    ));
    assert!(masters.contains(&m.to), "{m:?}");
    let spread = cluster
        .spread_over("worker-0", 6, &masters, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    say(&format!("through the API VIP: {spread:?}"));

    // The master with the API VIP dies: another takes it, the two left serve.
    let k = cluster.kill_api_master().unwrap_or_else(|e| panic!("{e}"));
    say(&format!(
        "{} killed: API VIP on {} after {:.3} s",
        k.from,
        k.to,
        k.took.as_secs_f64()
    ));
    assert_eq!(k.from, m.to);
    assert!(masters.contains(&k.to) && k.to != k.from, "{k:?}");
    let left: Vec<String> = masters.iter().filter(|n| **n != k.from).cloned().collect();
    let spread = cluster
        .spread_over("worker-0", 6, &left, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
    say(&format!("through the API VIP: {spread:?}"));
    assert_eq!(
        cluster.holders().ingress,
        h.ingress,
        "the Ingress VIP stayed"
    );

    // The router on the worker with the Ingress VIP stops: the other worker takes it.
    let i = cluster
        .stop_ingress_router()
        .unwrap_or_else(|e| panic!("{e}"));
    say(&format!(
        "router on {} stopped: Ingress VIP on {} after {:.3} s",
        i.from,
        i.to,
        i.took.as_secs_f64()
    ));
    assert_eq!(i.from, h.ingress[0]);
    assert!(i.to.starts_with("worker-") && i.to != i.from, "{i:?}");
    // DNS still answers on the nodes left: the VIPs and the nodes that are up.
    let dns = cluster
        .wait_dns(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dns.len(), 4);
    for d in &dns {
        assert_eq!(
            d.answers[&format!("api.{DOMAIN}")],
            ["192.0.2.100"],
            "{}",
            d.server
        );
        assert_eq!(
            d.answers[&format!("x.apps.{DOMAIN}")],
            ["192.0.2.101"],
            "{}",
            d.server
        );
    }
    say("done");
}

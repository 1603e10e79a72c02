//! The cluster-in-a-box smoke test: the demo's scenario (tests/src/cluster.rs), every step
//! asserted. A bootstrap node, three masters and two workers start through the contrib units;
//! a client host beside them, no node, is the cluster's user. The bootstrap node holds the API
//! VIP and a worker the Ingress VIP; every node's DNS server, asked from the client, answers
//! api, api-int, a name under apps and every node; the client's requests through the API VIP
//! reach the bootstrap's API server. Then three faults, after each of which the client (which
//! talked to the VIP just before, so its ARP cache holds the old holder's MAC) must be served
//! through the VIP by a new holder within a bound from the VRRP timers, far below the time its
//! ARP entry would take to go stale: only the new holder's gratuitous ARP gets it there in
//! time. The bootstrap node is removed (the API VIP goes to a master; requests then spread
//! over the three masters); the master with the API VIP dies (another takes it; requests
//! spread over the two left); the router on the worker with the Ingress VIP stops (the client
//! is answered by the other worker's router). Times are printed; the bounds are asserted.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use ipi_core::vrrp::Version;
use ipi_net_tests::cluster::{
    build_programs, Cluster, Move, Options, Role, Stack, ADVERT_CS, API_VIP, CHK_INGRESS_CS,
    DOMAIN, INGRESS_VIP, MASTER_API, WORKER_INGRESS,
};
use ipi_net_tests::rfc;

/// What a move may take beyond its VRRP timers before the client is served: the vrrpd and
/// kernel work on a loaded two-core machine, and the client's attempts (300 ms each while its
/// SYNs are lost).
const MARGIN: Duration = Duration::from_secs(3);

/// When two candidates became master at once (equal priorities, the same Master_Down_Timer)
/// and the client heard the loser's gratuitous ARPs last: the holder that stays re-announces
/// the VIP as soon as it hears the loser's advert, which the loser sends with its own burst
/// (keepalived's garp_lower_prio_repeat, vrrpd's default too). One advert interval (OpenShift's
/// 1 s) covers a loser whose first advert was lost; before vrrpd did this, only the holder's
/// second burst, garp_master_delay (5 s) later, moved the client.
fn lower_prio_answer() -> Duration {
    Duration::from_secs(1)
}

/// Asserts that the client was served through the VIP by a new holder within `bound` of the
/// fault, and by the holder that stays within `bound` plus one advert interval; and that both
/// bounds are ones a missing gratuitous ARP would blow: below the time the client's ARP entry
/// (the old holder's MAC, in use just before the fault) takes to fail over by itself.
fn served_in_time(cluster: &Cluster, m: &Move, candidates: &[String], bound: Duration) {
    let floor = cluster.client_arp_floor().unwrap();
    let mut settled_bound = bound + lower_prio_answer();
    // keepalived's answer to a loser's advert is keepalived's timing, not ours: on a loaded
    // machine it came 8.4 s after the fault against a 7.7 s bound once (CI). The upstream
    // stack gets UPSTREAM_SLACK more, which still fails a missing re-announce: the bound stays
    // below the client's ARP entry going stale by itself (asserted next).
    if cluster.options().stack == Stack::Upstream {
        settled_bound += UPSTREAM_SLACK;
    }
    assert!(
        settled_bound < floor,
        "the bound {settled_bound:?} would not tell a gratuitous ARP from the client's ARP entry \
         going stale after {floor:?}"
    );
    assert!(
        m.served <= bound,
        "the client was served through the VIP {:.3} s after the fault, later than the {:.3} s \
         the VRRP timers allow (ARP entry before: {:?}): {m:?}",
        m.served.as_secs_f64(),
        bound.as_secs_f64(),
        m.before
    );
    assert!(
        candidates.contains(&m.via) && m.via != m.from,
        "the client's first answer went to {} (its ARP entry), not a new holder: {m:?}",
        m.via
    );
    assert!(
        m.settled <= settled_bound,
        "the client was served through the VIP by {} {:.3} s after the fault, later than the \
         {:.3} s its answer to a loser's advert allows: {m:?}",
        m.to,
        m.settled.as_secs_f64(),
        settled_bound.as_secs_f64()
    );
}

/// What keepalived (the upstream stack) may take beyond our bound to answer a loser's advert
/// on a loaded machine: 0.7 s over was seen once; 3 s leaves room and stays under the floor.
const UPSTREAM_SLACK: Duration = Duration::from_secs(3);

fn say_move(say: &dyn Fn(&str), what: &str, m: &Move, bound: Duration) {
    say(&format!(
        "{what}: {} -> {}, on {}'s eth0 after {:.3} s; the client served after {:.3} s (bound \
         {:.3} s) by {} via {}'s MAC (before: {}'s, {:?}), via {}'s after {:.3} s",
        m.from,
        m.to,
        m.to,
        m.took.as_secs_f64(),
        m.served.as_secs_f64(),
        bound.as_secs_f64(),
        m.answer,
        m.via,
        m.from,
        m.before.state,
        m.to,
        m.settled.as_secs_f64()
    ));
}

/// Every node of its role runs what the role's units say (the stack's VRRP daemon and load
/// balancer, ours or upstream's).
fn units_run(cluster: &Cluster) {
    let (vip, proxy) = (cluster.vip_unit(), cluster.proxy_unit());
    for n in cluster.nodes() {
        let want = match n.role {
            Role::Bootstrap => vec![vip],
            Role::Master => vec![
                vip,
                proxy,
                "ipi-mdns-publish.service",
                "ipi-mdns-browse.service",
                "ipi-dnsmasq.service",
            ],
            Role::Worker => vec![
                vip,
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
        // What a signal to the VIP's daemon reaches: keepalived's VRRP child too.
        let pids = n.unit_pids(vip);
        let least = if vip == "keepalived.service" { 2 } else { 1 };
        assert!(pids.len() >= least, "{} {vip}: {pids:?}", n.name);
    }
}

/// At rest: API VIP on the bootstrap node, Ingress on a worker, full DNS from every node's
/// server, asked from the client; the bootstrap's own API server answers through the VIP.
fn at_rest(cluster: &Cluster, say: &dyn Fn(&str)) {
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
        assert_eq!(d.answers, want, "{} answers the client", d.server);
    }
    // The bootstrap node has no load balancer: its own API server answers.
    let spread = cluster.requests(6).unwrap();
    say(&format!("through the API VIP: {spread:?}"));
    assert_eq!(spread.answered.get("bootstrap"), Some(&6), "{spread:?}");
}

/// The bootstrap node goes, then the master with the API VIP dies: each time the client is
/// served by a new holder in time, then the requests spread over the API servers left.
fn api_moves(cluster: &mut Cluster, masters: &[String], say: &dyn Fn(&str)) {
    // The masters become master Skew_Time after the bootstrap's priority-0 advert.
    let bound = rfc::skew_time(Version::V2, MASTER_API, rfc::centis(ADVERT_CS)) + MARGIN;
    let m = cluster.remove_bootstrap().unwrap_or_else(|e| panic!("{e}"));
    say_move(say, "bootstrap removed: API VIP", &m, bound);
    assert!(masters.contains(&m.to), "{m:?}");
    served_in_time(cluster, &m, masters, bound);
    let spread = cluster
        .spread_over(6, masters, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    say(&format!("through the API VIP: {spread:?}"));
    // A Kubernetes client's health check, over TLS, through the master's load balancer.
    let readyz = cluster.readyz().unwrap_or_else(|e| panic!("{e}"));
    say(&format!("GET https://{API_VIP}:6443/readyz: {readyz}"));
    assert_eq!(readyz, "200 ok");

    // The master's last advert came before the cut: the others take over within one
    // Master_Down_Interval of it.
    let bound = rfc::master_down_interval(Version::V2, MASTER_API, rfc::centis(ADVERT_CS)) + MARGIN;
    let k = cluster.kill_api_master().unwrap_or_else(|e| panic!("{e}"));
    say_move(say, &format!("{} killed: API VIP", k.from), &k, bound);
    assert_eq!(k.from, m.to);
    let left: Vec<String> = masters.iter().filter(|n| **n != k.from).cloned().collect();
    assert!(left.contains(&k.to), "{k:?}");
    served_in_time(cluster, &k, &left, bound);
    let spread = cluster
        .spread_over(6, &left, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    say(&format!("through the API VIP: {spread:?}"));
}

/// The router on the worker with the Ingress VIP stops: the client's request to the router
/// through the VIP is answered by the other worker's in time.
fn ingress_move(cluster: &mut Cluster, holder: &str, say: &dyn Fn(&str)) {
    // chk_ingress fails within an interval; the other worker takes over a Master_Down_Interval
    // after the holder's last advert at full priority.
    let bound = rfc::centis(CHK_INGRESS_CS)
        + rfc::master_down_interval(Version::V2, WORKER_INGRESS, rfc::centis(ADVERT_CS))
        + MARGIN;
    let i = cluster
        .stop_ingress_router()
        .unwrap_or_else(|e| panic!("{e}"));
    say_move(
        say,
        &format!("router on {} stopped: Ingress VIP", i.from),
        &i,
        bound,
    );
    assert_eq!(i.from, holder);
    assert!(i.to.starts_with("worker-") && i.to != i.from, "{i:?}");
    assert_eq!(i.answer, format!("router on {}", i.to), "{i:?}");
    let workers: Vec<String> = cluster
        .names(Role::Worker)
        .into_iter()
        .map(String::from)
        .collect();
    served_in_time(cluster, &i, &workers, bound);
}

/// The demo's scenario on `stack`, every step asserted.
fn scenario(stack: Stack) {
    if !ipi_lab::available() {
        return;
    }
    let options = Options {
        stack,
        ..Options::beside_current_exe().unwrap()
    };
    build_programs(&options).unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    let say = |line: &str| eprintln!("{:7.3} {line}", t0.elapsed().as_secs_f64());
    let mut cluster = Cluster::up(&options, &mut |l| say(l)).unwrap_or_else(|e| panic!("{e}"));
    let masters: Vec<String> = cluster
        .names(Role::Master)
        .into_iter()
        .map(String::from)
        .collect();
    units_run(&cluster);
    at_rest(&cluster, &say);
    let ingress = cluster.holders().ingress;
    say(&format!(
        "the client's ARP entry for a VIP would go to a new holder by itself after {:?}",
        cluster.client_arp_floor()
    ));

    api_moves(&mut cluster, &masters, &say);
    assert_eq!(cluster.holders().ingress, ingress, "the Ingress VIP stayed");
    ingress_move(&mut cluster, &ingress[0], &say);

    // DNS still answers the client on the nodes left: the VIPs and the nodes that are up.
    let dns = cluster
        .wait_dns(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dns.len(), 4);
    for d in &dns {
        assert_eq!(
            d.answers[&format!("api.{DOMAIN}")],
            [API_VIP.to_string()],
            "{}",
            d.server
        );
        assert_eq!(
            d.answers[&format!("x.apps.{DOMAIN}")],
            [INGRESS_VIP.to_string()],
            "{}",
            d.server
        );
    }
    say("done");
    drop(cluster);
    say("torn down");
}

#[test]
fn the_cluster_in_a_box() {
    scenario(Stack::Ours);
}

/// The same scenario with keepalived and haproxy (configurations from `vrrpd render` and
/// `lb-proxy render`) in place of vrrpd and lb-proxy: what the client sees is asserted the same.
#[test]
fn the_cluster_in_a_box_upstream() {
    scenario(Stack::Upstream);
}

//! `cluster-demo`: the cluster in a box (tests/src/cluster.rs). A bootstrap node, three masters
//! and two workers in network namespaces run what OpenShift runs on them, started through the
//! contrib units, and a client host beside them uses the cluster; the demo prints who holds
//! each VIP, every node's DNS answers to the client and where the client's requests through
//! the API VIP go, then removes the bootstrap node, kills the master with the API VIP and stops
//! the router on the worker with the Ingress VIP, timing each move twice: until the VIP is on
//! the new holder, and until the client is served through it again. Ctrl-C or the end tears
//! everything down.
//!
//! `--bin-dir DIR` (default: this executable's directory) holds vrrpd, lb-proxy, mdns-publish
//! and dns-render; `--contrib DIR` (default: this source tree's) the units.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ipi_core::vrrp::{timers, Version};
use ipi_net_tests::cluster::{
    Cluster, ClusterError, Move, Options, Role, Spread, ADVERT_CS, API_VIP, CHK_INGRESS_CS,
    INGRESS_VIP, MASTER_API, WORKER_INGRESS,
};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

fn main() -> ExitCode {
    let mut options = match Options::beside_current_exe() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cluster-demo: {e}");
            return ExitCode::from(1);
        }
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            // Absolute: the programs start inside the nodes' mount namespaces.
            ("--bin-dir", Some(dir)) => options.bin_dir = absolute(&dir),
            ("--contrib", Some(dir)) => options.contrib = absolute(&dir),
            _ => {
                eprintln!("usage: cluster-demo [--bin-dir DIR] [--contrib DIR]");
                return ExitCode::from(2);
            }
        }
    }
    if !ipi_lab::has_net_admin() {
        eprintln!("cluster-demo: needs CAP_NET_ADMIN to build network namespaces: run it as root");
        return ExitCode::from(1);
    }
    match Signals::new([SIGINT, SIGTERM]) {
        Ok(mut signals) => {
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    eprintln!("\ninterrupted: tearing the cluster down");
                    ipi_lab::teardown_all();
                    std::process::exit(130);
                }
            });
        }
        Err(e) => eprintln!("cluster-demo: Ctrl-C will not clean up: {e}"),
    }
    match demo(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cluster-demo: {e}");
            ExitCode::from(1)
        }
    }
}

fn demo(options: &Options) -> Result<(), ClusterError> {
    let t0 = Instant::now();
    let at = || format!("{:7.3} s", t0.elapsed().as_secs_f64());
    println!(
        "cluster lab.example.com: API VIP {API_VIP}, Ingress VIP {INGRESS_VIP}, machine network \
         192.0.2.0/24\nunits from {}, our programs from {}\n",
        options.contrib.join("roles").display(),
        options.bin_dir.display()
    );
    println!("==> standing the nodes up (units in their roles' order, After= respected)");
    let mut cluster = Cluster::up(options, &mut |line| println!("{}  {line}", at()))?;

    let settled = cluster.settle(Duration::from_secs(120))?;
    println!(
        "\n==> {}  at rest {:.1} s after the units started",
        at(),
        settled.as_secs_f64()
    );
    vips(&cluster);
    vrrp(&cluster);
    dns(&cluster);
    let spread = cluster.requests(6)?;
    println!(
        "  6 requests to {API_VIP}:6443 from the client: {} (the bootstrap node holds the VIP \
         and serves its own API)",
        spread_text(&spread)
    );
    if let Some(floor) = cluster.client_arp_floor() {
        println!(
            "  the client's ARP entry for a VIP would find a new holder by itself {:.0} s after \
             its last answer; a gratuitous ARP from the new holder tells it at once",
            floor.as_secs_f64()
        );
    }
    api_moves(&mut cluster, &at)?;
    ingress_move(&mut cluster, &at)?;
    println!("\n==> {}  at the end", at());
    vips(&cluster);
    dns(&cluster);
    println!("\n==> {}  tearing down", at());
    drop(cluster);
    println!("{}  done", at());
    Ok(())
}

/// The bootstrap node leaves, then the master holding the API VIP dies: each move timed, and
/// where requests through the VIP go after it.
fn api_moves(cluster: &mut Cluster, at: &dyn Fn() -> String) -> Result<(), ClusterError> {
    println!(
        "\n==> {}  removing the bootstrap node (its units stop: vrrpd resigns with priority 0)",
        at()
    );
    let m = cluster.remove_bootstrap()?;
    println!(
        "{}  API VIP: {} (a master's Skew_Time: {:.2} s)",
        at(),
        move_text(&m),
        cs(timers::skew_time(Version::V2, MASTER_API, ADVERT_CS))
    );
    let masters: Vec<String> = cluster
        .names(Role::Master)
        .into_iter()
        .map(String::from)
        .collect();
    let spread = cluster.spread_over(6, &masters, Duration::from_secs(30))?;
    println!(
        "{}  6 requests to {API_VIP}:6443 from the client, redirected to {}'s lb-proxy (:9445): \
         {}",
        at(),
        m.to,
        spread_text(&spread)
    );

    println!(
        "\n==> {}  killing {} (off the network, every process SIGKILLed)",
        at(),
        m.to
    );
    let k = cluster.kill_api_master()?;
    println!(
        "{}  API VIP: {} (Master_Down_Interval: {:.2} s after {}'s last advert, which came up \
         to 1 s before the cut)",
        at(),
        move_text(&k),
        cs(timers::master_down_interval(
            Version::V2,
            MASTER_API,
            ADVERT_CS
        )),
        k.from
    );
    let left: Vec<String> = masters.iter().filter(|n| **n != k.from).cloned().collect();
    let spread = cluster.spread_over(6, &left, Duration::from_secs(30))?;
    println!(
        "{}  6 requests to {API_VIP}:6443 from the client: {}",
        at(),
        spread_text(&spread)
    );

    Ok(())
}

/// The router on the worker holding the Ingress VIP stops: the move timed.
fn ingress_move(cluster: &mut Cluster, at: &dyn Fn() -> String) -> Result<(), ClusterError> {
    let holder = cluster.holders().ingress.join(" ");
    println!(
        "\n==> {}  stopping the router on {holder} (its chk_ingress fails)",
        at()
    );
    let i = cluster.stop_ingress_router()?;
    println!(
        "{}  Ingress VIP: {} (chk_ingress every {:.0} s, then Master_Down_Interval {:.2} s)",
        at(),
        move_text(&i),
        cs(u32::from(CHK_INGRESS_CS)),
        cs(timers::master_down_interval(
            Version::V2,
            WORKER_INGRESS,
            ADVERT_CS
        ))
    );
    Ok(())
}

fn absolute(dir: &str) -> PathBuf {
    std::path::absolute(dir).unwrap_or_else(|_| PathBuf::from(dir))
}

fn cs(centiseconds: u32) -> f64 {
    f64::from(centiseconds) / 100.0
}

fn vips(cluster: &Cluster) {
    let h = cluster.holders();
    println!("  API VIP {API_VIP} on {}", h.api.join(" "));
    println!("  Ingress VIP {INGRESS_VIP} on {}", h.ingress.join(" "));
}

fn vrrp(cluster: &Cluster) {
    let vrrpd = cluster.options().bin_dir.join("vrrpd");
    for n in cluster.nodes().iter().filter(|n| n.is_up()) {
        let instances: Vec<String> = n
            .vrrp(&vrrpd)
            .iter()
            .map(|(i, s, p)| format!("{i} {s} {p}"))
            .collect();
        println!("  vrrpd on {:<9} {}", n.name, instances.join(", "));
    }
}

fn dns(cluster: &Cluster) {
    let answers = cluster.dns();
    let servers: Vec<&str> = answers.iter().map(|a| a.server.as_str()).collect();
    println!(
        "  DNS, each node's dnsmasq asked from the client (dig @NODE-IP): {}",
        servers.join(" ")
    );
    for (name, want) in cluster.expected_dns() {
        let mut by_answer: Vec<(Vec<String>, Vec<&str>)> = Vec::new();
        for a in &answers {
            let got = a.answers.get(&name).cloned().unwrap_or_default();
            match by_answer.iter_mut().find(|(g, _)| *g == got) {
                Some((_, who)) => who.push(&a.server),
                None => by_answer.push((got, vec![&a.server])),
            }
        }
        for (got, who) in by_answer {
            let text = if got.is_empty() {
                "(no answer)".to_string()
            } else {
                got.join(" ")
            };
            let mark = if got == want {
                ""
            } else {
                "  <- expected another answer"
            };
            let from = if who.len() == answers.len() {
                "every node".to_string()
            } else {
                who.join(" ")
            };
            println!("    {name:<28} {text:<14} from {from}{mark}");
        }
    }
}

/// A move: on the new holder after so long, the client served through the VIP after so long,
/// by whom.
fn move_text(m: &Move) -> String {
    format!(
        "{} -> {}: on {}'s eth0 after {:.3} s, the client served through it after {:.3} s ({}, \
         sent to {}'s MAC){}",
        m.from,
        m.to,
        m.to,
        m.took.as_secs_f64(),
        m.served.as_secs_f64(),
        m.answer,
        m.via,
        if m.via == m.to {
            String::new()
        } else {
            format!(", through {} after {:.3} s", m.to, m.settled.as_secs_f64())
        }
    )
}

fn spread_text(s: &Spread) -> String {
    let mut parts: Vec<String> = s.answered.iter().map(|(n, c)| format!("{n} {c}")).collect();
    if s.failed > 0 {
        parts.push(format!("no answer {}", s.failed));
    }
    parts.join(", ")
}

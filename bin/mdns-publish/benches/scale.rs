//! Discovery at cluster scale, mdns-publish beside avahi: N nodes on one link, one network
//! namespace each, all started at once; for each N and stack:
//!
//! - the time until every inventory holds every node (from the first process started);
//! - at steady state (past the first 20 s after that), the packets and bytes the nodes send
//!   onto the link a second, in all and per node, and CPU and RSS per node (all its discovery
//!   processes: mdns-publish's `run` and `browse --watch`; avahi-daemon, its D-Bus daemon,
//!   avahi-publish and avahi-browse), the datagrams dropped for full receive buffers, and how
//!   busy the machine's cores were (what tells the machine's limit from the protocol's);
//! - the time until a node killed with SIGKILL has left every other inventory.
//!
//! `sudo cargo bench -p mdns-publish --bench scale [-- N...] [--avahi-up-to N]`: by default
//! 20, 100, 300 and 500 nodes, avahi at 20 and 100 (four processes a node). Up to 252 nodes
//! are on IPv4, beyond that on IPv6 (a /24 holds no more). Every node's processes share the
//! machine's cores: where they cannot keep up (the table says so), the limit is the machine's,
//! and the CPU per node is the figure a real node, with cores of its own, would see.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::time::Duration;

#[path = "../tests/support/scale.rs"]
mod scale;

use scale::{Cluster, Stack, Steady};

/// How long a cluster may take until every inventory holds every node.
const COMPLETE: Duration = Duration::from_secs(120);
/// From a complete cluster to the steady state's measurement.
const SETTLE: Duration = Duration::from_secs(20);
/// The steady state's measurement.
const WINDOW: Duration = Duration::from_secs(30);
/// How long a killed node is waited for (avahi keeps it until its records' TTL: 120 s for
/// addresses, 75 minutes for the service pointer).
const GONE: Duration = Duration::from_secs(30);

struct Row {
    stack: Stack,
    nodes: usize,
    ipv6: bool,
    complete: Result<Duration, usize>,
    steady: Steady,
    gone: Option<Duration>,
}

fn main() {
    if !ipi_lab::has_net_admin() {
        eprintln!("scale: needs CAP_NET_ADMIN (run as root)");
        return;
    }
    let (sizes, mut avahi_up_to) = arguments();
    if ipi_lab::avahi::Avahi::missing() {
        eprintln!("scale: avahi-daemon and avahi-utils are not installed: no avahi rows");
        avahi_up_to = 0;
    }
    let mut rows = Vec::new();
    for &n in &sizes {
        for stack in [Stack::Ours, Stack::Avahi] {
            if stack == Stack::Avahi && n > avahi_up_to {
                continue;
            }
            let row = run(n, stack);
            print_row(&row);
            rows.push(row);
        }
    }
    println!("\n| nodes | stack | every inventory complete | packets/s (per node) | bytes/s (per node) | CPU per node | RSS per node | dropped, full receive buffers | machine busy | killed node gone from every inventory |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for row in &rows {
        print_row(row);
    }
}

/// The sizes (`N...`, default 20 100 300 500) and the largest avahi runs at.
fn arguments() -> (Vec<usize>, usize) {
    let mut sizes = Vec::new();
    let mut avahi_up_to = 100;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--avahi-up-to" => {
                avahi_up_to = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--avahi-up-to N")
            }
            "--bench" => {}
            n => sizes.push(
                n.parse()
                    .unwrap_or_else(|_| panic!("not a number of nodes: {n}")),
            ),
        }
    }
    if sizes.is_empty() {
        sizes = vec![20, 100, 300, 500];
    }
    (sizes, avahi_up_to)
}

fn run(n: usize, stack: Stack) -> Row {
    eprintln!("scale: {n} nodes, {stack:?}");
    let mut cluster = Cluster::start(n, stack);
    let complete = cluster.until_complete(COMPLETE);
    if let Err(k) = complete {
        eprintln!("{k} of {n} complete; {}", cluster.incomplete_log());
    }
    std::thread::sleep(SETTLE);
    let steady = cluster.steady(WINDOW);
    let gone = cluster.kill(n / 2, GONE);
    Row {
        stack,
        nodes: n,
        ipv6: cluster.ipv6,
        complete,
        steady,
        gone,
    }
}

fn print_row(r: &Row) {
    let stack = match r.stack {
        Stack::Ours => "mdns-publish",
        Stack::Avahi => "avahi",
    };
    let family = if r.ipv6 { "IPv6" } else { "IPv4" };
    let complete = match r.complete {
        Ok(t) => format!("{:.1} s", t.as_secs_f64()),
        Err(k) => format!("**{k} of {}** after {} s", r.nodes, COMPLETE.as_secs()),
    };
    let gone = r.gone.map_or_else(
        || format!("> {} s", GONE.as_secs()),
        |t| format!("{:.1} s", t.as_secs_f64()),
    );
    let s = &r.steady;
    let n = r.nodes as f64;
    println!(
        "| {} ({family}) | {stack} | {complete} | {:.0} ({:.2}) | {:.0} ({:.0}) | {:.1} ms/s | {:.1} MiB | {:.0}/s | {:.0} % | {gone} |",
        r.nodes,
        s.packets_per_s,
        s.packets_per_node(),
        s.bytes_per_s,
        s.bytes_per_s / n,
        s.cpu_ms_per_s_per_node,
        s.rss_kib_per_node / 1024.0,
        s.drops_per_s,
        s.machine_busy * 100.0,
    );
}

//! vrrpd's pool mode (issue #21) at 30 and 300 addresses: three nodes hold every address
//! reserved from a MetalLB pool in ipam's file store, each a VRRP v3 instance with 0.1 s
//! adverts, unicast, spread by rendezvous hashing. Measured:
//!
//! - settle: from the three starting to every address on its leader alone;
//! - failover: from a node's death (vrrpd SIGKILLed, its cable pulled) to every one of its
//!   addresses on its next node; the bound is 0.4 s;
//! - a reservation added: from the store's change to the address held;
//! - CPU per node over 10 s once settled, and RSS per node.
//!
//! 300 addresses are 150 IPv4 and 150 IPv6: VRIDs are 1-255 per interface and family. There is
//! no upstream to run beside it: MetalLB's speaker needs a Kubernetes API server; its users
//! report layer-2 failovers of seconds (metallb #298, #767, #1147). `cargo bench -p vrrpd
//! --bench pool` as root; `POOL_SIZES=30` picks the sizes.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ipi_net_tests::pool::{PoolLab, StoreKind};

const NAMES: [&str; 3] = ["n1", "n2", "n3"];

/// What one size measured.
#[derive(Debug, Clone)]
struct Row {
    addresses: usize,
    settle: Duration,
    failover: Duration,
    moved: usize,
    added: Duration,
    /// Per node: CPU over the idle window, RSS in KiB.
    idle: Vec<(Duration, u64)>,
}

fn leader(address: IpAddr, alive: &[&str]) -> String {
    vrrpd::pool::spread::rank(alive, |n| n, &address.to_string())[0].to_string()
}

/// Waits until the nodes `among` hold `want`; how long from `since`, or None after 60 s.
fn held(
    p: &PoolLab,
    among: &[usize],
    want: &BTreeMap<IpAddr, Vec<String>>,
    since: Instant,
) -> Option<Duration> {
    let addresses: Vec<IpAddr> = want.keys().copied().collect();
    while since.elapsed() < Duration::from_secs(60) {
        if p.holders(&addresses, among) == *want {
            return Some(since.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

fn round(vrrpd: &std::path::Path, size: usize) -> Option<Row> {
    let (v4, v6) = if size > 200 {
        (size / 2, size - size / 2)
    } else {
        (size, 0)
    };
    let v4 = u32::try_from(v4).ok()?;
    let v6 = u32::try_from(v6 + 10).ok()?;
    let mut p = PoolLab::new(StoreKind::File, 3, v4, v6).ok()?;
    let addresses: Vec<IpAddr> = (0..size)
        .map(|i| p.reserve(&format!("svc{i}"), None))
        .collect();
    let want: BTreeMap<IpAddr, Vec<String>> = addresses
        .iter()
        .map(|a| (*a, vec![leader(*a, &NAMES)]))
        .collect();
    let started = Instant::now();
    for n in 0..3 {
        p.start(n, vrrpd, &[]).ok()?;
    }
    let settle = held(&p, &[0, 1, 2], &want, started)?;
    let before: Vec<_> = p
        .vrrpds
        .iter()
        .flatten()
        .map(ipi_lab::Daemon::usage)
        .collect();
    std::thread::sleep(Duration::from_secs(10));
    let idle = (p.vrrpds.iter().flatten().zip(&before))
        .map(|(d, b)| {
            let u = d.usage();
            (u.cpu.saturating_sub(b.cpu), u.rss_kib)
        })
        .collect();
    let survivors = ["n1", "n3"];
    let after: BTreeMap<IpAddr, Vec<String>> = (want.iter())
        .filter(|(_, h)| h[0] == "n2")
        .map(|(a, _)| (*a, vec![leader(*a, &survivors)]))
        .collect();
    let killed = p.kill(1).ok()?;
    let failover = held(&p, &[0, 2], &after, killed)?;
    let added_at = Instant::now();
    let late = p.reserve("late", None);
    let one = BTreeMap::from([(late, vec![leader(late, &survivors)])]);
    let added = held(&p, &[0, 2], &one, added_at)?;
    Some(Row {
        addresses: size,
        settle,
        failover,
        moved: after.len(),
        added,
        idle,
    })
}

fn main() {
    if !ipi_lab::has_net_admin() {
        eprintln!("pool: needs CAP_NET_ADMIN (run as root)");
        return;
    }
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let sizes: Vec<usize> = std::env::var("POOL_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![30, 300]);
    println!("| addresses | settle | failover of a node's addresses | a reservation held | CPU / 10 s per node | RSS per node |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for size in sizes {
        let Some(r) = round(&vrrpd, size) else {
            println!("| {size} | did not settle or move within 60 s | | | | |");
            continue;
        };
        eprintln!("{r:?}");
        let cpu: Vec<String> = r
            .idle
            .iter()
            .map(|(c, _)| format!("{:.1} ms", c.as_secs_f64() * 1e3))
            .collect();
        let rss: Vec<String> = r
            .idle
            .iter()
            .map(|(_, k)| format!("{:.1} MB", *k as f64 / 1024.0))
            .collect();
        println!(
            "| {} | {:.3} s | {:.3} s ({} addresses) | {:.3} s | {} | {} |",
            r.addresses,
            r.settle.as_secs_f64(),
            r.failover.as_secs_f64(),
            r.moved,
            r.added.as_secs_f64(),
            cpu.join(", "),
            rss.join(", ")
        );
    }
}

//! vrrpd beside keepalived with many instances on one interface (issue #15): two routers, one
//! VIP per instance, VRRPv3, 1 s adverts ([`Many`]), rounds alternating keepalived and vrrpd,
//! ratios printed (vrrpd / keepalived; below 1.0 is better).
//!
//! - settle: from both starting to the master holding every VIP and the backup none;
//! - failover: from the master's link cut to the backup holding every VIP;
//! - idle CPU of the backup over 10 s once settled;
//! - RSS of the backup and of the master.
//!
//! 10, 100, 500 and 1,000 instances. VRIDs are 1-255 per interface, family and mode: up to 500
//! they are multicast (IPv4, then IPv6 from 250), 1,000 adds 500 unicast instances from a
//! configured source ([`Many`]). `cargo bench -p vrrpd --bench scale` as root; `SCALE=10,100`
//! picks the sizes.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ipi_lab::{wait_for, Host, Lab};
use ipi_net_tests::vrrp::{Many, Router, Speaker};

const SPEAKERS: [Speaker; 2] = [Speaker::Keepalived, Speaker::Vrrpd];

/// What one round measured (NaN: it did not happen within 30 s).
#[derive(Debug, Clone, Copy)]
struct Round {
    settle: f64,
    failover: f64,
    idle_cpu_ms: f64,
    backup_rss: f64,
    master_rss: f64,
}

fn main() {
    if !ipi_lab::has_net_admin() {
        eprintln!("scale: needs CAP_NET_ADMIN (run as root)");
        return;
    }
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let sizes: Vec<usize> = std::env::var("SCALE")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 100, 500, 1000]);
    let mut rows = Vec::new();
    for &n in &sizes {
        let mut got = Vec::new();
        for speaker in SPEAKERS {
            let r = round(speaker, n, &vrrpd);
            eprintln!("{} {n}: {r:?}", speaker.name());
            got.push(r);
        }
        rows.push((n, got[0], got[1]));
    }
    println!("\n| instances | measure | keepalived | vrrpd | ratio |");
    println!("| --- | --- | --- | --- | --- |");
    for (n, k, v) in rows {
        for (label, kv, vv, unit) in [
            ("settle", k.settle, v.settle, "s"),
            ("failover of all", k.failover, v.failover, "s"),
            ("backup idle CPU / 10 s", k.idle_cpu_ms, v.idle_cpu_ms, "ms"),
            ("backup RSS", k.backup_rss, v.backup_rss, "KiB"),
            ("master RSS", k.master_rss, v.master_rss, "KiB"),
        ] {
            let ratio = if kv > 0.0 { vv / kv } else { f64::NAN };
            println!("| {n} | {label} | {kv:.3} {unit} | {vv:.3} {unit} | {ratio:.2} |");
        }
    }
}

fn held(host: &Host, vips: &[IpAddr]) -> usize {
    let have: BTreeSet<IpAddr> = host
        .addresses()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .collect();
    vips.iter().filter(|v| have.contains(v)).count()
}

fn round(speaker: Speaker, n: usize, vrrpd: &PathBuf) -> Round {
    let many = Many::new(n);
    let vips = many.vips();
    let mut lab = Lab::new().unwrap_or_else(|e| panic!("{e}"));
    let a = lab.host("a").unwrap_or_else(|e| panic!("{e}"));
    let b = lab.host("b").unwrap_or_else(|e| panic!("{e}"));
    let routers = [&a, &b];
    let start = Instant::now();
    let ra = Router::start_with(
        &a,
        speaker,
        &many.config(&a, 150, &routers),
        150,
        Some(vrrpd),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rb = Router::start_with(
        &b,
        speaker,
        &many.config(&b, 100, &routers),
        100,
        Some(vrrpd),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let settled = wait_for(Duration::from_secs(30), Duration::from_millis(20), || {
        held(&a, &vips) == n && held(&b, &vips) == 0
    });
    let settle = settled.map_or(f64::NAN, |_| start.elapsed().as_secs_f64());
    std::thread::sleep(Duration::from_secs(2));
    let before = rb.daemon.usage().cpu;
    std::thread::sleep(Duration::from_secs(10));
    let (ub, ua) = (rb.daemon.usage(), ra.daemon.usage());
    let idle_cpu_ms = ub.cpu.saturating_sub(before).as_secs_f64() * 1000.0;
    lab.partition(&a).unwrap_or_else(|e| panic!("{e}"));
    let cut = Instant::now();
    let moved = wait_for(Duration::from_secs(30), Duration::from_millis(10), || {
        held(&b, &vips) == n
    });
    let failover = moved.map_or(f64::NAN, |_| cut.elapsed().as_secs_f64());
    #[allow(clippy::cast_precision_loss, reason = "KiB of a process fit an f64")]
    Round {
        settle,
        failover,
        idle_cpu_ms,
        backup_rss: ub.rss_kib as f64,
        master_rss: ua.rss_kib as f64,
    }
}

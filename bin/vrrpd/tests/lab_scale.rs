//! Many instances on one interface (issue #15): two routers, one VIP per instance, VRRPv3,
//! 1 s adverts, vrrpd beside keepalived with the same configuration, judged by a client.
//!
//! VRIDs are 1-255 per interface, family and mode (RFC 5798 5.2.3; keepalived keeps unicast and
//! multicast apart), so 1,000 instances on one interface are four quarters of 250 (see
//! [`Many`]): IPv4 and IPv6 multicast, IPv4 and IPv6 unicast from a configured source. Each run
//! checks, for every VIP: after settling exactly one router holds it and the client reaches the
//! master there; after the master's link is cut the backup holds it within
//! Master_Down_Interval plus an allowance, the client reaches it there, and the bridge carried
//! a gratuitous ARP (IPv4) or an unsolicited NA (IPv6) from the backup within 1 s of the first.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ipi_lab::{wait_for, Host, Lab};
use ipi_net_tests::vrrp::{Many, Router, Speaker};
use support::{answers_within, mac, wall_clock, Responder};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

/// The backup's priority (the master runs at 150).
const BACKUP: u8 = 100;

/// How late the backup may hold every VIP after Master_Down_Interval. Derived for a loaded
/// 2-core box running a debug build: taking over N instances is N state changes, each adding
/// one address over rtnetlink (~0.1 ms) and sending garp_master_repeat (5) frames (~10 us
/// each), about 0.4 s for 1,000; the lab's `ip addr` poll every 20 ms; and up to 0.5 s of
/// scheduling delay for a process that shares two cores with builds and other tests.
const ALLOWANCE: Duration = Duration::from_millis(900);

/// What one run saw.
#[derive(Debug)]
struct Outcome {
    settled: Duration,
    failover: Duration,
    /// From the first gratuitous ARP / NA of the takeover to the last VIP's first one.
    garp_spread: Duration,
}

fn held(host: &Host, vips: &[IpAddr]) -> BTreeSet<IpAddr> {
    let have: BTreeSet<IpAddr> = host.addresses().unwrap().into_iter().collect();
    vips.iter().filter(|v| have.contains(v)).copied().collect()
}

/// Every VIP answered by `name`, each within `timeout` from the first try; returns how long
/// the whole sweep took.
fn client_reaches_all(client: &Host, vips: &[IpAddr], name: &str, timeout: Duration) -> Duration {
    let start = Instant::now();
    for vip in vips {
        wait_for(timeout, Duration::from_millis(20), || {
            answers_within(client, *vip, Duration::from_millis(200)).as_deref() == Some(name)
        })
        .unwrap_or_else(|| {
            panic!(
                "the client did not reach {name} at {vip}: {:?}",
                answers_within(client, *vip, Duration::from_millis(500))
            )
        });
    }
    start.elapsed()
}

/// The first gratuitous ARP (IPv4) or unsolicited NA (IPv6) from `mac` for each VIP after
/// `after`, as tshark dissects the capture.
fn first_announcements(
    file: &std::path::Path,
    mac: &str,
    after: Duration,
) -> Vec<(IpAddr, Duration)> {
    let mut first: std::collections::BTreeMap<IpAddr, Duration> = Default::default();
    let seen = support::decode(file);
    for a in seen
        .arps
        .iter()
        .filter(|a| a.at > after && a.eth_src == mac)
    {
        if a.sender_ip == a.target_ip {
            let vip: IpAddr = a.sender_ip.parse().unwrap();
            first.entry(vip).or_insert(a.at);
        }
    }
    for na in support::neighbour_adverts(file) {
        if na.at > after && na.eth_src == mac && !na.solicited && na.override_flag {
            let vip: IpAddr = na.target.parse().unwrap();
            first.entry(vip).or_insert(na.at);
        }
    }
    first.into_iter().collect()
}

/// Captures what `host` sends and receives on `eth0` (ARP and ICMPv6), with a 32 MiB buffer: a
/// takeover of 1,000 instances puts ~7,600 frames on the link within milliseconds, more than
/// the lab capture's default 2 MiB holds.
fn capture_on(host: &Host) -> (ipi_lab::Daemon, PathBuf) {
    let file = host.dir().join("takeover.pcap");
    let path = file.to_str().unwrap().to_string();
    let args = [
        "-i",
        "eth0",
        "-U",
        "--immediate-mode",
        // 128 MiB of capture buffer: with 32 MiB a fresh root's run, the lint and the fuzzing
        // compiling beside it (SCHED_IDLE), lost 222 of 10,580 frames twice.
        "-B",
        "131072",
        "-Z",
        "root",
        "-w",
        &path,
        "arp or icmp6",
    ];
    let daemon = host.spawn("takeover.tcpdump", "tcpdump", args).unwrap();
    wait_for(Duration::from_secs(15), Duration::from_millis(20), || {
        daemon.stderr().contains("listening on")
    })
    .unwrap_or_else(|| panic!("tcpdump did not start: {}", daemon.log()));
    (daemon, file)
}

// One scenario read top to bottom: settle, check each VIP, cut the link, check each again.
#[allow(clippy::too_many_lines, reason = "one scenario read top to bottom")]
fn run(speaker: Speaker, count: usize) -> Outcome {
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let many = Many::new(count);
    let vips = many.vips();
    let mut lab = Lab::new().unwrap();
    let (a, b) = (lab.host("a").unwrap(), lab.host("b").unwrap());
    let client = lab.host("client").unwrap();
    for route in Many::ROUTES {
        let out = client
            .run("ip", ["route", "add", route, "dev", "eth0"])
            .unwrap();
        assert!(out.success, "ip route add {route}: {}", out.stderr);
    }
    let _answer = [&a, &b].map(Responder::start);
    let routers = [&a, &b];
    let started = Instant::now();
    let ra = Router::start_with(
        &a,
        speaker,
        &many.config(&a, 150, &routers),
        150,
        Some(&vrrpd),
    )
    .unwrap();
    let rb = Router::start_with(
        &b,
        speaker,
        &many.config(&b, BACKUP, &routers),
        BACKUP,
        Some(&vrrpd),
    )
    .unwrap();
    let logs = || format!("{}\n{}", ra.daemon.log(), rb.daemon.log());
    let tail = |s: String| s.lines().rev().take(40).collect::<Vec<_>>().join("\n");
    let settled = wait_for(Duration::from_secs(20), Duration::from_millis(50), || {
        held(&a, &vips).len() == count && held(&b, &vips).is_empty()
    })
    .map(|_| started.elapsed())
    .unwrap_or_else(|| {
        panic!(
            "{speaker:?}: not settled after 20 s: a holds {}, b holds {} of {count}\n{}",
            held(&a, &vips).len(),
            held(&b, &vips).len(),
            tail(logs())
        )
    });
    // Settled means stays settled: no VIP on both routers, sampled over 3 s (three adverts).
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(500));
        let (on_a, on_b) = (held(&a, &vips), held(&b, &vips));
        let both: Vec<_> = on_a.intersection(&on_b).collect();
        assert!(both.is_empty(), "{speaker:?}: on both routers: {both:?}");
        assert_eq!(on_a.len(), count, "{speaker:?}: a lost VIPs");
    }
    let swept = client_reaches_all(&client, &vips, "a", Duration::from_secs(3));
    eprintln!("{speaker:?} {count}: settled after {settled:?}; the client reached a at every VIP ({swept:?})");

    let (mut capture, file) = capture_on(&b);
    let mdi = many.master_down_interval(BACKUP);
    let cut_at = wall_clock();
    let cut = Instant::now();
    lab.partition(&a).unwrap();
    let failover = wait_for(mdi + ALLOWANCE * 3, Duration::from_millis(20), || {
        held(&b, &vips).len() == count
    })
    .map(|_| cut.elapsed())
    .unwrap_or_else(|| {
        panic!(
            "{speaker:?}: b holds {} of {count} VIPs {:?} after the cut\n{}",
            held(&b, &vips).len(),
            cut.elapsed(),
            tail(logs())
        )
    });
    // Every VIP from the client: only a gratuitous ARP / NA moves its neighbour entry away from
    // the cut-off master in time.
    let swept = client_reaches_all(&client, &vips, "b", Duration::from_secs(3));
    std::thread::sleep(Duration::from_millis(1500));
    capture.stop();
    // Every announcement left: a send that failed is logged, and would be missing below.
    let log = rb.daemon.log();
    let failed: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("gratuitous ARP / NA:"))
        .collect();
    assert!(
        failed.is_empty(),
        "{speaker:?}: announcements failed: {failed:?}"
    );
    // tcpdump's own count of frames it could not keep: a capture that lost frames cannot show
    // what was sent, and says so rather than blaming the router.
    let dropped = capture.stderr();
    assert!(
        dropped
            .lines()
            .any(|l| l.trim() == "0 packets dropped by kernel"),
        "{speaker:?}: the capture lost frames: {dropped}"
    );
    let first = first_announcements(&file, &mac(&b), cut_at);
    let missing: Vec<_> = vips
        .iter()
        .filter(|v| !first.iter().any(|(f, _)| f == *v))
        .collect();
    assert!(
        missing.is_empty(),
        "{speaker:?}: no GARP / NA from b for {} VIPs: {missing:?}",
        missing.len()
    );
    let earliest = first.iter().map(|(_, t)| *t).min().unwrap();
    let latest = first.iter().map(|(_, t)| *t).max().unwrap();
    let garp_spread = latest - earliest;
    eprintln!(
        "{speaker:?} {count}: b held every VIP {failover:?} after the cut (Master_Down_Interval \
         {mdi:?}); the client reached b at every VIP ({swept:?}); GARP / NA for all within \
         {garp_spread:?}"
    );
    Outcome {
        settled,
        failover,
        garp_spread,
    }
}

#[test]
fn a_thousand_instances_one_holder_each_and_all_move_together() {
    if !ipi_lab::available()
        || !ipi_lab::tool("keepalived", "keepalived")
        || !ipi_lab::tool("tshark", "tshark")
    {
        return;
    }
    // keepalived 2.2.7 with 500 (250 of them IPv6) had not settled after 20 s here (a held
    // 268, b 252): it runs the 200 IPv4 instances of the table instead, and what it
    // fails is printed, not asserted (it is the reference, not the subject). vrrpd runs 1,000,
    // half of them unicast from a source address it follows (FAULT when the address leaves its
    // interface): each of the 1,000 VIPs added is an address event that must not cost a look
    // at every address of the interface.
    let keepalived = std::panic::catch_unwind(|| run(Speaker::Keepalived, 200));
    let count = 1000;
    let vrrpd = run(Speaker::Vrrpd, count);
    match &keepalived {
        Ok(k) => eprintln!("keepalived (200) {k:?}"),
        Err(_) => eprintln!("keepalived (200) failed a check (printed above)"),
    }
    eprintln!(
        "vrrpd ({count}) {vrrpd:?}: settled {:.1} s after start",
        vrrpd.settled.as_secs_f64()
    );
    let mdi = Many::new(count).master_down_interval(BACKUP);
    // From the cut, the backup's Master_Down_Timer had already run for up to one advert
    // interval: Master_Down_Interval is the upper bound before the allowance.
    assert!(
        vrrpd.failover <= mdi + ALLOWANCE,
        "vrrpd moved every VIP after {:?}, more than Master_Down_Interval {mdi:?} + {ALLOWANCE:?}",
        vrrpd.failover
    );
    assert!(
        vrrpd.garp_spread <= Duration::from_secs(1),
        "GARP / NA for every VIP took {:?}",
        vrrpd.garp_spread
    );
}

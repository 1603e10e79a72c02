//! A host on the LAN that is not a router of the group (issue 27): the adverts it forges move
//! no VIP and make the master send no more than its own rhythm, judged by a client host that
//! connects through the VIP for the whole run and by a capture on the bridge. The last step is
//! the positive control: the same advert, sent as the group's routers send it (to the group,
//! TTL 255), is heard and the master steps down, so the forged packets were well formed.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::time::{Duration, Instant};

use ipi_core::vrrp::{Auth, ChecksumMode, Repr, Version};
use ipi_lab::{Host, Lab};
use support::{connections, send_raw, state, status, until, vrrpd, Wire};

#[allow(
    dead_code,
    reason = "each test binary uses a part of the shared helpers"
)]
mod support;

const VIP: &str = "192.0.2.200";
const GROUP: &str = "224.0.0.18";

/// A multicast VRRPv3 instance with 0.1 s adverts.
fn instance(priority: u8) -> String {
    format!(
        "global_defs {{\n    vrrp_version 3\n}}\nvrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 60\n    \
         priority {priority}\n    advert_int 0.1\n    virtual_ipaddress {{\n        {VIP}/32\n    \
         }}\n}}\n"
    )
}

/// `repr` as `from` sends it to `dst`, `count` times, `gap` apart, with IP TTL `ttl`.
fn forge(from: &Host, dst: IpAddr, repr: &Repr, ttl: u32, count: usize, gap: Duration) {
    let bytes = repr
        .to_bytes(IpAddr::V4(from.ipv4()), dst, ChecksumMode::PseudoHeader)
        .unwrap();
    for _ in 0..count {
        send_raw(from, dst, vec![(bytes.clone(), ttl)]);
        std::thread::sleep(gap);
    }
}

/// A receive-check counter of `host`: its instance's, or (`instance` false) what no instance
/// claimed.
fn invalid(host: &Host, instance: bool, reason: &str) -> u64 {
    let s = status(host);
    let counters = if instance {
        &s["instances"][0]["invalid"]
    } else {
        &s["invalid_unclaimed"]
    };
    counters[reason].as_u64().unwrap_or(0)
}

#[test]
// One scenario, read top to bottom: three attacks, then the positive control.
#[allow(clippy::too_many_lines)]
fn a_hostile_host_on_the_lan_moves_nothing() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b, client, _answer) = support::two_routers(&mut lab);
    let x = lab.host("x").unwrap();
    let vip: IpAddr = VIP.parse().unwrap();
    let group: IpAddr = GROUP.parse().unwrap();
    let da = vrrpd(&a, &instance(150));
    let db = vrrpd(&b, &instance(100));
    until(
        "a serves the VIP",
        Duration::from_secs(10),
        &[&da, &db],
        || support::answers(&client, vip).as_deref() == Some("a"),
    );
    let watcher = connections(&client, vip);
    let wire = Wire::start(&lab, "hostile");
    let started = Instant::now();

    // Higher than a's priority: had any forged advert below been taken, a would step down.
    let higher = Repr {
        version: Version::V3,
        vrid: 60,
        priority: 254,
        advert_int: 10,
        auth: Auth::None,
        addresses: vec![vip],
    };
    // 1. To a's own address, TTL 255: a multicast instance hears only its group.
    forge(
        &x,
        IpAddr::V4(a.ipv4()),
        &higher,
        255,
        40,
        Duration::from_millis(50),
    );
    // 2. To the group with TTL 64, as if routed from another subnet (RFC 5798 7.1).
    forge(&x, group, &higher, 64, 40, Duration::from_millis(50));
    // 3. Lower-priority adverts as fast as x can send them: a answers at most one an advert
    // interval (each answer is an advert and a gratuitous ARP burst).
    let lower = Repr {
        priority: 1,
        ..higher.clone()
    };
    let flood_from = support::wall_clock();
    let flood = lower
        .to_bytes(IpAddr::V4(x.ipv4()), group, ChecksumMode::PseudoHeader)
        .unwrap();
    send_raw(&x, group, vec![(flood, 255); 2000]);
    let flood_to = support::wall_clock();
    std::thread::sleep(Duration::from_secs(1));
    let flood_seen_to = support::wall_clock();

    let seen = watcher.stop();
    let attacks = started.elapsed();
    let wrong: Vec<_> = seen
        .iter()
        .filter(|(_, who)| who.as_deref() != Some("a"))
        .collect();
    eprintln!(
        "the client's {} connections over {attacks:?} of attacks: {} not answered by a",
        seen.len(),
        wrong.len()
    );
    assert!(
        seen.len() > 100,
        "the client sampled too little: {}",
        seen.len()
    );
    assert!(wrong.is_empty(), "{wrong:?}\n{}", da.log());
    assert_eq!(state(&a), "MASTER");
    assert_eq!(state(&b), "BACKUP");
    until(
        "the refusals counted",
        Duration::from_secs(3),
        &[&da],
        || invalid(&a, true, "unicast") >= 40 && invalid(&a, false, "hop_limit") >= 40,
    );
    let transitions = status(&a)["instances"][0]["transitions"].clone();

    // 4. The positive control: the higher advert to the group with TTL 255 is heard.
    forge(&x, group, &higher, 255, 20, Duration::from_millis(50));
    until(
        "a steps down to x's advert",
        Duration::from_secs(3),
        &[&da],
        || state(&a) == "BACKUP",
    );
    assert_ne!(status(&a)["instances"][0]["transitions"], transitions);

    let seen = wire.stop();
    let a_ip = a.ipv4().to_string();
    let during = |at: Duration| at >= flood_from && at <= flood_seen_to;
    let sent = seen.adverts_from(&a_ip).filter(|ad| during(ad.at)).count();
    let window = flood_seen_to.saturating_sub(flood_from);
    // Its own rhythm (10 a second) and one answer an interval at most, with room for one
    // interval's rounding at each end.
    let bound = 2 * (window.as_millis() / 100) as usize + 4;
    eprintln!(
        "x sent 2,000 lower adverts in {:?}; a sent {sent} adverts in the {window:?} from the \
         flood's start (bound {bound})",
        flood_to.saturating_sub(flood_from)
    );
    assert!(
        sent <= bound,
        "a answered the flood: {sent} adverts > {bound}\n{seen}"
    );
    assert!(sent >= 5, "a's adverts were not captured: {sent}\n{seen}");
}

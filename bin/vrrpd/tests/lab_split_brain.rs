//! A split brain healing, seen from a client, with keepalived and with vrrpd in one test.
//!
//! Two routers on one bridge, a (priority 150) and b (100), OpenShift's VRRPv2 group (1 s
//! adverts, PASS); a third host pings the VIP every 50 ms. nftables on b drops VRRP (IP
//! protocol 112) from a, nothing else, ARP included: b hears nothing of a and takes the VIP
//! too, while a still hears b's lower-priority adverts (a firewall or a flaky link in one
//! direction). Then the rule goes. The master that heard lower-priority adverts must have
//! re-announced the VIP (keepalived's `garp_lower_prio_repeat`, on by default): otherwise the
//! client's neighbour entry keeps b's MAC, the last one announced, and once b steps down every
//! ping goes to a host without the VIP until the entry goes stale (15-45 s).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use ipi_lab::{wait_for, Host, Lab};
use ipi_net_tests::vrrp::{Group, Router, Speaker};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

/// The client's ping interval.
const PING: Duration = Duration::from_millis(50);
/// Pings sent from just before the heal: 20 s, beyond b's stepping down (one advert interval
/// after the heal) and far short of the client's neighbour entry going stale by itself.
const PINGS: u32 = 400;

/// Drops VRRP from `from` on `host`, and nothing else.
fn block_vrrp(host: &Host, from: &Host) {
    let rules = format!(
        "table inet ipi_split {{\n    chain input {{\n        type filter hook input priority 0;\n        \
         ip saddr {} ip protocol vrrp drop\n    }}\n}}\n",
        from.ipv4()
    );
    let file = host.dir().join("split.nft");
    std::fs::write(&file, rules).unwrap();
    let out = host.run("nft", ["-f", file.to_str().unwrap()]).unwrap();
    assert!(out.success, "nft: {}", out.stderr);
}

fn unblock_vrrp(host: &Host) {
    let out = host
        .run("nft", ["delete", "table", "inet", "ipi_split"])
        .unwrap();
    assert!(out.success, "nft: {}", out.stderr);
}

/// "N received" of ping's summary.
fn received(summary: &str) -> u32 {
    summary
        .split(',')
        .find_map(|part| part.trim().strip_suffix(" received"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in ping's output:\n{summary}"))
}

/// One run of the scenario with `speaker` on both routers: the pings lost around the heal.
fn lost_after_heal(lab: &Lab, speaker: Speaker, hosts: &[Host; 3]) -> u32 {
    let [a, b, client] = hosts;
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let group = Group::v2_pass();
    let vip = group.vips()[0];
    let _ = client.run("ip", ["neigh", "flush", "dev", "eth0"]);
    let mut ra = Router::start(a, speaker, &group, 150, Some(&vrrpd)).unwrap();
    let mut rb = Router::start(b, speaker, &group, 100, Some(&vrrpd)).unwrap();
    let logs = |ra: &Router, rb: &Router| format!("{}\n{}", ra.daemon.log(), rb.daemon.log());
    let settled = wait_for(Duration::from_secs(15), Duration::from_millis(20), || {
        ra.holds(&group) && !rb.holds(&group)
    });
    assert!(
        settled.is_some(),
        "{speaker:?}: a never held the VIP alone\n{}",
        logs(&ra, &rb)
    );
    assert_eq!(support::answers(client, vip).as_deref(), Some("a"));

    block_vrrp(b, a);
    let split = wait_for(
        group.master_down_interval(100) + Duration::from_secs(3),
        Duration::from_millis(20),
        || rb.holds(&group),
    );
    assert!(
        split.is_some(),
        "{speaker:?}: b never took the VIP\n{}",
        logs(&ra, &rb)
    );
    assert!(ra.holds(&group), "a kept the VIP through the split");
    // Past b's second burst of gratuitous ARPs (garp_master_delay, 5 s) and two of its adverts.
    std::thread::sleep(Duration::from_secs(7));

    let pinger = client.clone();
    let ping = std::thread::spawn(move || {
        let (count, interval) = (PINGS.to_string(), format!("{:.2}", PING.as_secs_f64()));
        let target = vip.to_string();
        pinger
            .run(
                "ping",
                [
                    "-n", "-q", "-c", &count, "-i", &interval, "-W", "1", &target,
                ],
            )
            .unwrap()
    });
    std::thread::sleep(Duration::from_millis(200));
    unblock_vrrp(b);
    let out = ping.join().unwrap();
    let lost = PINGS - received(&out.stdout);
    let one = wait_for(Duration::from_secs(5), Duration::from_millis(20), || {
        ra.holds(&group) && !rb.holds(&group)
    });
    assert!(
        one.is_some(),
        "{speaker:?}: b never stepped down\n{}",
        logs(&ra, &rb)
    );
    eprintln!(
        "{}: {lost} of {PINGS} pings lost around the heal; the client now reaches {:?}",
        speaker.name(),
        support::answers(client, vip)
    );
    assert_eq!(ra.daemon.stop(), Some(0));
    assert_eq!(rb.daemon.stop(), Some(0));
    let _ = lab;
    lost
}

#[test]
fn a_healed_split_brain_loses_no_more_pings_than_keepalived() {
    if !ipi_lab::available()
        || !ipi_lab::tool("keepalived", "keepalived")
        || !ipi_lab::tool("nft", "nftables")
    {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let hosts = [
        lab.host("a").unwrap(),
        lab.host("b").unwrap(),
        lab.host("client").unwrap(),
    ];
    let _answer = [&hosts[0], &hosts[1]].map(support::Responder::start);
    let keepalived = lost_after_heal(&lab, Speaker::Keepalived, &hosts);
    let vrrpd = lost_after_heal(&lab, Speaker::Vrrpd, &hosts);
    // b steps down within one advert interval of the heal; whatever keepalived loses in that
    // moment we may lose too, plus the pings of one more interval (a loaded 2-core box).
    let interval = Duration::from_millis(u64::from(Group::v2_pass().advert_int_cs) * 10);
    let allowance = u32::try_from(interval.as_millis() / PING.as_millis()).unwrap();
    eprintln!(
        "lost after the heal: keepalived {keepalived}, vrrpd {vrrpd} (allowance {allowance})"
    );
    assert!(
        vrrpd <= keepalived + allowance,
        "vrrpd lost {vrrpd} pings, keepalived {keepalived}: more than {allowance} more"
    );
}

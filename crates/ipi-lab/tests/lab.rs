//! The lab itself: hosts reach each other over both families, a partition and a pulled cable

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]
//! cut them apart and healing joins them again, captures record, and nothing is left behind.

use std::net::IpAddr;
use std::time::Duration;

use ipi_lab::{wait_for, Lab};

fn ping(from: &ipi_lab::Host, to: IpAddr) -> bool {
    let to = to.to_string();
    from.run("ping", ["-c", "1", "-W", "1", to.as_str()])
        .unwrap()
        .success
}

fn namespaces() -> String {
    String::from_utf8(
        std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
}

#[test]
fn hosts_talk_over_both_families_until_cut_apart() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let b = lab.host("b").unwrap();
    assert_eq!(a.ipv4().to_string(), "192.0.2.1");
    assert_eq!(b.ipv6().to_string(), "2001:db8::2");
    assert!(a.link_local().segments()[0] == 0xfe80);
    assert!(a.has_address(IpAddr::V4(a.ipv4())));
    assert!(a.has_address(IpAddr::V6(a.ipv6())));

    assert!(ping(&a, IpAddr::V4(b.ipv4())));
    assert!(ping(&a, IpAddr::V6(b.ipv6())));

    lab.partition(&b).unwrap();
    assert!(!ping(&a, IpAddr::V4(b.ipv4())));
    let carrier = b.run("ip", ["-o", "link", "show", "eth0"]).unwrap().stdout;
    assert!(
        !carrier.contains("NO-CARRIER"),
        "a partition keeps the carrier: {carrier}"
    );
    lab.heal(&b).unwrap();
    assert!(
        wait_for(Duration::from_secs(5), Duration::from_millis(100), || {
            ping(&a, IpAddr::V4(b.ipv4()))
        })
        .is_some()
    );

    lab.link_down(&b).unwrap();
    assert!(
        wait_for(Duration::from_secs(5), Duration::from_millis(50), || {
            let link = b.run("ip", ["-o", "link", "show", "eth0"]).unwrap().stdout;
            link.contains("NO-CARRIER")
        })
        .is_some()
    );
    lab.link_up(&b).unwrap();
    assert!(
        wait_for(Duration::from_secs(5), Duration::from_millis(100), || {
            ping(&a, IpAddr::V6(b.ipv6()))
        })
        .is_some()
    );
}

#[test]
fn captures_record_and_daemons_stop() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let b = lab.host("b").unwrap();
    let on_host = a.capture("icmp", "icmp").unwrap();
    let on_bridge = lab.capture("broadcast", "arp").unwrap();
    // A neighbour not yet resolved: the ARP request is broadcast, so the bridge sees it.
    a.run("ip", ["neigh", "flush", "all"]).unwrap();
    assert!(ping(&a, IpAddr::V4(b.ipv4())));
    let frames = ipi_core::capture::read(&on_host.stop().unwrap()).unwrap();
    assert!(
        frames.len() >= 2,
        "echo request and reply: {}",
        frames.len()
    );
    let frames = ipi_core::capture::read(&on_bridge.stop().unwrap()).unwrap();
    assert!(!frames.is_empty(), "the ARP request crossed the bridge");

    let mut sleeper = a.spawn("sleeper", "sleep", ["60"]).unwrap();
    assert!(sleeper.running());
    assert!(sleeper.usage().processes >= 1);
    sleeper.signal(nix::sys::signal::Signal::SIGKILL).unwrap();
    assert_eq!(sleeper.wait(Duration::from_secs(5)).unwrap(), None);

    let echo = a
        .spawn("echo", "sh", ["-c", "echo out; echo err >&2"])
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(5), Duration::from_millis(10), || {
            echo.stdout() == "out\n" && echo.stderr() == "err\n"
        })
        .is_some()
    );
}

#[test]
fn dropping_the_lab_removes_every_namespace() {
    if !ipi_lab::available() {
        return;
    }
    let prefix = {
        let mut lab = Lab::new().unwrap();
        let host = lab.host("gone").unwrap();
        let _daemon = host.spawn("sleeper", "sleep", ["60"]).unwrap();
        let netns = host.netns().to_string();
        assert!(namespaces().contains(&netns));
        netns.trim_end_matches("-gone").to_string()
    };
    assert!(!namespaces().contains(&prefix), "{}", namespaces());
}

#[test]
fn a_container_is_an_empty_namespace_gone_with_the_lab_or_before() {
    if !ipi_lab::available() {
        return;
    }
    let (kept, removed) = {
        let mut lab = Lab::new().unwrap();
        let kept = lab.container("kept").unwrap();
        let removed = lab.container("removed").unwrap();
        assert!(
            kept.netns_path().exists(),
            "{}",
            kept.netns_path().display()
        );
        let links = kept.run_ok("ip", ["-o", "link", "show"]).unwrap().stdout;
        assert_eq!(links.lines().count(), 1, "{links}");
        assert!(links.contains(": lo:") && links.contains(",UP"), "{links}");
        assert!(kept.addresses().unwrap_or_default().is_empty());
        lab.remove_container(&removed).unwrap();
        assert!(!namespaces().contains(removed.netns()), "{}", namespaces());
        assert!(lab.remove_container(&removed).is_err(), "removed twice");
        (kept.netns().to_string(), removed.netns().to_string())
    };
    assert!(!namespaces().contains(&kept), "{}", namespaces());
    assert!(!namespaces().contains(&removed));
}

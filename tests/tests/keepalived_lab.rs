//! The lab proved with the real thing: two keepalived routers fail over when the master is cut

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]
//! off, within the Master_Down_Interval ipi-core computes, and every advert they send decodes
//! with ipi-core's codec.

use std::net::IpAddr;
use std::time::Duration;

use ipi_core::vrrp::{Auth, Version};
use ipi_net_tests::failover::{self, Fault, Outcome};
use ipi_net_tests::vrrp::{Group, Speaker};

/// Polling, process start-up and netlink are not free: the takeover may come this much after
/// the Master_Down_Interval (the timing itself is a benchmark's business, not a test's).
const MARGIN: Duration = Duration::from_secs(2);

fn scenario(group: &Group) -> Option<Outcome> {
    if !ipi_lab::available() {
        return None;
    }
    let speakers = [Speaker::Keepalived, Speaker::Keepalived];
    let outcome = failover::run(group, speakers, Fault::Partition, None, &mut |at, line| {
        eprintln!("{:7.3} {line}", at.as_secs_f64());
    })
    .unwrap_or_else(|e| panic!("{e}"));
    Some(outcome)
}

fn check_timeline(o: &Outcome) {
    // Higher priority (a, 150) is master first, b takes over, and a preempts back.
    assert_eq!(o.first_master, "a");
    assert_eq!(o.final_master, "a");
    assert!(
        o.failover <= o.master_down_interval + MARGIN,
        "took {:?}, Master_Down_Interval {:?}",
        o.failover,
        o.master_down_interval
    );
    // On the wire the backup stayed silent for its Master_Down_Interval after the master's last
    // advert: never less (keepalived counts microseconds, ipi-core centiseconds: 10 ms).
    let Some(silence) = o.silence else {
        let seen: Vec<String> = o
            .adverts
            .iter()
            .map(|(at, d)| match d {
                Ok(d) => format!("{:.3} {} prio {}", at.as_secs_f64(), d.src, d.repr.priority),
                Err(e) => format!("{:.3} {e}", at.as_secs_f64()),
            })
            .collect();
        panic!("the takeover is not in the capture:\n{}", seen.join("\n"));
    };
    assert!(
        silence + Duration::from_millis(10) >= o.master_down_interval,
        "silence {silence:?}, Master_Down_Interval {:?}",
        o.master_down_interval
    );
    assert!(
        silence <= o.master_down_interval + MARGIN,
        "silence {silence:?}"
    );
}

#[test]
fn keepalived_v2_pass_fails_over_and_its_adverts_decode() {
    let group = Group::v2_pass();
    let Some(o) = scenario(&group) else { return };
    check_timeline(&o);
    let adverts: Vec<_> = o.adverts.iter().map(|(_, a)| a.as_ref().unwrap()).collect();
    assert!(adverts.len() >= 3, "{} adverts", adverts.len());
    let priorities: Vec<u8> = adverts.iter().map(|d| d.repr.priority).collect();
    assert!(
        priorities.contains(&150) && priorities.contains(&100),
        "{priorities:?}"
    );
    for d in adverts {
        assert_eq!(d.repr.version, Version::V2);
        assert_eq!(d.repr.vrid, 51);
        assert_eq!(d.repr.advert_int, 100);
        assert_eq!(d.repr.auth, Auth::pass("ipi_vip"));
        assert_eq!(
            d.repr.addresses,
            vec!["192.0.2.100".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(d.hop_limit, 255);
        assert_eq!(d.dst, "224.0.0.18".parse::<IpAddr>().unwrap());
    }
}

#[test]
fn keepalived_v3_ipv4_and_ipv6_fail_over_and_their_adverts_decode() {
    let group = Group::v3_dual(50);
    let Some(o) = scenario(&group) else { return };
    check_timeline(&o);
    let adverts: Vec<_> = o.adverts.iter().map(|(_, a)| a.as_ref().unwrap()).collect();
    let v4 = adverts.iter().filter(|d| d.src.is_ipv4()).count();
    let v6: Vec<_> = adverts.iter().filter(|d| d.src.is_ipv6()).collect();
    assert!(
        v4 >= 3 && v6.len() >= 3,
        "{v4} IPv4 and {} IPv6 adverts",
        v6.len()
    );
    for d in &adverts {
        assert_eq!(d.repr.version, Version::V3);
        assert_eq!(d.repr.vrid, 52);
        assert_eq!(d.repr.advert_int, 50);
        assert_eq!(d.repr.auth, Auth::None);
        assert_eq!(d.hop_limit, 255);
    }
    for d in v6 {
        // RFC 5798 5.1.2.1: IPv6 adverts come from the link-local address.
        match d.src {
            IpAddr::V6(src) => assert_eq!(src.segments()[0], 0xfe80, "{src}"),
            IpAddr::V4(_) => unreachable!(),
        }
        assert_eq!(
            d.repr.addresses,
            vec!["2001:db8::101".parse::<IpAddr>().unwrap()]
        );
    }
}

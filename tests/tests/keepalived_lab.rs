//! The lab proved with the real thing: two keepalived routers fail over when the master is cut

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]
//! off, within the Master_Down_Interval ipi-core computes, and every advert they send decodes
//! with ipi-core's codec.

use std::net::IpAddr;
use std::time::Duration;

use ipi_core::vrrp::{Auth, Version};
use ipi_net_tests::failover::{self, late, Fault, Outcome, CLIENT_COST, LATE};
use ipi_net_tests::vrrp::{Group, Speaker};

/// How much earlier than due the capture may timestamp an advert: timestamps are taken when
/// the frame crosses the bridge, in a softirq that a loaded box may run late for one frame and
/// on time for the next. An interval 10% too short fails (more than 50 ms short at 0.5 s);
/// one too long passes up to LATE, which a loaded box needs (on an idle one the gaps are the
/// interval within a millisecond).
const EARLY: Duration = Duration::from_millis(50);

/// Polling `ip addr` every 5 ms in the namespace: one run of it on a loaded box.
const POLL_COST: Duration = Duration::from_millis(200);

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

fn check_timeline(group: &Group, o: &Outcome) {
    // Higher priority (a, 150) is master first, b takes over, and a preempts back.
    assert_eq!(o.first_master, "a");
    assert_eq!(o.final_master, "a");
    // The cut falls anywhere in one of the master's advert gaps (T, up to T + LATE), after
    // which the backup waits its Master_Down_Interval (up to LATE late), and the VIP is seen
    // at the next poll.
    let t = Duration::from_millis(u64::from(group.advert_int_cs) * 10);
    assert!(
        o.failover + t + LATE >= o.master_down_interval
            && o.failover <= o.master_down_interval + LATE + POLL_COST,
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
        silence <= o.master_down_interval + late(t),
        "silence {silence:?}"
    );
    // The client follows: the new master's gratuitous ARP / unsolicited NA moved it.
    o.client_within(o.master_down_interval + late(t) + CLIENT_COST)
        .unwrap();
}

/// The first master's adverts of one family (priority 150 is a's only) from when it held the
/// VIPs alone until the fault: one every advert interval T. Each gap is T (EARLY less, LATE
/// more), and their number in that window W is at least W / (T + LATE), rounded down, and at
/// most W / (T - EARLY), rounded down, plus one (a send at both ends).
fn check_master_cadence(group: &Group, o: &Outcome, family: fn(&IpAddr) -> bool) {
    let t = Duration::from_millis(u64::from(group.advert_int_cs) * 10);
    let sent: Vec<Duration> = o
        .adverts
        .iter()
        .filter_map(|(at, d)| d.as_ref().ok().map(|d| (*at, d)))
        .filter(|(at, d)| {
            family(&d.src) && d.repr.priority == 150 && *at >= o.settled_at && *at < o.fault_at
        })
        .map(|(at, _)| at)
        .collect();
    let window = o.fault_at - o.settled_at;
    let fewest = window.as_nanos() / (t + LATE).as_nanos();
    let most = window.as_nanos() / (t - EARLY).as_nanos() + 1;
    let n = sent.len() as u128;
    eprintln!("{n} adverts from a in {window:?}, expected {fewest}..={most}: {sent:?}");
    assert!(
        (fewest..=most).contains(&n),
        "{n} adverts in {window:?}, expected {fewest}..={most}: {sent:?}"
    );
    for gap in sent.windows(2).map(|w| w[1] - w[0]) {
        assert!(
            gap + EARLY >= t && gap <= t + LATE,
            "a gap of {gap:?} between adverts every {t:?}: {sent:?}"
        );
    }
}

#[test]
fn keepalived_v2_pass_fails_over_and_its_adverts_decode() {
    let group = Group::v2_pass();
    let Some(o) = scenario(&group) else { return };
    check_timeline(&group, &o);
    check_master_cadence(&group, &o, IpAddr::is_ipv4);
    let adverts: Vec<_> = o.adverts.iter().map(|(_, a)| a.as_ref().unwrap()).collect();
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
    check_timeline(&group, &o);
    check_master_cadence(&group, &o, IpAddr::is_ipv4);
    check_master_cadence(&group, &o, IpAddr::is_ipv6);
    let adverts: Vec<_> = o.adverts.iter().map(|(_, a)| a.as_ref().unwrap()).collect();
    let v6: Vec<_> = adverts.iter().filter(|d| d.src.is_ipv6()).collect();
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

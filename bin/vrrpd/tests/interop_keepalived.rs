//! vrrpd and the real keepalived in one VRRP group, in the lab: the higher priority is master
//! whichever program it is, and the other takes over within its Master_Down_Interval when the
//! master is cut off (measured on the wire), in VRRPv2 with PASS authentication and in VRRPv3
//! over IPv4 and IPv6.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use ipi_net_tests::failover::{self, Fault, Outcome};
use ipi_net_tests::vrrp::{Group, Speaker};

/// Polling, process start-up and netlink: the takeover may be seen this much late.
const MARGIN: Duration = Duration::from_secs(2);

fn scenario(group: &Group, speakers: [Speaker; 2]) -> Option<Outcome> {
    run(group, speakers, Fault::Partition)
}

fn run(group: &Group, speakers: [Speaker; 2], fault: Fault) -> Option<Outcome> {
    if !ipi_lab::available() {
        return None;
    }
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let outcome = failover::run(group, speakers, fault, Some(&vrrpd), &mut |at, line| {
        eprintln!("{:7.3} {line}", at.as_secs_f64());
    })
    .unwrap_or_else(|e| panic!("{e}"));
    Some(outcome)
}

fn check(o: &Outcome) {
    // The higher priority (a, 150) is master, the other takes over, a preempts back.
    assert_eq!(o.first_master, "a");
    assert_eq!(o.final_master, "a");
    assert!(
        o.failover <= o.master_down_interval + MARGIN,
        "{:?}",
        o.failover
    );
    let silence = o.silence.unwrap();
    assert!(
        silence + Duration::from_millis(10) >= o.master_down_interval,
        "silence {silence:?} < Master_Down_Interval {:?}",
        o.master_down_interval
    );
    assert!(
        silence <= o.master_down_interval + MARGIN,
        "silence {silence:?}"
    );
    for (_, advert) in &o.adverts {
        assert!(advert.is_ok(), "{advert:?}");
    }
}

#[test]
fn v2_pass_vrrpd_master_keepalived_backup() {
    let Some(o) = scenario(&Group::v2_pass(), [Speaker::Vrrpd, Speaker::Keepalived]) else {
        return;
    };
    check(&o);
}

#[test]
fn v2_pass_keepalived_master_vrrpd_backup() {
    let Some(o) = scenario(&Group::v2_pass(), [Speaker::Keepalived, Speaker::Vrrpd]) else {
        return;
    };
    check(&o);
}

#[test]
fn v3_ipv4_and_ipv6_vrrpd_master_keepalived_backup() {
    let Some(o) = scenario(&Group::v3_dual(50), [Speaker::Vrrpd, Speaker::Keepalived]) else {
        return;
    };
    check(&o);
}

#[test]
fn v3_ipv4_and_ipv6_keepalived_master_vrrpd_backup() {
    let Some(o) = scenario(&Group::v3_dual(50), [Speaker::Keepalived, Speaker::Vrrpd]) else {
        return;
    };
    check(&o);
}

/// SIGTERM: the master resigns with priority 0 and the backup takes over after its Skew_Time
/// (0.609 s at priority 100), not its Master_Down_Interval (3.609 s).
fn check_resign(o: &Outcome) {
    assert_eq!(o.first_master, "a");
    assert_eq!(o.final_master, "a");
    let silence = o.silence.unwrap();
    assert!(silence < Duration::from_millis(1500), "silence {silence:?}");
    assert!(o
        .adverts
        .iter()
        .any(|(_, a)| a.as_ref().is_ok_and(|d| d.repr.priority == 0)));
}

#[test]
fn v2_vrrpd_resigns_to_keepalived() {
    let Some(o) = run(
        &Group::v2_pass(),
        [Speaker::Vrrpd, Speaker::Keepalived],
        Fault::Terminate,
    ) else {
        return;
    };
    check_resign(&o);
}

#[test]
fn v2_keepalived_resigns_to_vrrpd() {
    let Some(o) = run(
        &Group::v2_pass(),
        [Speaker::Keepalived, Speaker::Vrrpd],
        Fault::Terminate,
    ) else {
        return;
    };
    check_resign(&o);
}

#[test]
fn v2_unicast_vrrpd_master_keepalived_backup() {
    let group = Group::v2_pass_unicast();
    let Some(o) = scenario(&group, [Speaker::Vrrpd, Speaker::Keepalived]) else {
        return;
    };
    check(&o);
}

#[test]
fn v2_unicast_keepalived_master_vrrpd_backup() {
    let group = Group::v2_pass_unicast();
    let Some(o) = scenario(&group, [Speaker::Keepalived, Speaker::Vrrpd]) else {
        return;
    };
    check(&o);
}

//! Elections between simulated routers on a virtual clock: who becomes master, and exactly when.
//!
//! Expected instants are computed here from the RFC formulas in integer milliseconds, not taken
//! from the library, so these tests check the arithmetic as well as the state table:
//! Master_Down_Interval = 3 * interval + Skew_Time, Skew_Time = (256 - priority) * interval / 256
//! (v3, RFC 5798 6.1) or (256 - priority) / 256 s (v2, RFC 3768 6.1).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv6Addr};

use vrrpd::fsm::sim::Lan;
use vrrpd::fsm::{Action, Event, InitialState, InstanceParams, Instant, State, Version};

#[allow(dead_code, reason = "each FSM test uses a few of the shared helpers")]
#[path = "support/fsm.rs"]
mod fsm_support;
use fsm_support::{addr, ms, router, v3_on};

const VRID: u8 = 10;

/// VRRPv3 with a 1 s interval.
fn v3(priority: u8, last: u8) -> InstanceParams {
    v3_on(VRID, priority, last)
}

/// Skew_Time in ms, RFC 5798 6.1.
fn skew_v3(priority: u8, interval_cs: u64) -> u64 {
    (256 - u64::from(priority)) * interval_cs * 10 / 256
}

/// Master_Down_Interval in ms, RFC 5798 6.1.
fn mdi_v3(priority: u8, interval_cs: u64) -> u64 {
    3 * interval_cs * 10 + skew_v3(priority, interval_cs)
}

/// When `node` first became master, if it did.
fn became_master(lan: &Lan, node: usize) -> Option<Instant> {
    lan.transitions(node, VRID)
        .into_iter()
        .find(|&(_, _, to)| to == State::Master)
        .map(|(at, _, _)| at)
}

/// Adverts `node` sent with a non-zero priority, by time.
fn advert_times(lan: &Lan, node: usize) -> Vec<u64> {
    lan.adverts(node, VRID)
        .into_iter()
        .filter(|&(_, p)| p != 0)
        .map(|(at, _)| at.as_millis())
        .collect()
}

#[test]
fn three_routers_the_highest_priority_wins() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(v3(100, 1)));
    let b = lan.add(addr(2), router(v3(150, 2)));
    let c = lan.add(addr(3), router(v3(200, 3)));
    for n in [a, b, c] {
        lan.start(n);
    }
    lan.run_until(ms(20_000));

    // The highest priority has the shortest Master_Down_Interval; its first advert resets the
    // others' timers before they fire (3414 and 3609 ms).
    assert_eq!(mdi_v3(200, 100), 3218);
    assert_eq!(
        lan.transitions(c, VRID),
        [
            (ms(0), State::Initialize, State::Backup),
            (ms(3218), State::Backup, State::Master)
        ]
    );
    for n in [a, b] {
        assert_eq!(
            lan.transitions(n, VRID),
            [(ms(0), State::Initialize, State::Backup)]
        );
        let i = lan.instance(n, VRID).unwrap();
        assert_eq!(i.master(), Some((addr(3), 200)));
        assert_eq!(i.counters().adverts_sent, 0);
    }
    assert_eq!(lan.masters(VRID), [c]);
    // One advert per Advertisement_Interval from the transition on.
    let sent = advert_times(&lan, c);
    assert_eq!(sent, (0..17).map(|k| 3218 + k * 1000).collect::<Vec<_>>());
    assert_eq!(
        lan.instance(a, VRID).unwrap().counters().adverts_received,
        17
    );
}

#[test]
fn a_higher_priority_backup_preempts_after_its_master_down_interval() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(v3(100, 1)));
    let b = lan.add(addr(2), router(v3(200, 2)));
    lan.start(a);
    lan.run_until(ms(10_000));
    assert_eq!(became_master(&lan, a), Some(ms(mdi_v3(100, 100))));

    let heard_before = lan.instance(b, VRID).unwrap().counters().adverts_received;
    lan.start(b);
    lan.run_until(ms(30_000));
    // B discards A's lower-priority adverts (RFC 5798 6.4.2, Preempt_Mode true), so its
    // Master_Down_Timer, started at 10 s, fires.
    assert_eq!(became_master(&lan, b), Some(ms(10_000 + mdi_v3(200, 100))));
    assert_eq!(
        lan.transitions(a, VRID).last(),
        Some(&(ms(13_218), State::Master, State::Backup))
    );
    assert_eq!(lan.masters(VRID), [b]);
    // A's adverts did reach B meanwhile (10.609, 11.609, 12.609 s); those before B started
    // were counted but ignored (Initialize takes no part).
    let heard = lan.instance(b, VRID).unwrap().counters().adverts_received;
    assert_eq!((heard_before, heard - heard_before), (7, 3));
}

#[test]
fn nopreempt_leaves_a_lower_priority_master_in_place() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(v3(100, 1)));
    let mut p = v3(200, 2);
    p.preempt = false;
    let b = lan.add(addr(2), router(p));
    lan.start(a);
    lan.run_until(ms(10_000));
    lan.start(b);
    lan.run_until(ms(120_000));

    assert_eq!(lan.masters(VRID), [a]);
    assert_eq!(lan.state(b, VRID), Some(State::Backup));
    assert_eq!(
        lan.instance(b, VRID).unwrap().master(),
        Some((addr(1), 100))
    );

    // But it does take over when the master resigns.
    lan.shutdown(a);
    lan.run_until(ms(125_000));
    assert_eq!(lan.masters(VRID), [b]);
}

#[test]
fn preempt_delay_holds_back_a_higher_priority_backup() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(v3(100, 1)));
    let mut p = v3(200, 2);
    p.preempt_delay_cs = 500;
    let b = lan.add(addr(2), router(p));
    lan.start(a);
    lan.run_until(ms(10_000));
    lan.start(b);
    lan.run_until(ms(40_000));

    // keepalived: the delay runs from the first lower-priority advert heard in Backup; until
    // then lower-priority adverts still reset the Master_Down_Timer, afterwards they are
    // discarded and the timer runs out.
    let sent = advert_times(&lan, a);
    let first_heard = *sent.iter().find(|&&t| t >= 10_000).unwrap();
    assert_eq!(first_heard, 10_609);
    let delay_end = first_heard + 5_000;
    let last_accepted = *sent.iter().rev().find(|&&t| t < delay_end).unwrap();
    assert_eq!(last_accepted, 14_609);
    let takeover = last_accepted + mdi_v3(200, 100);
    assert_eq!(became_master(&lan, b), Some(ms(takeover)));
    assert_eq!(takeover, 17_827);
    // Without the delay it would have been 10 s + 3.218 s.
    assert!(takeover > delay_end);
    assert_eq!(lan.masters(VRID), [b]);
}

#[test]
fn equal_priorities_are_broken_by_the_greater_primary_address() {
    // Whichever order the routers are added (and so act within an instant), .2 wins.
    for high_first in [false, true] {
        let mut lan = Lan::new();
        let (lo, hi) = if high_first {
            let hi = lan.add(addr(2), router(v3(100, 2)));
            (lan.add(addr(1), router(v3(100, 1))), hi)
        } else {
            let lo = lan.add(addr(1), router(v3(100, 1)));
            (lo, lan.add(addr(2), router(v3(100, 2))))
        };
        lan.start(lo);
        lan.start(hi);
        lan.run_until(ms(20_000));

        // Both timers fire at the same instant, both become master and advertise; the lower
        // address yields to the equal priority from the greater address (RFC 5798 6.4.3).
        let t = ms(mdi_v3(100, 100));
        assert_eq!(
            lan.transitions(lo, VRID),
            [
                (ms(0), State::Initialize, State::Backup),
                (t, State::Backup, State::Master),
                (t, State::Master, State::Backup)
            ]
        );
        assert_eq!(became_master(&lan, hi), Some(t));
        assert_eq!(lan.masters(VRID), [hi]);
    }
}

#[test]
fn equal_priorities_over_ipv6_compare_the_whole_address() {
    let lo: IpAddr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xffff).into();
    let hi: IpAddr = Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 1).into();
    let mut lan = Lan::new();
    let a = lan.add(hi, router(InstanceParams::new(VRID, 100, hi)));
    let b = lan.add(lo, router(InstanceParams::new(VRID, 100, lo)));
    assert_eq!(lan.instance(a, VRID).unwrap().params().version, Version::V3);
    lan.start(a);
    lan.start(b);
    lan.run_until(ms(10_000));
    assert_eq!(lan.masters(VRID), [a]);
}

#[test]
fn a_resigning_master_is_replaced_after_exactly_skew_time() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(v3(200, 1)));
    let b = lan.add(addr(2), router(v3(100, 2)));
    let c = lan.add(addr(3), router(v3(150, 3)));
    for n in [a, b, c] {
        lan.start(n);
    }
    lan.run_until(ms(10_500));
    assert_eq!(lan.masters(VRID), [a]);

    lan.shutdown(a);
    let resign: Vec<_> = lan
        .trace()
        .iter()
        .filter(|r| r.node == a && r.at == ms(10_500))
        .map(|r| r.action)
        .collect();
    assert_eq!(
        resign,
        [
            Action::SendAdvert { priority: 0 },
            Action::RemoveVips,
            Action::StateChanged {
                from: State::Master,
                to: State::Stopped,
                priority: 200
            }
        ]
    );
    lan.run_until(ms(20_000));

    // RFC 5798 6.4.2: priority 0 sets the Master_Down_Timer to Skew_Time; the best backup's is
    // the shortest (414 ms against 609 ms) and its first advert resets the other.
    assert_eq!(skew_v3(150, 100), 414);
    assert_eq!(became_master(&lan, c), Some(ms(10_500 + 414)));
    assert_eq!(became_master(&lan, b), None);
    assert_eq!(lan.masters(VRID), [c]);
    assert_eq!(
        lan.instance(a, VRID).unwrap().counters().priority_zero_sent,
        1
    );
    for n in [b, c] {
        assert_eq!(
            lan.instance(n, VRID)
                .unwrap()
                .counters()
                .priority_zero_received,
            1
        );
    }
}

#[test]
fn skew_time_scales_with_the_interval_in_v3_only() {
    // A 2 s interval, priority 100: v3 skew = 156 * 200 cs / 256 = 1218 ms; v2 skew is a
    // fraction of one second whatever the interval: 156 / 256 s = 609 ms.
    for (version, skew) in [(Version::V3, 1218), (Version::V2, 609)] {
        let mut lan = Lan::new();
        let mut pa = InstanceParams::new(VRID, 200, addr(1));
        pa.version = version;
        pa.advert_int_cs = 200;
        let mut pb = InstanceParams::new(VRID, 100, addr(2));
        pb.version = version;
        pb.advert_int_cs = 200;
        let a = lan.add(addr(1), router(pa));
        let b = lan.add(addr(2), router(pb));
        lan.start(a);
        lan.start(b);
        lan.run_until(ms(20_100));
        assert_eq!(lan.masters(VRID), [a], "{version}");
        lan.shutdown(a);
        lan.run_until(ms(30_000));
        assert_eq!(became_master(&lan, b), Some(ms(20_100 + skew)), "{version}");
    }
}

#[test]
fn a_silent_master_is_replaced_after_exactly_master_down_interval() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(v3(200, 1)));
    let b = lan.add(addr(2), router(v3(100, 2)));
    lan.start(a);
    lan.start(b);
    lan.run_until(ms(10_500));
    lan.crash(a);
    lan.run_until(ms(30_000));

    let last_heard = *advert_times(&lan, a).last().unwrap();
    assert_eq!(last_heard, 10_218);
    assert_eq!(
        became_master(&lan, b),
        Some(ms(last_heard + mdi_v3(100, 100)))
    );
    assert_eq!(lan.masters(VRID), [b]);
}

#[test]
fn v3_backups_learn_the_masters_interval() {
    let mut lan = Lan::new();
    let mut pa = v3(200, 1);
    pa.advert_int_cs = 50;
    let a = lan.add(addr(1), router(pa));
    let b = lan.add(addr(2), router(v3(100, 2)));
    lan.start(a);
    lan.start(b);
    lan.run_until(ms(10_000));

    assert_eq!(became_master(&lan, a), Some(ms(mdi_v3(200, 50))));
    let bi = lan.instance(b, VRID).unwrap();
    // RFC 5798 6.4.2: Master_Adver_Interval from the advert, and the down interval with it.
    assert_eq!(bi.master_adver_int_cs(), 50);
    assert_eq!(bi.master_down_interval().as_millis(), mdi_v3(100, 50));
    assert_eq!(mdi_v3(100, 50), 1804);

    lan.crash(a);
    lan.run_until(ms(30_000));
    let last_heard = *advert_times(&lan, a).last().unwrap();
    let takeover = last_heard + 1804;
    assert_eq!(became_master(&lan, b), Some(ms(takeover)));
    // As master it advertises at its own interval (1 s), not the learned one.
    let own: Vec<u64> = advert_times(&lan, b).into_iter().take(3).collect();
    assert_eq!(own, [takeover, takeover + 1000, takeover + 2000]);
    assert_eq!(lan.instance(b, VRID).unwrap().master_adver_int_cs(), 100);
}

#[test]
fn v2_discards_adverts_with_another_interval() {
    // RFC 3768 7.1: a v2 router must drop them, so these two never hear each other.
    let mut lan = Lan::new();
    let mut pa = InstanceParams::new(VRID, 200, addr(1));
    pa.advert_int_cs = 200;
    let a = lan.add(addr(1), router(pa));
    let b = lan.add(addr(2), router(InstanceParams::new(VRID, 100, addr(2))));
    lan.start(a);
    lan.start(b);
    lan.run_until(ms(20_000));
    assert_eq!(lan.masters(VRID), [a, b]);
    let bi = lan.instance(b, VRID).unwrap();
    assert!(bi.counters().interval_errors > 0);
    assert_eq!(
        bi.counters().interval_errors,
        bi.counters().adverts_received
    );
}

#[test]
fn split_brain_heals_at_the_first_advert_after_the_link_returns() {
    // Heal just before A's next advert, and just before B's: either advert ends it.
    for heal_at in [20_100, 20_500] {
        let mut lan = Lan::new();
        let a = lan.add(addr(1), router(v3(200, 1)));
        let b = lan.add(addr(2), router(v3(100, 2)));
        lan.start(a);
        lan.start(b);
        lan.run_until(ms(10_000));
        lan.cut(a, b);
        lan.run_until(ms(heal_at));
        assert_eq!(lan.masters(VRID), [a, b], "both masters while cut");
        assert_eq!(became_master(&lan, b), Some(ms(9_218 + mdi_v3(100, 100))));

        lan.heal(a, b);
        let next_a = advert_times(&lan, a).last().unwrap() + 1000;
        let next_b = advert_times(&lan, b).last().unwrap() + 1000;
        let first = next_a.min(next_b);
        lan.run_until(ms(first - 1));
        assert_eq!(lan.masters(VRID), [a, b]);
        lan.run_until(ms(first));
        // If B's advert comes first, A answers it at once (keepalived) and B yields.
        assert_eq!(
            lan.masters(VRID),
            [a],
            "heal at {heal_at}, first advert at {first}"
        );
        assert_eq!(
            lan.transitions(b, VRID).last(),
            Some(&(ms(first), State::Master, State::Backup))
        );
        lan.run_until(ms(60_000));
        assert_eq!(lan.masters(VRID), [a]);
    }
}

#[test]
fn the_address_owner_takes_over_at_once() {
    let mut lan = Lan::new();
    let b = lan.add(addr(2), router(v3(100, 2)));
    let a = lan.add(addr(1), router(v3(255, 1)));
    lan.start(b);
    lan.run_until(ms(5_000));
    lan.start(a);
    // RFC 5798 6.4.1: priority 255 goes straight to Master.
    assert_eq!(
        lan.transitions(a, VRID),
        [(ms(5_000), State::Initialize, State::Master)]
    );
    assert_eq!(
        lan.transitions(b, VRID).last(),
        Some(&(ms(5_000), State::Master, State::Backup))
    );
}

#[test]
fn initial_state_only_matters_to_the_owner() {
    // keepalived 2.x: `state MASTER` below 255 starts as Backup with a normal timer...
    let mut p = v3(100, 1);
    p.initial_state = InitialState::Master;
    let mut i = router(p);
    i.handle(ms(0), Event::Startup);
    assert_eq!(i.state(), State::Backup);
    assert_eq!(i.poll_timeout(), Some(ms(mdi_v3(100, 100))));

    // ...and an owner configured `state BACKUP` waits its (short) Master_Down_Interval.
    let mut p = v3(255, 1);
    p.initial_state = InitialState::Backup;
    let mut i = router(p);
    i.handle(ms(0), Event::Startup);
    assert_eq!(i.state(), State::Backup);
    assert_eq!(i.poll_timeout(), Some(ms(3_003)));
    i.handle_timeout(ms(3_003));
    assert_eq!(i.state(), State::Master);
}

#[test]
fn a_master_hearing_priority_zero_reasserts_at_once() {
    let mut i = router(v3(200, 1));
    i.handle(ms(0), Event::Startup);
    i.handle_timeout(ms(3_218));
    assert_eq!(i.state(), State::Master);
    let out = i.handle(
        ms(3_500),
        Event::Advert {
            from: addr(9),
            priority: 0,
            advert_int_cs: 100,
        },
    );
    // RFC 5798 6.4.3: send an advert and reset the Adver_Timer.
    assert_eq!(out, [Action::SendAdvert { priority: 200 }]);
    assert_eq!(i.poll_timeout(), Some(ms(4_500)));
    assert_eq!(i.counters().priority_zero_received, 1);
}

#[test]
fn stopped_instances_ignore_adverts_and_can_start_again() {
    let mut i = router(v3(100, 1));
    i.handle(ms(0), Event::Startup);
    let out = i.handle(ms(10), Event::Shutdown);
    assert_eq!(
        out,
        [Action::StateChanged {
            from: State::Backup,
            to: State::Stopped,
            priority: 100
        }]
    );
    assert_eq!(i.poll_timeout(), None);
    let out = i.handle(
        ms(20),
        Event::Advert {
            from: addr(2),
            priority: 50,
            advert_int_cs: 100,
        },
    );
    assert!(out.is_empty());
    i.handle(ms(30), Event::Startup);
    assert_eq!(i.state(), State::Backup);
    assert_eq!(i.poll_timeout(), Some(ms(30 + 3609)));
    assert_eq!(i.counters().transitions, 4);
}

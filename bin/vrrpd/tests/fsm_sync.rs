//! Sync groups: instances that change state together (keepalived 2.x vrrp_sync.c semantics).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr};

use vrrpd::fsm::sim::{Lan, Node};
use vrrpd::fsm::{
    Action, Event, Instance, InstanceParams, Instant, State, SyncGroup, TrackInterface,
    TrackScript, Version,
};

fn addr(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
}

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn v3(vrid: u8, priority: u8, last: u8) -> InstanceParams {
    let mut p = InstanceParams::new(vrid, priority, addr(last));
    p.version = Version::V3;
    p
}

fn inst(p: InstanceParams) -> Instance {
    Instance::new(p).unwrap()
}

/// Master_Down_Interval in ms for v3 at 1 s.
fn mdi(priority: u8) -> u64 {
    3000 + (256 - u64::from(priority)) * 1000 / 256
}

/// The last transition of `vrid` on `node`.
fn last(lan: &Lan, node: usize, vrid: u8) -> (Instant, State, State) {
    *lan.transitions(node, vrid).last().unwrap()
}

fn eth1(up: bool) -> Event {
    Event::InterfaceChanged {
        name: "eth1".into(),
        up,
    }
}

/// R1 (.1, priority 200, tracking eth1 on VRID 1) and R2 (.2, priority 100), each running
/// VRIDs 1 and 2 in one sync group; both masters on R1.
fn two_routers() -> (Lan, usize, usize) {
    let mut p1 = v3(1, 200, 1);
    p1.track_interfaces.push(TrackInterface::new("eth1", 0));
    let r1 = SyncGroup::new(vec![inst(p1), inst(v3(2, 200, 1))]);
    let r2 = SyncGroup::new(vec![inst(v3(1, 100, 2)), inst(v3(2, 100, 2))]);
    let mut lan = Lan::new();
    let a = lan.add(addr(1), r1);
    let b = lan.add(addr(2), r2);
    lan.start(a);
    lan.start(b);
    lan.run_until(ms(10_500));
    for vrid in [1, 2] {
        assert_eq!(
            last(&lan, a, vrid),
            (ms(mdi(200)), State::Backup, State::Master)
        );
        assert_eq!(lan.masters(vrid), [a]);
    }
    (lan, a, b)
}

#[test]
fn one_members_fault_takes_the_whole_group_to_fault_and_back() {
    let (mut lan, a, b) = two_routers();
    lan.inject_all(a, eth1(false));
    for vrid in [1, 2] {
        // VRID 2 tracks nothing, yet resigns with VRID 1.
        assert_eq!(
            last(&lan, a, vrid),
            (ms(10_500), State::Master, State::Fault)
        );
        assert!(lan.trace().iter().any(|r| r.node == a
            && r.vrid == vrid
            && r.at == ms(10_500)
            && r.action == Action::SendAdvert { priority: 0 }));
    }
    lan.run_until(ms(20_000));
    for vrid in [1, 2] {
        // Both peers' timers are set to Skew_Time and fire together: the group moves at once.
        assert_eq!(
            last(&lan, b, vrid),
            (ms(10_500 + 609), State::Backup, State::Master)
        );
    }
    let Some(Node::Group(g)) = lan.node(a) else {
        panic!("R1 runs a sync group");
    };
    assert_eq!(g.state(), State::Fault);

    lan.inject_all(a, eth1(true));
    for vrid in [1, 2] {
        assert_eq!(
            last(&lan, a, vrid),
            (ms(20_000), State::Fault, State::Backup)
        );
    }
    lan.run_until(ms(40_000));
    for vrid in [1, 2] {
        assert_eq!(
            last(&lan, a, vrid),
            (ms(20_000 + mdi(200)), State::Backup, State::Master)
        );
        assert_eq!(
            last(&lan, b, vrid),
            (ms(20_000 + mdi(200)), State::Master, State::Backup)
        );
        assert_eq!(lan.masters(vrid), [a]);
    }
}

#[test]
fn one_member_losing_master_takes_the_others_to_backup() {
    let (mut lan, a, b) = two_routers();
    // A third router with a higher priority, for VRID 1 only.
    let c = lan.add(addr(3), inst(v3(1, 250, 3)));
    lan.start(c);
    lan.run_until(ms(60_000));

    let takeover = ms(10_500 + mdi(250));
    assert_eq!(last(&lan, c, 1), (takeover, State::Backup, State::Master));
    // VRID 2 leaves Master with VRID 1, though nobody outranks it.
    assert_eq!(last(&lan, a, 1), (takeover, State::Master, State::Backup));
    assert_eq!(last(&lan, a, 2), (takeover, State::Master, State::Backup));
    // And the group stays Backup while any member hears a better master: keepalived prefers
    // Backup to thrashing, so nobody holds VRID 2 now. Sync groups want the same routers on
    // every VRID.
    assert_eq!(lan.masters(1), [c]);
    assert_eq!(lan.masters(2), Vec::<usize>::new());
    for vrid in [1, 2] {
        assert_eq!(lan.state(b, vrid), Some(State::Backup));
    }
}

#[test]
fn the_group_becomes_master_when_its_last_member_is_ready() {
    let mut lan = Lan::new();
    let g = lan.add(
        addr(1),
        SyncGroup::new(vec![inst(v3(1, 100, 1)), inst(v3(2, 150, 1))]),
    );
    lan.start(g);
    lan.run_until(ms(10_000));
    // Alone, VRID 2 would take over at 3414 ms; in the group it waits for VRID 1 (3609 ms).
    assert_eq!(mdi(150), 3414);
    for vrid in [1, 2] {
        assert_eq!(
            lan.transitions(g, vrid),
            [
                (ms(0), State::Initialize, State::Backup),
                (ms(mdi(100)), State::Backup, State::Master)
            ]
        );
    }
}

#[test]
fn the_group_waits_for_every_members_first_script_result() {
    let mut p = v3(1, 200, 1);
    p.track_scripts.push(TrackScript::new("chk", 0));
    let mut g = SyncGroup::new(vec![inst(p), inst(v3(2, 200, 1))]);
    let out = g.handle_all(ms(0), Event::Startup);
    // VRID 2 comes up; VRID 1 waits in Initialize for its weight-0 script.
    assert_eq!(g.member(0).unwrap().state(), State::Initialize);
    assert_eq!(g.member(1).unwrap().state(), State::Backup);
    assert!(out.iter().all(|&(i, _)| i == 1));
    g.handle_timeout(ms(mdi(200)));
    assert_eq!(g.state(), State::Initialize);
    assert_eq!(g.member(1).unwrap().state(), State::Backup);

    g.handle_all(
        ms(5_000),
        Event::ScriptResult {
            name: "chk".into(),
            ok: true,
        },
    );
    let at = g.poll_timeout().unwrap();
    assert_eq!(at, ms(5_000 + mdi(200)));
    let out = g.handle_timeout(at);
    assert_eq!(g.state(), State::Master);
    let became: Vec<usize> = out
        .iter()
        .filter(|(_, a)| {
            matches!(
                a,
                Action::StateChanged {
                    to: State::Master,
                    ..
                }
            )
        })
        .map(|&(i, _)| i)
        .collect();
    assert_eq!(became, [0, 1]);
}

#[test]
fn shutting_the_group_down_resigns_every_master() {
    let (mut lan, a, b) = two_routers();
    lan.shutdown(a);
    for vrid in [1, 2] {
        assert_eq!(
            last(&lan, a, vrid),
            (ms(10_500), State::Master, State::Stopped)
        );
    }
    lan.run_until(ms(20_000));
    for vrid in [1, 2] {
        assert_eq!(
            last(&lan, b, vrid),
            (ms(10_500 + 609), State::Backup, State::Master)
        );
    }
}

#[test]
fn an_event_for_a_member_that_does_not_exist_is_ignored() {
    let mut g = SyncGroup::new(vec![inst(v3(1, 100, 1))]);
    assert!(g.handle(ms(0), 5, Event::Startup).is_empty());
    assert_eq!(g.state(), State::Initialize);
}

/// A dual-stack group in the sim: VRID 1 stands for the IPv4 instance (addresses 192.0.2.x),
/// VRID 2 for the IPv6 one (here 192.0.2.(100 + x), sorting the other way round between R2
/// and R3, as a node's IPv4 and IPv6 addresses often do). Equal priorities, as OpenShift's.
fn dual_stack(priority: u8, v4_last: u8, v6_last: u8) -> SyncGroup {
    let mut second = v3(2, priority, 100 + v6_last);
    second.vrid = 2;
    SyncGroup::new(vec![inst(v3(1, priority, v4_last)), inst(second)])
}

#[test]
fn a_dual_stack_group_whose_addresses_sort_both_ways_settles_on_one_router() {
    // R1 (priority 120) holds both; R2 has the greater IPv4 address, R3 the greater "IPv6"
    // one. When R1 dies, R2 and R3 both take both VIPs after the same Master_Down_Interval
    // and hear each other: R3 loses the IPv4 tie and steps down with its whole group; R2's
    // IPv6 member must not yield to R3's tie (else both groups step down, and again after
    // every Master_Down_Interval, for ever).
    let mut lan = Lan::new();
    let r1 = lan.add(addr(1), dual_stack(120, 1, 1));
    let r2 = lan.add(addr(12), dual_stack(100, 12, 11));
    let r3 = lan.add(addr(11), dual_stack(100, 11, 12));
    for r in [r1, r2, r3] {
        lan.start(r);
    }
    lan.run_until(ms(10_000));
    assert_eq!((lan.masters(1), lan.masters(2)), (vec![r1], vec![r1]));
    lan.crash(r1);
    lan.run_until(ms(60_000));
    assert_eq!((lan.masters(1), lan.masters(2)), (vec![r2], vec![r2]));
    // One move each, and R3 gave both up at the same instant.
    for vrid in [1, 2] {
        let to_master = |r| {
            lan.transitions(r, vrid)
                .iter()
                .filter(|t| t.2 == State::Master)
                .count()
        };
        assert_eq!((to_master(r2), to_master(r3)), (1, 1), "VRID {vrid}");
    }
    assert_eq!(last(&lan, r3, 1).0, last(&lan, r3, 2).0);
    assert_eq!(last(&lan, r3, 2).2, State::Backup);
}

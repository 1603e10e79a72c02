//! Track scripts and interfaces: effective priority (keepalived's arithmetic), Fault, and the
//! elections they cause, on a virtual clock.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use vrrpd::fsm::sim::Lan;
use vrrpd::fsm::{
    Action, Event, Instance, InstanceParams, Instant, ScriptStatus, State, TrackInterface,
    TrackScript,
};

#[allow(dead_code, reason = "each FSM test uses a few of the shared helpers")]
#[path = "support/fsm.rs"]
mod fsm_support;
use fsm_support::{addr, ms, router, v3_on};

const VRID: u8 = 20;

fn v3(priority: u8, last: u8) -> InstanceParams {
    v3_on(VRID, priority, last)
}

fn with_script(mut p: InstanceParams, weight: i32, rise: u32, fall: u32) -> InstanceParams {
    let mut s = TrackScript::new("chk", weight);
    s.rise = rise;
    s.fall = fall;
    p.track_scripts.push(s);
    p
}

fn result(ok: bool) -> Event {
    Event::ScriptResult {
        name: "chk".into(),
        ok,
    }
}

fn link(name: &str, up: bool) -> Event {
    Event::InterfaceChanged {
        name: name.into(),
        up,
    }
}

/// Master_Down_Interval in ms for v3 at 1 s (RFC 5798 6.1).
fn mdi(priority: u8) -> u64 {
    3000 + (256 - u64::from(priority)) * 1000 / 256
}

fn adverts_before(lan: &Lan, node: usize, t: u64) -> u64 {
    lan.adverts(node, VRID)
        .into_iter()
        .map(|(at, _)| at.as_millis())
        .filter(|&at| at < t)
        .max()
        .unwrap()
}

fn master_since(lan: &Lan, node: usize) -> Option<Instant> {
    lan.transitions(node, VRID)
        .into_iter()
        .rev()
        .find(|&(_, _, to)| to == State::Master)
        .map(|(at, _, _)| at)
}

#[test]
fn a_failing_script_with_negative_weight_moves_the_master_and_back() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(with_script(v3(200, 1), -150, 1, 1)));
    let b = lan.add(addr(2), router(v3(100, 2)));
    lan.start(a);
    lan.start(b);
    lan.inject(a, VRID, result(true));
    lan.run_until(ms(10_500));
    assert_eq!(lan.masters(VRID), [a]);

    lan.inject(a, VRID, result(false));
    // The change is advertised at once.
    let now: Vec<Action> = lan
        .trace()
        .iter()
        .filter(|r| r.node == a && r.at == ms(10_500))
        .map(|r| r.action)
        .collect();
    assert_eq!(
        now,
        [
            Action::PriorityChanged { from: 200, to: 50 },
            Action::SendAdvert { priority: 50 }
        ]
    );
    lan.run_until(ms(20_000));
    // B, preempting, discards the priority-50 adverts; its timer runs from the last one it
    // accepted.
    let last_200 = adverts_before(&lan, a, 10_500);
    assert_eq!(master_since(&lan, b), Some(ms(last_200 + mdi(100))));
    assert_eq!(lan.masters(VRID), [b]);

    lan.inject(a, VRID, result(true));
    lan.run_until(ms(40_000));
    // A is back at 200 and discards B's adverts from then on. Its running timer was armed at
    // priority 50 and shrinks with the skew, so it fires one priority-200 Master_Down_Interval
    // after the last advert it accepted.
    let last_accepted = adverts_before(&lan, b, 20_000);
    assert_eq!(master_since(&lan, a), Some(ms(last_accepted + mdi(200))));
    assert_eq!(lan.masters(VRID), [a]);
}

#[test]
fn a_script_with_positive_weight_lifts_a_router_above_the_master() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(with_script(v3(100, 1), 150, 1, 1)));
    let b = lan.add(addr(2), router(v3(200, 2)));
    lan.start(a);
    lan.start(b);
    lan.run_until(ms(10_000));
    // No result yet: the script adds nothing either way.
    assert_eq!(lan.instance(a, VRID).unwrap().priority(), 100);
    assert_eq!(lan.masters(VRID), [b]);

    lan.inject(a, VRID, result(true));
    assert_eq!(lan.instance(a, VRID).unwrap().priority(), 250);
    lan.run_until(ms(20_000));
    let last_accepted = adverts_before(&lan, b, 10_000);
    assert_eq!(master_since(&lan, a), Some(ms(last_accepted + mdi(250))));
    assert_eq!(lan.masters(VRID), [a]);

    lan.inject(a, VRID, result(false));
    assert_eq!(lan.instance(a, VRID).unwrap().priority(), 100);
    lan.run_until(ms(40_000));
    let last_250 = adverts_before(&lan, a, 20_000);
    assert_eq!(master_since(&lan, b), Some(ms(last_250 + mdi(200))));
    assert_eq!(lan.masters(VRID), [b]);
}

#[test]
fn a_weight_zero_script_means_fault_and_back() {
    let mut lan = Lan::new();
    let a = lan.add(addr(1), router(with_script(v3(200, 1), 0, 1, 1)));
    let b = lan.add(addr(2), router(v3(100, 2)));
    lan.start(a);
    lan.start(b);
    // keepalived: an instance waits in Initialize for its weight-0 scripts' first result.
    assert_eq!(lan.state(a, VRID), Some(State::Initialize));
    assert_eq!(lan.instance(a, VRID).unwrap().poll_timeout(), None);
    lan.run_until(ms(100));
    lan.inject(a, VRID, result(true));
    assert_eq!(lan.state(a, VRID), Some(State::Backup));
    lan.run_until(ms(10_500));
    assert_eq!(master_since(&lan, a), Some(ms(100 + mdi(200))));

    lan.inject(a, VRID, result(false));
    let now: Vec<Action> = lan
        .trace()
        .iter()
        .filter(|r| r.node == a && r.at == ms(10_500))
        .map(|r| r.action)
        .collect();
    // A master going to Fault resigns with priority 0 and gives the addresses back.
    assert_eq!(
        now,
        [
            Action::SendAdvert { priority: 0 },
            Action::RemoveVips,
            Action::StateChanged {
                from: State::Master,
                to: State::Fault,
                priority: 200
            }
        ]
    );
    lan.run_until(ms(20_000));
    assert_eq!(master_since(&lan, b), Some(ms(10_500 + 609)));
    // In Fault, adverts are ignored and nothing is scheduled.
    assert_eq!(lan.state(a, VRID), Some(State::Fault));
    assert_eq!(lan.instance(a, VRID).unwrap().poll_timeout(), None);

    lan.inject(a, VRID, result(true));
    assert_eq!(lan.state(a, VRID), Some(State::Backup));
    lan.run_until(ms(40_000));
    // Back to Backup with a full Master_Down_Timer, then preempts the lower master.
    assert_eq!(master_since(&lan, a), Some(ms(20_000 + mdi(200))));
    assert_eq!(lan.masters(VRID), [a]);
}

#[test]
fn rise_and_fall_count_consecutive_results() {
    let mut i = router(with_script(v3(200, 1), -150, 3, 2));
    i.handle(ms(0), Event::Startup);
    let mut t = 0;
    let mut feed = |i: &mut Instance, ok: bool| {
        t += 100;
        i.handle(ms(t), result(ok));
        (i.script_status("chk").unwrap(), i.priority())
    };
    use ScriptStatus::{Failing, Ok};
    // The first result decides (keepalived starts the count at rise - 1).
    assert_eq!(feed(&mut i, false), (Failing, 50));
    // rise 3: two successes are not enough, a failure restarts the count.
    assert_eq!(feed(&mut i, true), (Failing, 50));
    assert_eq!(feed(&mut i, true), (Failing, 50));
    assert_eq!(feed(&mut i, false), (Failing, 50));
    assert_eq!(feed(&mut i, true), (Failing, 50));
    assert_eq!(feed(&mut i, true), (Failing, 50));
    assert_eq!(feed(&mut i, true), (Ok, 200));
    // fall 2: one failure is not enough, a success restarts the count.
    assert_eq!(feed(&mut i, false), (Ok, 200));
    assert_eq!(feed(&mut i, true), (Ok, 200));
    assert_eq!(feed(&mut i, false), (Ok, 200));
    assert_eq!(feed(&mut i, false), (Failing, 50));
}

#[test]
fn init_fail_starts_failing() {
    let mut p = v3(200, 1);
    let mut s = TrackScript::new("chk", -50);
    s.init_fail = true;
    s.rise = 2;
    p.track_scripts.push(s);
    let mut i = router(p);
    assert_eq!(i.priority(), 150);
    i.handle(ms(0), Event::Startup);
    i.handle(ms(1), result(true));
    assert_eq!(i.priority(), 150);
    i.handle(ms(2), result(true));
    assert_eq!(i.priority(), 200);
}

#[test]
fn priority_is_clamped_to_1_through_254() {
    let mut i = router(with_script(v3(250, 1), 10, 1, 1));
    i.handle(ms(0), result(true));
    assert_eq!(i.priority(), 254, "tracking never makes an owner");

    let mut i = router(with_script(v3(5, 1), -10, 1, 1));
    i.handle(ms(0), result(false));
    assert_eq!(i.priority(), 1, "tracking never sends priority 0");

    let mut p = v3(100, 1);
    p.track_scripts.push(TrackScript::new("a", 100));
    p.track_scripts.push(TrackScript::new("b", 100));
    p.track_interfaces.push(TrackInterface::new("eth1", -253));
    let mut i = router(p);
    for name in ["a", "b"] {
        i.handle(
            ms(0),
            Event::ScriptResult {
                name: name.into(),
                ok: true,
            },
        );
    }
    assert_eq!(i.priority(), 254);
    i.handle(ms(0), link("eth1", false));
    assert_eq!(i.priority(), 47);
}

#[test]
fn the_owner_priority_never_changes() {
    let mut p = with_script(v3(255, 1), -100, 1, 1);
    p.track_interfaces.push(TrackInterface::new("eth1", -100));
    let mut i = router(p);
    i.handle(ms(0), Event::Startup);
    assert_eq!(i.state(), State::Master);
    let out = i.handle(ms(10), result(false));
    assert!(out.is_empty(), "{out:?}");
    let out = i.handle(ms(20), link("eth1", false));
    assert!(out.is_empty(), "{out:?}");
    assert_eq!((i.priority(), i.state()), (255, State::Master));
}

#[test]
fn the_owner_still_goes_to_fault() {
    let mut i = router(with_script(v3(255, 1), 0, 1, 1));
    i.handle(ms(0), Event::Startup);
    assert_eq!(i.state(), State::Initialize);
    i.handle(ms(10), result(true));
    assert_eq!(i.state(), State::Master);
    i.handle(ms(20), result(false));
    assert_eq!(i.state(), State::Fault);
    // Leaving Fault, the owner goes straight back to Master (RFC 5798 6.4.1 applies again).
    i.handle(ms(30), result(true));
    assert_eq!(i.state(), State::Master);
}

#[test]
fn a_priority_change_while_master_is_advertised_at_once() {
    let mut p = v3(200, 1);
    p.track_interfaces.push(TrackInterface::new("bond0", -30));
    let mut i = router(p);
    i.handle(ms(0), Event::Startup);
    i.handle_timeout(ms(3_218));
    assert_eq!(i.state(), State::Master);
    let out = i.handle(ms(3_700), link("bond0", false));
    assert_eq!(
        out,
        [
            Action::PriorityChanged { from: 200, to: 170 },
            Action::SendAdvert { priority: 170 }
        ]
    );
    assert_eq!(i.poll_timeout(), Some(ms(4_700)));
    let out = i.handle_timeout(ms(4_700));
    assert_eq!(out, [Action::SendAdvert { priority: 170 }]);
}

#[test]
fn a_tracked_interface_going_down_means_fault() {
    let mut p = v3(100, 1);
    p.track_interfaces.push(TrackInterface::new("eth0", 0));
    p.track_interfaces.push(TrackInterface::new("eth1", 25));
    let mut i = router(p);
    // Up interfaces with a positive weight count from the start.
    assert_eq!(i.priority(), 125);
    // Reported down before startup: the instance starts in Fault.
    i.handle(ms(0), link("eth0", false));
    i.handle(ms(0), Event::Startup);
    assert_eq!(i.state(), State::Fault);
    assert_eq!(i.interface_up("eth0"), Some(false));
    i.handle(ms(100), link("eth0", true));
    assert_eq!(i.state(), State::Backup);
    assert_eq!(i.poll_timeout(), Some(ms(100 + mdi(125))));
    i.handle(ms(200), link("eth1", false));
    assert_eq!(i.priority(), 100);
    // Names not tracked change nothing.
    assert!(i.handle(ms(300), link("eth9", false)).is_empty());
    assert!(i
        .handle(
            ms(300),
            Event::ScriptResult {
                name: "other".into(),
                ok: false
            }
        )
        .is_empty());
}

#[test]
fn a_backup_whose_priority_rises_shortens_its_running_timer() {
    let mut i = router(with_script(v3(100, 1), 100, 1, 1));
    i.handle(ms(0), Event::Startup);
    assert_eq!(i.poll_timeout(), Some(ms(mdi(100))));
    i.handle(ms(1_000), result(true));
    // keepalived vrrp_set_effective_priority: the timer moves by the change in skew.
    assert_eq!(i.poll_timeout(), Some(ms(mdi(200))));
    // A lower priority does not lengthen it.
    i.handle(ms(2_000), result(false));
    assert_eq!(i.poll_timeout(), Some(ms(mdi(200))));
}

#[test]
fn bad_parameters_are_refused_with_a_reason() {
    let mut p = v3(100, 1);
    p.vrid = 0;
    assert!(Instance::new(p).is_err());
    let mut p = v3(100, 1);
    p.advert_int_cs = 0;
    assert!(Instance::new(p).is_err());
    let mut p = InstanceParams::new(VRID, 100, addr(1));
    p.advert_int_cs = 150;
    let e = Instance::new(p).unwrap_err();
    assert!(e.to_string().contains("whole seconds"), "{e}");
    let p = with_script(v3(100, 1), 300, 1, 1);
    let e = Instance::new(p).unwrap_err();
    assert!(e.to_string().contains("-253..=253"), "{e}");
    let p = with_script(with_script(v3(100, 1), 1, 1, 1), 2, 1, 1);
    assert!(Instance::new(p).unwrap_err().to_string().contains("twice"));
    let p = with_script(v3(100, 1), 1, 0, 1);
    assert!(Instance::new(p).is_err());
}

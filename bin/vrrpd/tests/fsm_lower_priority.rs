//! Lower-priority adverts, on a virtual clock: a master that hears one re-announces its
//! addresses (keepalived's garp_lower_prio_repeat / garp_lower_prio_delay, on by default), and
//! a backup with vrrpd's `preempt_on_lower_priority` takes over after Skew_Time when the master
//! advertises a priority below its own (RFC 5798 6.4.2 would discard the advert and wait for
//! Master_Down_Interval).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use vrrpd::fsm::sim::Lan;
use vrrpd::fsm::{Action, Event, GarpParams, InstanceParams, State, SyncGroup, TrackScript};

#[allow(dead_code, reason = "each FSM test uses a few of the shared helpers")]
#[path = "support/fsm.rs"]
mod fsm_support;
use fsm_support::{addr, ms, router, v3_on};

const VRID: u8 = 40;

/// When [`split_brain`] heals.
const HEAL: u64 = 10_300;

/// B's first advert after the heal: it became master at mdi(100) and advertises every second.
fn heard() -> u64 {
    mdi(100) + 7_000
}

/// A's first scheduled advert after [`heard`]: vrrpd re-announces once more with it.
fn next_advert() -> u64 {
    mdi(200) + 8_000
}

fn v3(priority: u8, last: u8) -> InstanceParams {
    v3_on(VRID, priority, last)
}

/// Master_Down_Interval in ms for v3 at 1 s (RFC 5798 6.1).
fn mdi(priority: u8) -> u64 {
    3000 + skew(priority)
}

/// Skew_Time in ms for v3 at 1 s.
fn skew(priority: u8) -> u64 {
    (256 - u64::from(priority)) * 1000 / 256
}

/// (when, repeat) of every GARP burst `node` sent from `since` on.
fn garps(lan: &Lan, node: usize, since: u64) -> Vec<(u64, u32)> {
    lan.trace()
        .iter()
        .filter(|r| r.node == node && r.at >= ms(since))
        .filter_map(|r| match r.action {
            Action::SendGarp { repeat } => Some((r.at.as_millis(), repeat)),
            _ => None,
        })
        .collect()
}

/// A (.1, priority 200) and B (.2, priority 100) cut apart from the start, so both are master;
/// healed at 10.3 s, after A's advert of 10.218 s and before B's of 10.609 s, so that A hears
/// B first. Returns the LAN and the two routers.
fn split_brain(a: InstanceParams, b: InstanceParams) -> (Lan, usize, usize) {
    split_brain_healed_at(a, b, HEAL)
}

/// [`split_brain`], healed at `heal` ms.
fn split_brain_healed_at(a: InstanceParams, b: InstanceParams, heal: u64) -> (Lan, usize, usize) {
    let mut lan = Lan::new();
    let ra = lan.add(addr(1), router(a));
    let rb = lan.add(addr(2), router(b));
    lan.cut(ra, rb);
    lan.start(ra);
    lan.start(rb);
    lan.run_until(ms(heal));
    assert_eq!(lan.state(ra, VRID), Some(State::Master));
    assert_eq!(lan.state(rb, VRID), Some(State::Master));
    lan.heal(ra, rb);
    (lan, ra, rb)
}

#[test]
fn keepalived_defaults_re_announce_after_a_lower_priority_advert() {
    let g = GarpParams::default();
    assert_eq!((g.lower_prio_repeat, g.lower_prio_delay_cs), (5, 500));
    let (mut lan, a, b) = split_brain(v3(200, 1), v3(100, 2));
    lan.run_until(ms(30_000));
    // B became master at mdi(100) and advertises every second from then on: the first one
    // after the heal reaches A, which answers at once (advert + GARP) and again 5 s later
    // (keepalived), and once more with its next advert (vrrpd: B's own burst may have raced
    // the first).
    let heard = heard();
    assert!(heard > HEAL && heard < mdi(200) + 8_000);
    assert_eq!(
        garps(&lan, a, HEAL),
        [(heard, 5), (next_advert(), 5), (heard + 5_000, 5)]
    );
    assert_eq!(lan.masters(VRID), [a]);
    let (at, from, to) = *lan.transitions(b, VRID).last().unwrap();
    assert_eq!((at, from, to), (ms(heard), State::Master, State::Backup));
    // A answered with its own advert at the same instant, so B yielded at once.
    assert!(lan.adverts(a, VRID).contains(&(ms(heard), 200)));
}

#[test]
fn a_master_that_loses_the_tie_at_a_heal_says_so_and_the_other_re_announces() {
    // Equal priorities (OpenShift's masters), A at .2 wins the tie; B started half a second
    // later, so their adverts alternate. Healed after B's advert, so A's next is the first to
    // cross and B steps down before A has heard anything of it. B's one advert on the way
    // out is what tells A that its neighbours may hold B's MAC for the VIP: A re-announces
    // at once. (Without it B left silently, and A, master all along, never announced again.)
    let mut lan = Lan::new();
    let a = lan.add(addr(2), router(v3(100, 2)));
    let b = lan.add(addr(1), router(v3(100, 1)));
    lan.cut(a, b);
    lan.start(a);
    lan.run_until(ms(500));
    lan.start(b);
    // B's adverts at 500 + mdi + k s, A's at mdi + k s: heal 100 ms after one of B's.
    let heal = mdi(100) + 7_600;
    lan.run_until(ms(heal));
    assert_eq!(lan.masters(VRID).len(), 2);
    lan.heal(a, b);
    lan.run_until(ms(heal + 1_000));
    let stepped = lan.transitions(b, VRID).last().copied().unwrap();
    assert_eq!((stepped.1, stepped.2), (State::Master, State::Backup));
    assert!(
        lan.adverts(b, VRID).contains(&(stepped.0, 100)),
        "{:?}",
        lan.adverts(b, VRID)
    );
    assert_eq!(garps(&lan, a, heal), [(stepped.0.as_millis(), 5)]);
}

#[test]
fn a_master_preempted_by_a_higher_priority_leaves_without_a_word() {
    // A higher priority is a preemption as often as a heal, and the preempting master
    // announces itself: B (100) steps down on A's (200) advert and sends nothing, as
    // keepalived.
    let heal = mdi(100) + 7_100;
    let (mut lan, a, b) = split_brain_healed_at(v3(200, 1), v3(100, 2), heal);
    let a_next = mdi(200) + 8_000;
    lan.run_until(ms(a_next + 100));
    assert_eq!(
        lan.transitions(b, VRID).last(),
        Some(&(ms(a_next), State::Master, State::Backup))
    );
    assert!(!lan.adverts(b, VRID).iter().any(|(at, _)| *at >= ms(a_next)));
    assert_eq!(garps(&lan, a, heal), []);
}

/// A master at priority 200 (1 s adverts), and a priority-100 advert from host `from`.
fn master_and_a_lower_advert(from: u8) -> (vrrpd::fsm::Instance, Event) {
    let mut a = router(v3(200, 1));
    a.handle(ms(0), Event::Startup);
    a.handle_timeout(ms(mdi(200)));
    assert_eq!(a.state(), State::Master);
    let lower = Event::Advert {
        from: addr(from),
        priority: 100,
        advert_int_cs: 100,
    };
    (a, lower)
}

#[test]
fn the_delayed_burst_is_not_pushed_back_or_doubled() {
    // A master that keeps hearing lower adverts (the other side cannot hear it yet): a burst
    // for each, and one delayed burst, where the first advert put it.
    let (mut a, lower) = master_and_a_lower_advert(2);
    let mut bursts = Vec::new();
    for t in [10_000, 11_000, 12_000] {
        a.handle_timeout(ms(t));
        let out = a.handle(ms(t), lower.clone());
        assert_eq!(
            out,
            [
                Action::SendAdvert { priority: 200 },
                Action::SendGarp { repeat: 5 }
            ],
            "at {t} ms"
        );
        bursts.push(t);
    }
    let mut t = 12_000;
    let mut delayed = Vec::new();
    while t < 20_000 {
        t += 10;
        let out = a.handle_timeout(ms(t));
        if out.contains(&Action::SendGarp { repeat: 5 }) {
            delayed.push(t);
        }
    }
    // The garp_master_delay burst of the takeover (mdi + 5 s) came before; then one with the
    // next advert after the last lower one (13 s), and the delayed one (15 s).
    assert_eq!(delayed, [13_000, 15_000]);
}

#[test]
fn a_flood_of_lower_adverts_is_answered_once_an_interval() {
    // A host on the LAN sends lower-priority adverts every 10 ms for 3 s: the master answers
    // the first of each advert interval (an advert and a burst) and ignores the rest, so it
    // sends no more than a router of the group would make it.
    let (mut a, lower) = master_and_a_lower_advert(9);
    let mut answered = Vec::new();
    for t in (10_000..13_000).step_by(10) {
        a.handle_timeout(ms(t));
        let out = a.handle(ms(t), lower.clone());
        if out.contains(&Action::SendGarp { repeat: 5 }) {
            assert!(
                out.contains(&Action::SendAdvert { priority: 200 }),
                "at {t} ms"
            );
            answered.push(t);
        } else {
            assert_eq!(
                out,
                [],
                "at {t} ms: only the first of an interval is answered"
            );
        }
    }
    assert_eq!(answered, [10_000, 11_000, 12_000]);
    assert_eq!(a.state(), State::Master);
}

#[test]
fn repeat_and_delay_are_configurable_and_zero_switches_them_off() {
    let mut a = v3(200, 1);
    a.garp.lower_prio_repeat = 2;
    a.garp.lower_prio_delay_cs = 0;
    let (mut lan, ra, _) = split_brain(a, v3(100, 2));
    lan.run_until(ms(30_000));
    assert_eq!(garps(&lan, ra, HEAL), [(heard(), 2), (next_advert(), 2)]);

    let mut a = v3(200, 1);
    a.garp.lower_prio_repeat = 0;
    let (mut lan, ra, _) = split_brain(a, v3(100, 2));
    lan.run_until(ms(30_000));
    assert_eq!(garps(&lan, ra, HEAL), []);
    assert_eq!(lan.masters(VRID), [ra], "the advert alone still ends it");
}

#[test]
fn lower_prio_no_advert_still_re_announces_as_keepalived_does() {
    let mut a = v3(200, 1);
    a.lower_prio_no_advert = true;
    let (mut lan, ra, rb) = split_brain(a, v3(100, 2));
    lan.run_until(ms(30_000));
    let heard = heard();
    assert_eq!(
        garps(&lan, ra, HEAL),
        [(heard, 5), (next_advert(), 5), (heard + 5_000, 5)]
    );
    // No answer: B steps down at A's next scheduled advert instead.
    assert_eq!(lan.masters(VRID), [ra]);
    let (at, _, to) = *lan.transitions(rb, VRID).last().unwrap();
    assert_eq!(to, State::Backup);
    assert!(at > ms(heard) && at <= ms(heard + 1_000), "{at:?}");
}

#[test]
fn in_a_sync_group_every_master_member_re_announces() {
    let group = |prio, last| {
        let p1 = v3(prio, last);
        let mut p2 = p1.clone();
        p2.vrid = VRID + 1;
        SyncGroup::new(vec![router(p1), router(p2)])
    };
    let mut lan = Lan::new();
    let a = lan.add(addr(1), group(200, 1));
    let b = lan.add(addr(2), group(100, 2));
    lan.cut(a, b);
    lan.start(a);
    lan.start(b);
    lan.run_until(ms(HEAL));
    lan.heal(a, b);
    lan.run_until(ms(30_000));
    let heard = heard();
    let bursts: Vec<(u64, u8)> = lan
        .trace()
        .iter()
        .filter(|r| r.node == a && r.at >= ms(HEAL))
        .filter(|r| matches!(r.action, Action::SendGarp { .. }))
        .map(|r| (r.at.as_millis(), r.vrid))
        .collect();
    // Both VRIDs at once: each member hears B's member of its own VRID at the same instant,
    // the first one also re-announces the other's (keepalived), the second one's own burst
    // follows; then one delayed burst each.
    assert!(
        bursts.contains(&(heard, VRID)) && bursts.contains(&(heard, VRID + 1)),
        "{bursts:?}"
    );
    assert!(bursts.contains(&(heard + 5_000, VRID)));
    assert!(bursts.contains(&(heard + 5_000, VRID + 1)));
    assert_eq!(lan.masters(VRID), [a]);
    assert_eq!(lan.masters(VRID + 1), [a]);
}

// ---- preempt_on_lower_priority -------------------------------------------------------------

/// M (.1, priority 150, a script of weight -100) and B (.2, priority 100); M is master with the
/// script OK, the script fails at 10 s. Returns the LAN, M and B.
fn track_failure(on: bool, b: impl FnOnce(&mut InstanceParams)) -> (Lan, usize, usize) {
    let mut pm = v3(150, 1);
    pm.track_scripts.push(TrackScript::new("chk", -100));
    pm.preempt_on_lower_priority = on;
    let mut pb = v3(100, 2);
    pb.preempt_on_lower_priority = on;
    b(&mut pb);
    let mut lan = Lan::new();
    let m = lan.add(addr(1), router(pm));
    let rb = lan.add(addr(2), router(pb));
    lan.start(m);
    lan.start(rb);
    let ok = |ok| Event::ScriptResult {
        name: "chk".into(),
        ok,
    };
    lan.inject(m, VRID, ok(true));
    lan.run_until(ms(10_000));
    assert_eq!(lan.masters(VRID), [m]);
    lan.inject(m, VRID, ok(false));
    (lan, m, rb)
}

#[test]
fn off_a_preempting_backup_waits_for_master_down_interval() {
    let (mut lan, m, b) = track_failure(false, |_| {});
    // The drop is advertised at once (10 s), and discarded: B takes over Master_Down_Interval
    // after the last advert it accepted (M's at 9 s + mdi(150) phase).
    assert!(lan.adverts(m, VRID).contains(&(ms(10_000), 50)));
    lan.run_until(ms(20_000));
    let last_accepted = mdi(150) + 6_000;
    assert!(last_accepted < 10_000);
    let (at, _, to) = *lan.transitions(b, VRID).last().unwrap();
    assert_eq!((at, to), (ms(last_accepted + mdi(100)), State::Master));
    assert_eq!(lan.masters(VRID), [b]);
}

#[test]
fn on_a_preempting_backup_takes_over_after_skew_time() {
    let (mut lan, m, b) = track_failure(true, |_| {});
    lan.run_until(ms(20_000));
    let (at, _, to) = *lan.transitions(b, VRID).last().unwrap();
    assert_eq!((at, to), (ms(10_000 + skew(100)), State::Master));
    // The old master yields to the higher advert at once (RFC 5798 6.4.3).
    let (at, from, to) = *lan.transitions(m, VRID).last().unwrap();
    assert_eq!(
        (at, from, to),
        (ms(10_000 + skew(100)), State::Master, State::Backup)
    );
    assert_eq!(lan.masters(VRID), [b]);
}

#[test]
fn on_it_never_delays_a_takeover_already_due() {
    // B's Master_Down_Timer is due 100 ms after the drop: a lower advert must not push it to
    // Skew_Time later.
    let mut pm = v3(150, 1);
    pm.preempt_on_lower_priority = true;
    let mut pb = v3(100, 2);
    pb.preempt_on_lower_priority = true;
    let mut b = router(pb);
    let mut m_now = ms(0);
    b.handle(m_now, Event::Startup);
    let advert = |priority| Event::Advert {
        from: addr(1),
        priority,
        advert_int_cs: 100,
    };
    b.handle(m_now, advert(150));
    m_now = ms(mdi(100) - 100);
    b.handle(m_now, advert(50));
    assert_eq!(b.poll_timeout(), Some(ms(mdi(100))));
    // And a later lower advert does not push a Skew_Time timer back either.
    let mut b = router({
        let mut p = v3(100, 2);
        p.preempt_on_lower_priority = true;
        p
    });
    b.handle(ms(0), Event::Startup);
    b.handle(ms(0), advert(150));
    b.handle(ms(1_000), advert(50));
    assert_eq!(b.poll_timeout(), Some(ms(1_000 + skew(100))));
    b.handle(ms(1_500), advert(50));
    assert_eq!(b.poll_timeout(), Some(ms(1_000 + skew(100))));
}

#[test]
fn on_it_respects_nopreempt_and_preempt_delay() {
    let (mut lan, m, b) = track_failure(true, |p| p.preempt = false);
    lan.run_until(ms(30_000));
    assert_eq!(
        lan.masters(VRID),
        [m],
        "nopreempt: a lower master is accepted"
    );
    assert_eq!(lan.state(b, VRID), Some(State::Backup));

    let (mut lan, _, b) = track_failure(true, |p| p.preempt_delay_cs = 200);
    lan.run_until(ms(30_000));
    let (at, _, to) = *lan.transitions(b, VRID).last().unwrap();
    assert_eq!(to, State::Master);
    // Lower adverts are accepted for 2 s from the first one (10 s), then discarded; the first
    // discarded one (M's scheduled advert at 12 s) starts Skew_Time.
    assert_eq!(at, ms(12_000 + skew(100)));
}

#[test]
fn on_a_backup_below_the_dropped_master_stays_backup() {
    // The master drops from 150 to 120 only: a backup at 100 still accepts it.
    let mut pm = v3(150, 1);
    pm.track_scripts.push(TrackScript::new("chk", -30));
    pm.preempt_on_lower_priority = true;
    let mut pb = v3(100, 2);
    pb.preempt_on_lower_priority = true;
    let mut lan = Lan::new();
    let m = lan.add(addr(1), router(pm));
    let b = lan.add(addr(2), router(pb));
    lan.start(m);
    lan.start(b);
    lan.run_until(ms(10_000));
    lan.inject(
        m,
        VRID,
        Event::ScriptResult {
            name: "chk".into(),
            ok: false,
        },
    );
    lan.run_until(ms(30_000));
    assert_eq!(lan.masters(VRID), [m]);
    assert_eq!(lan.state(b, VRID), Some(State::Backup));
}

//! Property tests: random event sequences never panic, never leave the addresses out of step
//! with the state, and once every link has been up for a Master_Down_Interval, routers with
//! distinct priorities agree on exactly one master.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use vrrpd::fsm::sim::{Lan, Record};
use vrrpd::fsm::{
    Action, Duration, Event, Instance, InstanceParams, Instant, State, SyncGroup, TrackInterface,
    TrackScript, Version,
};

const VRID: u8 = 40;

fn addr(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
}

#[derive(Debug, Clone)]
struct RouterCfg {
    base: u8,
    preempt: bool,
    preempt_delay_cs: u32,
    weight: i32,
    rise: u32,
    fall: u32,
    init_fail: bool,
    interval_cs: u16,
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    Script { node: usize, ok: bool },
    Link { node: usize, up: bool },
    Cut { a: usize, b: usize },
    Heal { a: usize, b: usize },
    Shutdown(usize),
    Startup(usize),
}

fn op(nodes: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..4_000).prop_map(Op::Advance),
        3 => (0..nodes, any::<bool>()).prop_map(|(node, ok)| Op::Script { node, ok }),
        1 => (0..nodes, any::<bool>()).prop_map(|(node, up)| Op::Link { node, up }),
        1 => (0..nodes, 0..nodes).prop_map(|(a, b)| Op::Cut { a, b }),
        1 => (0..nodes, 0..nodes).prop_map(|(a, b)| Op::Heal { a, b }),
        1 => (0..nodes).prop_map(Op::Shutdown),
        1 => (0..nodes).prop_map(Op::Startup),
    ]
}

/// Bases 40 apart and weights within ±20: effective priorities stay distinct once every
/// script is OK.
fn router_cfgs(v3: bool) -> impl Strategy<Value = Vec<RouterCfg>> {
    let bases = proptest::sample::subsequence(vec![20u8, 60, 100, 140, 180, 220], 3).prop_shuffle();
    let interval = if v3 {
        prop::sample::select(vec![50u16, 100, 150, 200]).boxed()
    } else {
        Just(100u16).boxed()
    };
    let rest = (
        any::<bool>(),
        prop_oneof![Just(0u32), 1u32..300],
        -20i32..=20,
        1u32..=3,
        1u32..=3,
        any::<bool>(),
        interval,
    );
    (bases, prop::collection::vec(rest, 3)).prop_map(|(bases, rest)| {
        bases
            .into_iter()
            .zip(rest)
            .map(
                |(
                    base,
                    (preempt, preempt_delay_cs, weight, rise, fall, init_fail, interval_cs),
                )| {
                    RouterCfg {
                        base,
                        preempt,
                        preempt_delay_cs,
                        weight,
                        rise,
                        fall,
                        init_fail,
                        interval_cs,
                    }
                },
            )
            .collect()
    })
}

fn params(vrid: u8, cfg: &RouterCfg, last: u8, version: Version) -> InstanceParams {
    let mut p = InstanceParams::new(vrid, cfg.base, addr(last));
    p.version = version;
    p.advert_int_cs = cfg.interval_cs;
    p.preempt = cfg.preempt;
    p.preempt_delay_cs = cfg.preempt_delay_cs;
    let mut s = TrackScript::new("chk", cfg.weight);
    s.rise = cfg.rise;
    s.fall = cfg.fall;
    s.init_fail = cfg.init_fail;
    p.track_scripts.push(s);
    p.track_interfaces.push(TrackInterface::new("eth0", 0));
    p
}

fn apply(lan: &mut Lan, op: &Op) {
    match *op {
        Op::Advance(d) => lan.run_for(Duration::from_millis(d)),
        Op::Script { node, ok } => lan.inject_all(
            node,
            Event::ScriptResult {
                name: "chk".into(),
                ok,
            },
        ),
        Op::Link { node, up } => lan.inject_all(
            node,
            Event::InterfaceChanged {
                name: "eth0".into(),
                up,
            },
        ),
        Op::Cut { a, b } => lan.cut(a, b),
        Op::Heal { a, b } => lan.heal(a, b),
        Op::Shutdown(n) => lan.shutdown(n),
        Op::Startup(n) => lan.start(n),
    }
}

/// Restores everything: links, interfaces, scripts (enough successes for any rise), and
/// starts what was stopped.
fn heal_everything(lan: &mut Lan, nodes: usize) {
    lan.heal_all();
    for n in 0..nodes {
        lan.inject_all(
            n,
            Event::InterfaceChanged {
                name: "eth0".into(),
                up: true,
            },
        );
        for _ in 0..3 {
            lan.inject_all(
                n,
                Event::ScriptResult {
                    name: "chk".into(),
                    ok: true,
                },
            );
        }
        lan.start(n);
    }
}

/// Replays the trace per instance: the addresses are added exactly when the instance becomes
/// Master and removed exactly when it stops being it, and each state change starts where the
/// last ended.
fn check_trace(
    trace: &[Record],
    lan: &Lan,
    nodes: usize,
    vrids: &[u8],
) -> Result<(), TestCaseError> {
    for n in 0..nodes {
        for &vrid in vrids {
            let mut held = false;
            let mut state = State::Initialize;
            for r in trace.iter().filter(|r| r.node == n && r.vrid == vrid) {
                match r.action {
                    Action::AddVips => {
                        prop_assert!(!held, "AddVips twice at {}", r.at);
                        held = true;
                    }
                    Action::RemoveVips => {
                        prop_assert!(held, "RemoveVips without AddVips at {}", r.at);
                        held = false;
                    }
                    Action::StateChanged { from, to, .. } => {
                        prop_assert_eq!(from, state, "chain broken at {}", r.at);
                        prop_assert_eq!(held, to == State::Master, "VIPs out of step at {}", r.at);
                        state = to;
                    }
                    Action::SendAdvert { .. }
                    | Action::SendGarp { .. }
                    | Action::PriorityChanged { .. } => {}
                }
            }
            prop_assert_eq!(Some(state), lan.state(n, vrid));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn three_routers_converge_to_one_master(
        (v3, cfgs) in any::<bool>().prop_flat_map(|v3| (Just(v3), router_cfgs(v3))),
        ops in prop::collection::vec(op(3), 0..60),
    ) {
        let version = if v3 { Version::V3 } else { Version::V2 };
        let mut lan = Lan::new();
        for (i, cfg) in cfgs.iter().enumerate() {
            let last = u8::try_from(i + 1).unwrap();
            let cfg = RouterCfg { interval_cs: if v3 { cfg.interval_cs } else { 100 }, ..cfg.clone() };
            lan.add(addr(last), Instance::new(params(VRID, &cfg, last, version)).unwrap());
            lan.start(i);
        }
        for op in &ops {
            apply(&mut lan, op);
        }
        heal_everything(&mut lan, 3);
        // The longest Master_Down_Interval here is 3 * 2 s + 2 s, the longest preempt delay
        // 3 s: 20 s is enough for any election to finish.
        lan.run_for(Duration::from_secs(20));
        prop_assert!(!lan.stalled());
        let masters = lan.masters(VRID);
        prop_assert_eq!(masters.len(), 1, "masters {:?}", masters);
        if cfgs.iter().all(|c| c.preempt) {
            let best = (0..3).max_by_key(|&n| lan.instance(n, VRID).unwrap().priority()).unwrap();
            prop_assert_eq!(masters[0], best);
        }
        // And it stays that way, at every instant anything happens.
        let until = lan.now() + Duration::from_secs(10);
        while lan.step(until).is_some() {
            prop_assert_eq!(lan.masters(VRID).len(), 1, "at {}", lan.now());
        }
        check_trace(lan.trace(), &lan, 3, &[VRID])?;
    }

    #[test]
    fn sync_group_members_are_master_together_or_not_at_all(
        cfgs in router_cfgs(true),
        ops in prop::collection::vec(op(2), 0..60),
    ) {
        let mut lan = Lan::new();
        for (i, cfg) in cfgs.iter().take(2).enumerate() {
            let last = u8::try_from(i + 1).unwrap();
            // Only the first member tracks anything: its fault must take the other along.
            let mut quiet = params(2, cfg, last, Version::V3);
            quiet.track_scripts.clear();
            quiet.track_interfaces.clear();
            let group = SyncGroup::new(vec![
                Instance::new(params(1, cfg, last, Version::V3)).unwrap(),
                Instance::new(quiet).unwrap(),
            ]);
            lan.add(addr(last), group);
            lan.start(i);
        }
        let together = |lan: &Lan| (0..2).all(|n| {
            let m1 = lan.state(n, 1) == Some(State::Master);
            let m2 = lan.state(n, 2) == Some(State::Master);
            m1 == m2
        });
        for op in &ops {
            apply(&mut lan, op);
            prop_assert!(together(&lan), "after {:?} at {}", op, lan.now());
        }
        heal_everything(&mut lan, 2);
        lan.run_for(Duration::from_secs(20));
        prop_assert!(together(&lan));
        prop_assert!(!lan.stalled());
        // Same priorities on both VRIDs of a router: one router holds both.
        prop_assert_eq!(lan.masters(1).len(), 1);
        prop_assert_eq!(lan.masters(1), lan.masters(2));
        check_trace(lan.trace(), &lan, 2, &[1, 2])?;
    }

    #[test]
    fn any_event_sequence_is_handled(
        owner in any::<bool>(),
        v3 in any::<bool>(),
        inputs in prop::collection::vec((0u64..5_000, input()), 0..200),
    ) {
        let mut p = InstanceParams::new(VRID, if owner { 255 } else { 100 }, addr(100));
        p.version = if v3 { Version::V3 } else { Version::V2 };
        p.track_scripts.push(TrackScript::new("a", 0));
        p.track_scripts.push(TrackScript::new("b", -60));
        p.track_interfaces.push(TrackInterface::new("eth0", 0));
        p.track_interfaces.push(TrackInterface::new("eth1", 30));
        p.garp.master_refresh_cs = 300;
        let mut i = Instance::new(p).unwrap();
        let mut replay = Replay::default();
        let (mut now, mut latest) = (0u64, 0u64);
        for (step, input) in inputs {
            // Mostly forwards, sometimes backwards (read as "no time passed").
            now = if step % 7 == 0 { now.saturating_sub(step) } else { now + step };
            latest = latest.max(now);
            let out = match input {
                Some(event) => i.handle(Instant::from_millis(now), event),
                None => i.handle_timeout(Instant::from_millis(now)),
            };
            replay.check(&out, &i)?;
            // Every due timer has fired: the next one is in the future.
            if let Some(at) = i.poll_timeout() {
                prop_assert!(at.as_millis() > latest, "timer at {} not after {}", at, latest);
            }
            if owner {
                prop_assert_eq!(i.priority(), 255);
            }
        }
    }
}

/// Events of every kind, odd ones included (priority 0 and 255, interval 0, the other address
/// family, names nobody tracks); `None` is a bare timer call.
fn input() -> impl Strategy<Value = Option<Event>> {
    let advert = (any::<bool>(), any::<u8>(), any::<u8>(), any::<u16>()).prop_map(
        |(v6, host, priority, advert_int_cs)| {
            let from = if v6 {
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, u16::from(host)))
            } else {
                addr(host)
            };
            Event::Advert {
                from,
                priority,
                advert_int_cs,
            }
        },
    );
    let script =
        (prop::sample::select(vec!["a", "b", "zz"]), any::<bool>()).prop_map(|(name, ok)| {
            Event::ScriptResult {
                name: name.into(),
                ok,
            }
        });
    let link =
        (prop::sample::select(vec!["eth0", "eth1"]), any::<bool>()).prop_map(|(name, up)| {
            Event::InterfaceChanged {
                name: name.into(),
                up,
            }
        });
    prop_oneof![
        1 => Just(Some(Event::Startup)),
        1 => Just(Some(Event::Shutdown)),
        6 => advert.prop_map(Some),
        3 => script.prop_map(Some),
        2 => link.prop_map(Some),
        3 => Just(None),
    ]
}

/// What the shell would believe, rebuilt from the actions alone.
#[derive(Debug, Default)]
struct Replay {
    held: bool,
    state: Option<State>,
}

impl Replay {
    fn check(&mut self, out: &[Action], i: &Instance) -> Result<(), TestCaseError> {
        for a in out {
            match *a {
                Action::AddVips => {
                    prop_assert!(!self.held, "AddVips twice");
                    self.held = true;
                }
                Action::RemoveVips => {
                    prop_assert!(self.held, "RemoveVips without AddVips");
                    self.held = false;
                }
                Action::StateChanged { from, to, priority } => {
                    prop_assert_eq!(from, self.state.unwrap_or(State::Initialize));
                    prop_assert!(priority >= 1);
                    self.state = Some(to);
                }
                Action::PriorityChanged { from, to } => {
                    prop_assert!(from != to && to >= 1);
                }
                Action::SendAdvert { .. } | Action::SendGarp { .. } => {}
            }
        }
        let state = self.state.unwrap_or(State::Initialize);
        prop_assert_eq!(state, i.state());
        prop_assert_eq!(self.held, state == State::Master);
        Ok(())
    }
}

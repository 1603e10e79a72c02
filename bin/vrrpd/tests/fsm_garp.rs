//! The gratuitous ARP / unsolicited NA schedule a new master follows (keepalived's
//! garp_master_delay, garp_master_repeat, garp_master_refresh, garp_master_refresh_repeat),
//! emitted by the core as timed actions.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr};

use vrrpd::fsm::sim::Lan;
use vrrpd::fsm::{Action, GarpParams, Instance, InstanceParams, Instant, State, Version};

const VRID: u8 = 30;

fn addr(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
}

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn v3(priority: u8, last: u8, garp: GarpParams) -> Instance {
    let mut p = InstanceParams::new(VRID, priority, addr(last));
    p.version = Version::V3;
    p.garp = garp;
    Instance::new(p).unwrap()
}

/// (when, repeat) of every GARP burst `node` sent.
fn garps(lan: &Lan, node: usize) -> Vec<(u64, u32)> {
    lan.trace()
        .iter()
        .filter(|r| r.node == node)
        .filter_map(|r| match r.action {
            Action::SendGarp { repeat } => Some((r.at.as_millis(), repeat)),
            _ => None,
        })
        .collect()
}

#[test]
fn defaults_send_five_at_the_transition_and_five_more_after_five_seconds() {
    assert_eq!(
        GarpParams::default(),
        GarpParams {
            master_delay_cs: 500,
            master_repeat: 5,
            master_refresh_cs: 0,
            master_refresh_repeat: 1,
            lower_prio_repeat: 5,
            lower_prio_delay_cs: 500,
        }
    );
    let mut lan = Lan::new();
    let a = lan.add(addr(1), v3(200, 1, GarpParams::default()));
    lan.start(a);
    lan.run_until(ms(60_000));
    assert_eq!(garps(&lan, a), [(3_218, 5), (8_218, 5)]);

    // At the transition: addresses first, then advert, GARP and the state change
    // (RFC 5798 6.4.2's order, with the addresses added before they are announced).
    let at_transition: Vec<Action> = lan
        .trace()
        .iter()
        .filter(|r| r.at == ms(3_218))
        .map(|r| r.action)
        .collect();
    assert_eq!(
        at_transition,
        [
            Action::AddVips,
            Action::SendAdvert { priority: 200 },
            Action::SendGarp { repeat: 5 },
            Action::StateChanged {
                from: State::Backup,
                to: State::Master,
                priority: 200
            }
        ]
    );
}

#[test]
fn refresh_repeats_while_master() {
    let garp = GarpParams {
        master_refresh_cs: 1_000,
        master_refresh_repeat: 2,
        ..GarpParams::default()
    };
    let mut lan = Lan::new();
    let a = lan.add(addr(1), v3(200, 1, garp));
    lan.start(a);
    lan.run_until(ms(40_000));
    assert_eq!(
        garps(&lan, a),
        [
            (3_218, 5),
            (8_218, 5),
            (13_218, 2),
            (23_218, 2),
            (33_218, 2)
        ]
    );
}

#[test]
fn no_delay_means_one_burst() {
    let garp = GarpParams {
        master_delay_cs: 0,
        master_repeat: 3,
        ..GarpParams::default()
    };
    let mut lan = Lan::new();
    let a = lan.add(addr(1), v3(200, 1, garp));
    lan.start(a);
    lan.run_until(ms(60_000));
    assert_eq!(garps(&lan, a), [(3_218, 3)]);
}

#[test]
fn leaving_master_cancels_the_pending_bursts() {
    let garp = GarpParams {
        master_refresh_cs: 1_000,
        ..GarpParams::default()
    };
    let mut lan = Lan::new();
    let a = lan.add(addr(1), v3(200, 1, garp));
    let owner = lan.add(addr(2), v3(255, 2, GarpParams::default()));
    lan.start(a);
    lan.run_until(ms(5_000));
    lan.start(owner);
    lan.run_until(ms(60_000));
    assert_eq!(lan.state(a, VRID), Some(State::Backup));
    assert_eq!(garps(&lan, a), [(3_218, 5)]);
    assert_eq!(garps(&lan, owner), [(5_000, 5), (10_000, 5)]);
}

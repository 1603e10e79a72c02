//! The conflict-detection state machine on a virtual clock: when it sends, when it decides,
//! what counts as an answer (RFC 5227 2.1.1, RFC 4862 5.4.3-5.4.4) and what never does.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipi_core::acd::{frame, Evidence, Probe, Seen, Step, Timing, Verdict};

const OWN: [u8; 6] = [2, 0, 0, 0, 0, 1];
const OTHER: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn v4() -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, 5))
}

fn v6() -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 5))
}

/// Runs a probe with nothing on the link: the times it sends at and when it ends.
fn quiet_run(mut p: Probe) -> (Vec<u64>, u64) {
    let mut sends = Vec::new();
    let mut now = 0;
    loop {
        match p.poll(now) {
            Step::Send => sends.push(now),
            Step::WaitUntil(t) => {
                assert!(t > now, "waits for a time to come");
                now = t;
            }
            Step::Done(v) => {
                assert_eq!(v, Verdict::Free);
                return (sends, now);
            }
        }
    }
}

#[test]
fn nothing_on_the_link_is_free_after_probe_num_probes_within_the_bound() {
    for seed in 0..200 {
        for timing in [Timing::FAST, Timing::RFC5227] {
            let (sends, end) = quiet_run(Probe::new(v4(), OWN, timing, seed));
            assert_eq!(sends.len(), 3);
            assert!(sends[0] <= u64::from(timing.wait_ms), "PROBE_WAIT");
            for pair in sends.windows(2) {
                let gap = pair[1] - pair[0];
                assert!((u64::from(timing.min_ms)..=u64::from(timing.max_ms)).contains(&gap));
            }
            assert_eq!(end - sends[2], u64::from(timing.answer_ms), "ANNOUNCE_WAIT");
            assert!(end <= timing.bound_ms());
        }
    }
    assert!(
        Timing::default().bound_ms() < 1000,
        "under a second by default"
    );
    assert_eq!(Timing::RFC5227.bound_ms(), 7000);
}

#[test]
fn random_delays_differ_between_seeds() {
    let firsts: std::collections::BTreeSet<u64> = (1..50)
        .map(|s| quiet_run(Probe::new(v4(), OWN, Timing::RFC5227, s)).0[0])
        .collect();
    assert!(firsts.len() > 10, "{firsts:?}");
}

fn arp(source: [u8; 6], reply: bool, sender: Ipv4Addr, target: Ipv4Addr) -> Seen {
    Seen::Arp {
        source,
        reply,
        sender_mac: source,
        sender,
        target,
    }
}

fn decided(target: IpAddr, seen: &Seen) -> Verdict {
    let mut p = Probe::new(target, OWN, Timing::FAST, 7);
    assert!(
        matches!(p.poll(0), Step::WaitUntil(_)),
        "starts waiting PROBE_WAIT"
    );
    p.on_seen(seen);
    match p.poll(1) {
        Step::Done(v) => v,
        Step::Send | Step::WaitUntil(_) => Verdict::Free,
    }
}

#[test]
fn an_arp_reply_or_request_from_the_address_is_an_answer() {
    let t = Ipv4Addr::new(192, 0, 2, 5);
    let holds = Verdict::Answered {
        mac: OTHER,
        evidence: Evidence::Holds,
    };
    assert_eq!(
        decided(v4(), &arp(OTHER, true, t, Ipv4Addr::UNSPECIFIED)),
        holds
    );
    assert_eq!(decided(v4(), &arp(OTHER, false, t, t)), holds);
    assert_eq!(
        decided(v4(), &arp(OTHER, false, Ipv4Addr::UNSPECIFIED, t)),
        Verdict::Answered {
            mac: OTHER,
            evidence: Evidence::Probing
        }
    );
}

#[test]
fn our_own_frames_and_other_addresses_are_no_answer() {
    let t = Ipv4Addr::new(192, 0, 2, 5);
    let other = Ipv4Addr::new(192, 0, 2, 6);
    assert_eq!(
        decided(v4(), &arp(OWN, false, Ipv4Addr::UNSPECIFIED, t)),
        Verdict::Free
    );
    assert_eq!(decided(v4(), &arp(OWN, true, t, t)), Verdict::Free);
    assert_eq!(decided(v4(), &arp(OTHER, true, other, t)), Verdict::Free);
    // An ordinary request for the address from a host that holds another one is a host
    // looking for it, not holding it.
    assert_eq!(decided(v4(), &arp(OTHER, false, other, t)), Verdict::Free);
    // An IPv6 frame says nothing of an IPv4 address and the other way round.
    let na = Seen::Advert {
        source: OTHER,
        target_mac: Some(OTHER),
        from: "2001:db8::5".parse().unwrap(),
        target: "2001:db8::5".parse().unwrap(),
    };
    assert_eq!(decided(v4(), &na), Verdict::Free);
    assert_eq!(decided(v6(), &arp(OTHER, true, t, t)), Verdict::Free);
}

#[test]
fn dad_answers_are_an_advert_or_a_simultaneous_solicitation() {
    let t: Ipv6Addr = "2001:db8::5".parse().unwrap();
    let third = [2, 0, 0, 0, 0, 3];
    let na = Seen::Advert {
        source: OTHER,
        target_mac: Some(third),
        from: "fe80::2".parse().unwrap(),
        target: t,
    };
    assert_eq!(
        decided(v6(), &na),
        Verdict::Answered {
            mac: third,
            evidence: Evidence::Holds
        },
        "the Target Link-Layer Address names the holder"
    );
    let dad = Seen::Solicit {
        source: OTHER,
        from: Ipv6Addr::UNSPECIFIED,
        target: t,
    };
    assert_eq!(
        decided(v6(), &dad),
        Verdict::Answered {
            mac: OTHER,
            evidence: Evidence::Probing
        }
    );
    // An ordinary solicitation (address resolution, from a real address) is someone looking
    // for the address, and our own looped-back DAD is nothing.
    let resolve = Seen::Solicit {
        source: OTHER,
        from: "2001:db8::9".parse().unwrap(),
        target: t,
    };
    assert_eq!(decided(v6(), &resolve), Verdict::Free);
    let own = Seen::Solicit {
        source: OWN,
        from: Ipv6Addr::UNSPECIFIED,
        target: t,
    };
    assert_eq!(decided(v6(), &own), Verdict::Free);
}

#[test]
fn an_answer_ends_the_probe_at_once_and_stays() {
    let t = Ipv4Addr::new(192, 0, 2, 5);
    let mut p = Probe::new(v4(), OWN, Timing::RFC5227, 3);
    let _ = p.poll(0);
    p.on_seen(&arp(OTHER, true, t, Ipv4Addr::UNSPECIFIED));
    let answered = Verdict::Answered {
        mac: OTHER,
        evidence: Evidence::Holds,
    };
    assert_eq!(p.poll(1), Step::Done(answered));
    // A later, different answer does not change it.
    p.on_seen(&arp([2, 0, 0, 0, 0, 9], true, t, Ipv4Addr::UNSPECIFIED));
    assert_eq!(p.poll(2), Step::Done(answered));
    assert_eq!(answered.to_string(), "answered by 02:00:00:00:00:02");
}

#[test]
fn the_probes_parse_back_as_what_they_are() {
    let t = Ipv4Addr::new(192, 0, 2, 5);
    let seen = frame::parse(&frame::arp_probe_frame(OTHER, t)).unwrap();
    assert_eq!(
        decided(v4(), &seen),
        Verdict::Answered {
            mac: OTHER,
            evidence: Evidence::Probing
        }
    );
    let t6: Ipv6Addr = "2001:db8::5".parse().unwrap();
    let seen = frame::parse(&frame::dad_ns_frame(OTHER, t6)).unwrap();
    assert!(matches!(decided(v6(), &seen), Verdict::Answered { .. }));
    let seen = frame::parse(&frame::unsolicited_na_frame(OTHER, t6, false)).unwrap();
    assert!(matches!(decided(v6(), &seen), Verdict::Answered { .. }));
}

#[test]
fn timing_is_read_with_clear_errors() {
    assert_eq!("fast".parse::<Timing>().unwrap(), Timing::FAST);
    assert_eq!("rfc5227".parse::<Timing>().unwrap(), Timing::RFC5227);
    let t: Timing = "2,0,50,80,100".parse().unwrap();
    assert_eq!(t.bound_ms(), 180);
    assert_eq!(t.to_string().parse::<Timing>().unwrap(), t);
    for (bad, why) in [
        ("3,1,2", "five fields"),
        ("0,1,1,1,1", "at least 1"),
        ("3,1,300,200,1", "MIN_MS"),
        ("3,x,1,1,1", "whole number"),
    ] {
        let e = bad.parse::<Timing>().unwrap_err().to_string();
        assert!(e.contains(why) && e.contains(bad), "{e}");
    }
}

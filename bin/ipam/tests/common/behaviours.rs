//! What every store must do, written once against the [`Store`] trait and run on each store:
//! the file store's unit tests and the allocator's, as a contract.

use ipam::alloc::{release, release_name, reserve, share, AllocError, Held, Order};
use ipi_store::store::{Record, Store};

use super::{ip, pool};

/// One behaviour, run on a fresh store.
pub type Behaviour = fn(&mut dyn Store);

/// Every behaviour, by name.
pub const ALL: &[(&str, Behaviour)] = &[
    (
        "claims_once_and_frees_only_what_it_read",
        claims_once_and_frees_only_what_it_read,
    ),
    (
        "replace_moves_the_owner_index",
        replace_moves_the_owner_index,
    ),
    (
        "free_leaves_an_index_pointing_elsewhere",
        free_leaves_an_index_pointing_elsewhere,
    ),
    (
        "lists_sorted_pools_and_addresses",
        lists_sorted_pools_and_addresses,
    ),
    ("the_next_hint_round_trips", the_next_hint_round_trips),
    (
        "claim_first_takes_the_first_free_and_moves_the_hint",
        claim_first_takes_the_first_free_and_moves_the_hint,
    ),
    (
        "reserved_lists_a_window_in_address_order",
        reserved_lists_a_window_in_address_order,
    ),
    (
        "hands_out_each_address_once_then_says_exhausted",
        hands_out_each_address_once_then_says_exhausted,
    ),
    (
        "lowest_reuses_a_released_address_round_robin_moves_on",
        lowest_reuses_a_released_address_round_robin_moves_on,
    ),
    (
        "round_robin_wraps_around_to_freed_addresses",
        round_robin_wraps_around_to_freed_addresses,
    ),
    (
        "fixed_addresses_are_honoured_refused_or_taken",
        fixed_addresses_are_honoured_refused_or_taken,
    ),
    (
        "sharing_keys_share_one_address_until_the_last_is_released",
        sharing_keys_share_one_address_until_the_last_is_released,
    ),
];

pub fn claims_once_and_frees_only_what_it_read(s: &mut dyn Store) {
    let a = Record::owned_by("ctr/eth0");
    assert!(s.claim("p", ip("192.0.2.10"), &a).unwrap());
    assert!(!s
        .claim("p", ip("192.0.2.10"), &Record::owned_by("other"))
        .unwrap());
    assert_eq!(s.record("p", ip("192.0.2.10")).unwrap(), Some(a.clone()));
    assert_eq!(
        s.owned("p", "ctr/eth0").unwrap(),
        Some((ip("192.0.2.10"), a.clone()))
    );
    assert_eq!(s.owned("p", "other").unwrap(), None);
    assert!(!s
        .free("p", ip("192.0.2.10"), &Record::owned_by("other"))
        .unwrap());
    assert!(!s.free("p", ip("192.0.2.11"), &a).unwrap());
    let b = Record::owned_by("b");
    assert!(!s.replace("p", ip("192.0.2.10"), &b, &a).unwrap());
    assert_eq!(s.record("p", ip("192.0.2.10")).unwrap(), Some(a.clone()));
    assert!(s.free("p", ip("192.0.2.10"), &a).unwrap());
    assert_eq!(s.owned("p", "ctr/eth0").unwrap(), None);
    assert_eq!(s.record("p", ip("192.0.2.10")).unwrap(), None);
    assert!(s.list("p").unwrap().is_empty());
    // Freed, it can be claimed again.
    assert!(s.claim("p", ip("192.0.2.10"), &b).unwrap());
}

pub fn replace_moves_the_owner_index(s: &mut dyn Store) {
    let a = Record::owned_by("a");
    let shared = Record {
        owner: "a".into(),
        names: vec!["x".into(), "y".into()],
        ..Record::default()
    };
    assert!(s.claim("p", ip("2001:db8::1"), &a).unwrap());
    assert!(s.replace("p", ip("2001:db8::1"), &a, &shared).unwrap());
    assert_eq!(
        s.owned("p", "a").unwrap(),
        Some((ip("2001:db8::1"), shared.clone()))
    );
    // Stale: it is no longer `a` alone.
    assert!(!s
        .replace("p", ip("2001:db8::1"), &a, &Record::owned_by("c"))
        .unwrap());
    let b = Record::owned_by("b");
    assert!(s.replace("p", ip("2001:db8::1"), &shared, &b).unwrap());
    assert_eq!(s.owned("p", "a").unwrap(), None);
    assert_eq!(s.owned("p", "b").unwrap(), Some((ip("2001:db8::1"), b)));
}

pub fn free_leaves_an_index_pointing_elsewhere(s: &mut dyn Store) {
    let a = Record::owned_by("a");
    assert!(s.claim("p", ip("192.0.2.1"), &a).unwrap());
    // `a` takes another address (as a move to a fixed address does): the index follows.
    assert!(s.claim("p", ip("192.0.2.2"), &a).unwrap());
    assert!(s.free("p", ip("192.0.2.1"), &a).unwrap());
    assert_eq!(s.owned("p", "a").unwrap(), Some((ip("192.0.2.2"), a)));
}

pub fn lists_sorted_pools_and_addresses(s: &mut dyn Store) {
    for a in [
        "192.0.2.10",
        "192.0.2.9",
        "192.0.2.100",
        "2001:db8::1",
        "::1",
    ] {
        assert!(s.claim("b/x", ip(a), &Record::owned_by(a)).unwrap());
    }
    assert!(s
        .claim("a", ip("2001:db8::1"), &Record::owned_by("v6"))
        .unwrap());
    assert!(s
        .claim("b", ip("192.0.2.1"), &Record::owned_by("b"))
        .unwrap());
    assert!(s
        .claim("a b%", ip("192.0.2.1"), &Record::owned_by("odd"))
        .unwrap());
    let got: Vec<String> = s
        .list("b/x")
        .unwrap()
        .iter()
        .map(|(i, _)| i.to_string())
        .collect();
    assert_eq!(
        got,
        [
            "::1",
            "192.0.2.9",
            "192.0.2.10",
            "192.0.2.100",
            "2001:db8::1"
        ]
    );
    for (i, r) in s.list("b/x").unwrap() {
        assert_eq!(r, Record::owned_by(&i.to_string()));
    }
    assert_eq!(s.pools().unwrap(), ["a", "a b%", "b", "b/x"]);
    assert!(s.list("nothing").unwrap().is_empty());
}

pub fn the_next_hint_round_trips(s: &mut dyn Store) {
    assert_eq!(s.next("p").unwrap(), None);
    s.set_next("p", ip("2001:db8::5")).unwrap();
    assert_eq!(s.next("p").unwrap(), Some(ip("2001:db8::5")));
    s.set_next("p", ip("192.0.2.7")).unwrap();
    assert_eq!(s.next("p").unwrap(), Some(ip("192.0.2.7")));
}

pub fn hands_out_each_address_once_then_says_exhausted(s: &mut dyn Store) {
    let p = pool("192.0.2.0/29", Order::Lowest);
    let mut got = Vec::new();
    for n in 0..6 {
        let held = reserve(s, &p, &format!("o{n}"), None).unwrap();
        assert!(held.new);
        got.push(held.ip.to_string());
    }
    assert_eq!(
        got,
        [
            "192.0.2.1",
            "192.0.2.2",
            "192.0.2.3",
            "192.0.2.4",
            "192.0.2.5",
            "192.0.2.6"
        ]
    );
    let e = reserve(s, &p, "o6", None).unwrap_err();
    assert!(matches!(e, AllocError::Exhausted { .. }), "{e}");
    assert_eq!(
        reserve(s, &p, "o3", None).unwrap(),
        Held {
            ip: ip("192.0.2.4"),
            new: false
        }
    );
}

pub fn lowest_reuses_a_released_address_round_robin_moves_on(s: &mut dyn Store) {
    for (order, expect) in [
        (Order::Lowest, "192.0.2.1"),
        (Order::RoundRobin, "192.0.2.4"),
    ] {
        let mut p = pool("192.0.2.0/29", order);
        p.name = format!("{order:?}");
        for n in 0..3 {
            reserve(s, &p, &format!("o{n}"), None).unwrap();
        }
        assert_eq!(release(s, &p, "o0").unwrap(), Some(ip("192.0.2.1")));
        assert_eq!(release(s, &p, "o0").unwrap(), None);
        assert_eq!(
            reserve(s, &p, "new", None).unwrap().ip,
            ip(expect),
            "{order:?}"
        );
    }
}

pub fn round_robin_wraps_around_to_freed_addresses(s: &mut dyn Store) {
    let p = pool("192.0.2.0/30", Order::RoundRobin);
    reserve(s, &p, "a", None).unwrap();
    reserve(s, &p, "b", None).unwrap();
    release(s, &p, "a").unwrap();
    assert_eq!(reserve(s, &p, "c", None).unwrap().ip, ip("192.0.2.1"));
}

pub fn fixed_addresses_are_honoured_refused_or_taken(s: &mut dyn Store) {
    let mut p = pool("192.0.2.0/28", Order::Lowest);
    p.space
        .excluded
        .push(ipi_store::range::Span::single(ip("192.0.2.9")));
    assert_eq!(
        reserve(s, &p, "a", Some(ip("192.0.2.5"))).unwrap().ip,
        ip("192.0.2.5")
    );
    let e = reserve(s, &p, "b", Some(ip("192.0.2.5")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("already reserved for a"), "{e}");
    let e = reserve(s, &p, "b", Some(ip("192.0.2.9")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("excluded"), "{e}");
    let e = reserve(s, &p, "b", Some(ip("198.51.100.1")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside"), "{e}");
    assert_eq!(reserve(s, &p, "c", None).unwrap().ip, ip("192.0.2.1"));
    assert_eq!(
        reserve(s, &p, "a", Some(ip("192.0.2.6"))).unwrap().ip,
        ip("192.0.2.6")
    );
    assert_eq!(s.record(&p.name, ip("192.0.2.5")).unwrap(), None);
    assert_eq!(
        s.owned(&p.name, "a").unwrap().map(|(i, _)| i),
        Some(ip("192.0.2.6"))
    );
}

pub fn sharing_keys_share_one_address_until_the_last_is_released(s: &mut dyn Store) {
    let p = pool("192.0.2.0/29", Order::Lowest);
    let a = share(s, &p, "k", "svc-a").unwrap();
    let b = share(s, &p, "k", "svc-b").unwrap();
    assert_eq!(a.ip, b.ip);
    assert!(!share(s, &p, "k", "svc-b").unwrap().new);
    assert_ne!(share(s, &p, "other", "svc-c").unwrap().ip, a.ip);
    assert_eq!(release_name(s, "svc-a").unwrap(), [(p.name.clone(), a.ip)]);
    assert!(s.record(&p.name, a.ip).unwrap().is_some());
    release_name(s, "svc-b").unwrap();
    assert!(s.record(&p.name, a.ip).unwrap().is_none());
}

pub fn claim_first_takes_the_first_free_and_moves_the_hint(s: &mut dyn Store) {
    let c = [ip("192.0.2.7"), ip("192.0.2.9"), ip("192.0.2.12")];
    assert!(s.claim("p", c[0], &Record::owned_by("x")).unwrap());
    assert!(s.claim("p", c[1], &Record::owned_by("y")).unwrap());
    assert_eq!(
        s.claim_first("p", &c, &Record::owned_by("z")).unwrap(),
        Some(c[2])
    );
    assert_eq!(s.owned("p", "z").unwrap().unwrap().0, c[2]);
    assert_eq!(
        s.next("p").unwrap(),
        Some(ip("192.0.2.13")),
        "after the last"
    );
    assert_eq!(
        s.claim_first("p", &c, &Record::owned_by("w")).unwrap(),
        None,
        "all held"
    );
    assert!(s.owned("p", "w").unwrap().is_none());
    let d = [ip("192.0.2.20"), ip("192.0.2.21")];
    assert_eq!(
        s.claim_first("p", &d, &Record::owned_by("v")).unwrap(),
        Some(d[0])
    );
    assert_eq!(s.next("p").unwrap(), Some(d[1]), "the next candidate");
    assert_eq!(
        s.claim_first("p", &[], &Record::owned_by("u")).unwrap(),
        None
    );
}

pub fn reserved_lists_a_window_in_address_order(s: &mut dyn Store) {
    for a in [
        "192.0.2.30",
        "192.0.2.3",
        "192.0.2.10",
        "192.0.2.200",
        "2001:db8::1",
    ] {
        assert!(s.claim("p", ip(a), &Record::owned_by(a)).unwrap());
    }
    let got = s
        .reserved("p", ip("192.0.2.3"), ip("192.0.2.100"), 10)
        .unwrap();
    assert_eq!(got, [ip("192.0.2.3"), ip("192.0.2.10"), ip("192.0.2.30")]);
    let got = s
        .reserved("p", ip("192.0.2.4"), ip("192.0.2.255"), 2)
        .unwrap();
    assert_eq!(got, [ip("192.0.2.10"), ip("192.0.2.30")], "the first two");
    assert!(s
        .reserved("p", ip("192.0.2.31"), ip("192.0.2.199"), 10)
        .unwrap()
        .is_empty());
}

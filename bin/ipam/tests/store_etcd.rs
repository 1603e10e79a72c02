//! The store contract (tests/common/behaviours.rs) on the file store, and the etcd store against
//! a real etcd on loopback: the same behaviours, corruption named and left alone, the key layout as etcdctl sees it, and an
//! etcd restart.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{behaviours, etcd, ip, open};
use ipi_lab::etcd::Etcd;
use ipi_store::store::etcd::DEFAULT_PREFIX;
use ipi_store::store::{self, Record, StoreError};

/// etcdctl's answer, which must succeed.
fn ctl(etcd: &Etcd, args: &[&str]) -> String {
    let out = etcd.ctl(args).unwrap();
    assert!(
        out.success,
        "etcdctl {args:?}: {}\n{}",
        out.stderr,
        etcd.log()
    );
    out.stdout
}

#[test]
fn the_file_store_behaves() {
    for (name, check) in behaviours::ALL {
        let dir = tempfile::tempdir().unwrap();
        eprintln!("{name} on {}", dir.path().display());
        check(open(&dir.path().display().to_string()).as_mut());
    }
}

#[test]
fn behaves_like_the_file_store() {
    let Some(etcd) = etcd() else { return };
    for (n, (name, check)) in behaviours::ALL.iter().enumerate() {
        // A prefix of its own for each behaviour: a fresh store in the same etcd.
        let url = format!("{}/test/{n}", etcd.url());
        eprintln!("{name} on {url}");
        let mut e = open(&url);
        check(e.as_mut());
    }
}

#[test]
fn the_key_layout_is_the_documented_one() {
    let Some(etcd) = etcd() else { return };
    let mut s = open(&etcd.url());
    assert!(s
        .claim("pool/a b", ip("192.0.2.1"), &Record::owned_by("ctr-1/eth0"))
        .unwrap());
    assert!(s
        .claim("pool/a b", ip("2001:db8::1"), &Record::owned_by("x"))
        .unwrap());
    s.set_next("pool/a b", ip("192.0.2.2")).unwrap();
    let keys = ctl(&etcd, &["get", "--prefix", "--keys-only", "/"]);
    let keys: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
    let p = format!("{DEFAULT_PREFIX}/pools/pool%2Fa%20b");
    assert_eq!(
        keys,
        [
            format!("{p}/ips/4-c0000201"),
            format!("{p}/ips/6-20010db8000000000000000000000001"),
            format!("{p}/next"),
            format!("{p}/owners/ctr-1%2Feth0"),
            format!("{p}/owners/x"),
        ]
    );
    let value = ctl(
        &etcd,
        &["get", "--print-value-only", &format!("{p}/ips/4-c0000201")],
    );
    assert_eq!(value.trim_end(), r#"{"owner":"ctr-1/eth0"}"#);
    let value = ctl(
        &etcd,
        &[
            "get",
            "--print-value-only",
            &format!("{p}/owners/ctr-1%2Feth0"),
        ],
    );
    assert_eq!(value.trim_end(), "192.0.2.1");
    // Another prefix is another store.
    let mut other = open(&format!("{}/elsewhere/", etcd.url()));
    assert!(other.pools().unwrap().is_empty());
    assert!(other
        .claim("pool/a b", ip("192.0.2.1"), &Record::owned_by("y"))
        .unwrap());
}

#[test]
fn a_stale_index_entry_is_no_holding() {
    let Some(etcd) = etcd() else { return };
    let mut s = open(&etcd.url());
    // An index entry pointing at nothing, then at someone else's record.
    ctl(
        &etcd,
        &[
            "put",
            &format!("{DEFAULT_PREFIX}/pools/p/owners/a"),
            "192.0.2.1",
        ],
    );
    assert_eq!(s.owned("p", "a").unwrap(), None);
    assert!(s
        .claim("p", ip("192.0.2.1"), &Record::owned_by("b"))
        .unwrap());
    assert_eq!(s.owned("p", "a").unwrap(), None);
    assert_eq!(
        s.owned("p", "b").unwrap().map(|(i, _)| i),
        Some(ip("192.0.2.1"))
    );
}

#[test]
fn corruption_is_reported_with_the_key_and_left_alone() {
    let Some(etcd) = etcd() else { return };
    let mut s = open(&etcd.url());
    let a = Record::owned_by("a");
    assert!(s.claim("p", ip("192.0.2.1"), &a).unwrap());
    let key = format!("{DEFAULT_PREFIX}/pools/p/ips/4-c0000201");
    ctl(&etcd, &["put", &key, "garbage"]);
    let named = |e: StoreError| {
        let text = e.to_string();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{text}");
        assert!(text.contains(&key) && text.contains("192.0.2.1"), "{text}");
    };
    named(
        s.claim("p", ip("192.0.2.1"), &Record::owned_by("b"))
            .unwrap_err(),
    );
    named(s.free("p", ip("192.0.2.1"), &a).unwrap_err());
    named(
        s.replace("p", ip("192.0.2.1"), &a, &Record::owned_by("b"))
            .unwrap_err(),
    );
    named(s.record("p", ip("192.0.2.1")).unwrap_err());
    named(s.owned("p", "a").unwrap_err());
    named(s.list("p").unwrap_err());
    assert_eq!(
        ctl(&etcd, &["get", "--print-value-only", &key]).trim_end(),
        "garbage"
    );

    // Keys and values this store never writes.
    let mut s = open(&format!("{}/second", etcd.url()));
    ctl(&etcd, &["put", "/second/pools/p/ips/not-an-ip", "{}"]);
    let e = s.list("p").unwrap_err().to_string();
    assert!(
        e.contains("/second/pools/p/ips/not-an-ip") && e.contains("corrupt"),
        "{e}"
    );
    ctl(&etcd, &["put", "/second/pools/p/next", "nowhere"]);
    let e = s.next("p").unwrap_err().to_string();
    assert!(
        e.contains("/second/pools/p/next") && e.contains("nowhere"),
        "{e}"
    );
    ctl(&etcd, &["put", "/second/pools/p/owners/a", "nowhere"]);
    let e = s.owned("p", "a").unwrap_err().to_string();
    assert!(e.contains("/second/pools/p/owners/a"), "{e}");
    ctl(&etcd, &["put", "/second/pools/stray", "x"]);
    let e = s.pools().unwrap_err().to_string();
    assert!(e.contains("/second/pools/stray"), "{e}");
}

#[test]
fn bad_urls_are_refused_before_connecting() {
    for url in [
        "etcd://",
        "etcd://host",
        "etcd://a:1,",
        "etcd://a:b",
        "etcd://a:1/",
    ] {
        match store::open(url) {
            Err(e @ StoreError::Url { .. }) => assert!(e.to_string().contains(url), "{e}"),
            other => panic!("{url}: {other:?}"),
        }
    }
}

#[test]
fn an_unreachable_etcd_is_an_error_naming_it() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("etcd://127.0.0.1:{port}");
    let e = match store::open(&url) {
        Err(e) => e,
        Ok(mut s) => s.pools().unwrap_err(),
    };
    assert!(matches!(e, StoreError::Etcd { .. }), "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
}

#[test]
fn a_hung_etcd_times_out_with_an_error_naming_it() {
    let Some(etcd) = etcd() else { return };
    let mut s = open(&etcd.url());
    assert!(s
        .claim("p", ip("192.0.2.1"), &Record::owned_by("a"))
        .unwrap());
    etcd.pause().unwrap();
    let e = s.claim("p", ip("192.0.2.2"), &Record::owned_by("b"));
    etcd.resume().unwrap();
    let e = e.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, StoreError::Etcd { .. }), "{text}");
    assert!(
        text.contains(&etcd.endpoint().to_string()) && text.contains("no answer"),
        "{text}"
    );
    // The request reached etcd, which may apply it once thawed, at any moment after: the client
    // cannot know. Either way the store is whole: the record and the owner's index agree in
    // every read that sees both. Two reads are two moments, so a pair may straddle the late
    // write; a store that is not whole disagrees in every pair, for as long as we ask.
    let mut pairs = Vec::new();
    let settled = (0..50).any(|_| {
        let held = s.record("p", ip("192.0.2.2")).unwrap();
        assert!(
            held.is_none() || held == Some(Record::owned_by("b")),
            "{held:?}"
        );
        let owned = s.owned("p", "b").unwrap().map(|(i, _)| i);
        let agree = owned == held.as_ref().map(|_| ip("192.0.2.2"));
        let again = s.record("p", ip("192.0.2.2")).unwrap();
        pairs.push((held.clone(), owned));
        agree && again == held || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            false
        }
    });
    assert!(settled, "record and index never agreed: {pairs:?}");
    assert_eq!(
        s.record("p", ip("192.0.2.1")).unwrap(),
        Some(Record::owned_by("a"))
    );
}

#[test]
fn survives_an_etcd_restart() {
    let Some(mut etcd) = etcd() else { return };
    let url = etcd.url();
    let p = common::pool("198.51.100.0/24", ipam::alloc::Order::Lowest);
    let mut s = open(&url);
    let mut held = Vec::new();
    for n in 0..10 {
        held.push(
            ipam::alloc::reserve(s.as_mut(), &p, &format!("o{n}"), None)
                .unwrap()
                .ip,
        );
    }
    let before = s.list(&p.name).unwrap();

    etcd.stop();
    // While it is down: a clear error naming the endpoint, and nothing changes.
    let e = ipam::alloc::reserve(s.as_mut(), &p, "during", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&url["etcd://".len()..]), "{e}");
    let e = s
        .free(&p.name, held[0], &Record::owned_by("o0"))
        .unwrap_err();
    assert!(matches!(e, StoreError::Etcd { .. }), "{e}");

    etcd.restart().unwrap();
    // The same connection works again once etcd is back (it may take a moment to reconnect).
    let back = ipi_lab::wait_for(Duration::from_secs(30), Duration::from_millis(100), || {
        s.pools().is_ok()
    });
    assert!(back.is_some(), "the store never came back:\n{}", etcd.log());
    assert_eq!(s.list(&p.name).unwrap(), before);
    assert_eq!(s.owned(&p.name, "during").unwrap(), None);
    assert_eq!(
        s.record(&p.name, held[0]).unwrap(),
        Some(Record::owned_by("o0"))
    );
    let next = ipam::alloc::reserve(s.as_mut(), &p, "after", None).unwrap();
    assert!(next.new && !held.contains(&next.ip));
    // And a new connection sees the same.
    let mut fresh = open(&url);
    assert_eq!(fresh.list(&p.name).unwrap().len(), 11);
}

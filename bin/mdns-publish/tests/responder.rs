//! The responder on a virtual clock: probing, announcing, answering (QM, QU, legacy unicast,
//! known answers, the multicast rate limit), conflicts and simultaneous probes.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use mdns_publish::link::Arrival;
use mdns_publish::records::{Host, Publication, Service, OTHER_TTL};
use mdns_publish::responder::{Outgoing, Responder, To};

fn publication(address: &str) -> Publication {
    Publication {
        hosts: vec![Host {
            name: "master-0.local.".into(),
            addresses: vec![address.parse().unwrap()],
        }],
        services: vec![Service {
            instance: "lab master-0".into(),
            kind: "_workstation._tcp".into(),
            domain: "local.".into(),
            port: 42424,
            target: "master-0.local.".into(),
            txt: vec!["role=master".into()],
            ttl: OTHER_TTL,
        }],
    }
}

/// Runs the responder from `start` until probing and announcing are done; returns the
/// messages with the time each went out.
fn establish(r: &mut Responder, start: Instant) -> (Vec<(Duration, Outgoing)>, Instant) {
    let mut sent = Vec::new();
    let mut now = start;
    while !r.established() {
        now = r.next_timeout().unwrap();
        for o in r.poll(now) {
            sent.push((now - start, o));
        }
    }
    (sent, now)
}

fn responder(start: Instant) -> Responder {
    Responder::new(publication("192.0.2.10").records().unwrap(), start, 42)
}

fn query(name: &str, kind: RecordType, unicast: bool) -> Message {
    let mut m = Message::new();
    m.set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_id(7);
    let mut q = Query::query(Name::from_ascii(name).unwrap(), kind);
    q.set_mdns_unicast_response(unicast);
    m.add_query(q);
    m
}

const PEER: &str = "192.0.2.20:5353";

/// A datagram from `from` to the mDNS group.
fn group(from: SocketAddr) -> Arrival {
    Arrival {
        from,
        to: Some("224.0.0.251".parse().unwrap()),
        ttl: Some(255),
    }
}

/// A datagram from `from` to our address alone.
fn direct(from: SocketAddr) -> Arrival {
    Arrival {
        to: Some("192.0.2.10".parse().unwrap()),
        ..group(from)
    }
}

#[test]
fn three_probes_250_ms_apart_then_two_announcements_a_second_apart() {
    let start = Instant::now();
    let mut r = responder(start);
    let (sent, _) = establish(&mut r, start);
    assert_eq!(sent.len(), 5);
    let first = sent[0].0;
    assert!(first <= Duration::from_millis(250), "random wait {first:?}");
    for (i, (at, o)) in sent.iter().enumerate().take(3) {
        assert_eq!(*at - first, Duration::from_millis(250) * i as u32);
        assert_eq!(o.message.message_type(), MessageType::Query);
        assert_eq!(
            o.message.queries()[0].mdns_unicast_response(),
            i == 0,
            "QU on the first probe"
        );
        assert_eq!(
            o.message.name_servers().len(),
            3,
            "A, SRV, TXT in authority"
        );
    }
    assert_eq!(sent[4].0 - sent[3].0, Duration::from_secs(1));
    let announce = &sent[3].1.message;
    assert_eq!(announce.message_type(), MessageType::Response);
    assert_eq!(announce.answers().len(), 5);
    for a in announce.answers() {
        let unique = !matches!(a.data(), RData::PTR(_));
        assert_eq!(a.mdns_cache_flush(), unique, "{a}");
    }
}

#[test]
fn answers_qm_multicast_qu_unicast_legacy_with_short_ttls() {
    let start = Instant::now();
    let mut r = responder(start);
    let (_, now) = establish(&mut r, start);
    let now = now + Duration::from_secs(2);
    let peer: SocketAddr = PEER.parse().unwrap();

    // QM for the host: multicast, the A record with the cache-flush bit.
    let out = r.receive(
        &query("master-0.local.", RecordType::A, false),
        &group(peer),
        now,
    );
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].to,
        To::Group { v6: false },
        "on the family it was asked on"
    );
    assert!(out[0].message.answers()[0].mdns_cache_flush());
    // The same question within a second: not multicast again.
    assert!(r
        .receive(
            &query("master-0.local.", RecordType::A, false),
            &group(peer),
            now + Duration::from_millis(500)
        )
        .is_empty());
    // QU: unicast, whatever the rate limit.
    let out = r.receive(
        &query("master-0.local.", RecordType::A, true),
        &group(peer),
        now + Duration::from_millis(600),
    );
    assert_eq!(out[0].to, To::Unicast(peer));

    // Legacy unicast (not from 5353): the id and question echoed, TTL <= 10, no mDNS bits.
    let legacy: SocketAddr = "192.0.2.20:40000".parse().unwrap();
    let out = r.receive(
        &query("master-0.local.", RecordType::A, false),
        &group(legacy),
        now,
    );
    let m = &out[0].message;
    assert_eq!(out[0].to, To::Unicast(legacy));
    assert_eq!((m.id(), m.queries().len()), (7, 1));
    assert_eq!(m.answers()[0].ttl(), 10);
    assert!(!m.answers()[0].mdns_cache_flush());

    // PTR browse: shared, so delayed 20-120 ms; SRV, TXT and the address come along.
    let out = r.receive(
        &query("_workstation._tcp.local.", RecordType::PTR, false),
        &group(peer),
        now,
    );
    assert!(out.is_empty());
    let due = r.next_timeout().unwrap();
    assert!(due >= now + Duration::from_millis(20) && due <= now + Duration::from_millis(120));
    let out = r.poll(due);
    assert_eq!(out[0].message.answers().len(), 1);
    let extra: Vec<RecordType> = out[0]
        .message
        .additionals()
        .iter()
        .map(Record::record_type)
        .collect();
    assert_eq!(extra, [RecordType::SRV, RecordType::TXT, RecordType::A]);

    // Nothing of ours: silence.
    assert!(r
        .receive(
            &query("other.local.", RecordType::A, false),
            &group(peer),
            now
        )
        .is_empty());
}

#[test]
fn known_answers_are_not_repeated() {
    let start = Instant::now();
    let mut r = responder(start);
    let (_, now) = establish(&mut r, start);
    let peer: SocketAddr = PEER.parse().unwrap();
    let ours = r.records()[0].record.clone();
    let mut q = query("master-0.local.", RecordType::A, true);
    let mut known = ours.clone();
    known.set_ttl(100);
    q.add_answer(known);
    assert!(
        r.receive(&q, &group(peer), now).is_empty(),
        "the querier has it with more than half the TTL"
    );
    let mut q = query("master-0.local.", RecordType::A, true);
    let mut stale = ours;
    stale.set_ttl(30);
    q.add_answer(stale);
    assert_eq!(r.receive(&q, &group(peer), now).len(), 1);
}

fn response_with(record: Record) -> Message {
    let mut m = Message::new();
    m.set_message_type(MessageType::Response)
        .set_authoritative(true);
    m.add_answer(record);
    m
}

#[test]
fn another_host_with_our_name_is_a_conflict_never_a_rename() {
    let start = Instant::now();
    let peer: SocketAddr = PEER.parse().unwrap();
    // While probing.
    let mut r = responder(start);
    let theirs = publication("192.0.2.99").records().unwrap()[0]
        .record
        .clone();
    r.receive(&response_with(theirs.clone()), &group(peer), start);
    assert!(
        r.conflict().unwrap().contains("master-0.local."),
        "{:?}",
        r.conflict()
    );
    assert!(
        r.poll(start + Duration::from_secs(5)).is_empty(),
        "a loser sends nothing"
    );
    // After: a consistent answer (our own, looped back) is not one; another address is.
    let mut r = responder(start);
    let (_, now) = establish(&mut r, start);
    let ours = r.records()[0].record.clone();
    r.receive(&response_with(ours), &group(peer), now);
    assert!(r.conflict().is_none());
    // A response from a port other than 5353 is not mDNS: ignored.
    r.receive(
        &response_with(theirs.clone()),
        &group("192.0.2.20:40000".parse().unwrap()),
        now,
    );
    assert!(r.conflict().is_none());
    // A goodbye claims nothing.
    let mut bye = theirs.clone();
    bye.set_ttl(0);
    r.receive(&response_with(bye), &group(peer), now);
    assert!(r.conflict().is_none());
    // The same claim unicast to us alone: no other host heard it, so it is not a conflict.
    r.receive(&response_with(theirs.clone()), &direct(peer), now);
    assert!(r.conflict().is_none());
    assert!(r.established());
    assert_eq!(r.counts().unicast_claims, 1);
    // Multicast, to an established name: probed again, not given up.
    r.receive(&response_with(theirs.clone()), &group(peer), now);
    assert!(r.conflict().is_none());
    assert!(!r.established(), "probing again");
    assert_eq!(r.counts().reprobes, 1);
    assert_eq!(r.next_timeout(), Some(now));
    assert_eq!(r.poll(now)[0].message.name_servers().len(), 3, "a probe");
    // Answered while probing: lost.
    r.receive(&response_with(theirs), &group(peer), now);
    assert!(r.conflict().is_some());
}

#[test]
fn a_probe_nobody_answers_keeps_the_name() {
    let start = Instant::now();
    let peer: SocketAddr = PEER.parse().unwrap();
    let mut r = responder(start);
    let (_, now) = establish(&mut r, start);
    let theirs = publication("192.0.2.99").records().unwrap()[0]
        .record
        .clone();
    r.receive(&response_with(theirs), &group(peer), now);
    let (sent, _) = establish(&mut r, now);
    assert!(r.conflict().is_none());
    assert_eq!(sent.len(), 5, "three probes and two announcements again");
}

#[test]
fn unicast_answers_to_one_querier_are_rate_limited() {
    let start = Instant::now();
    let mut r = responder(start);
    let (_, now) = establish(&mut r, start);
    let flooder: SocketAddr = "192.0.2.66:40000".parse().unwrap();
    let q = query("master-0.local.", RecordType::A, false);
    let answered = (0..300)
        .filter(|_| !r.receive(&q, &group(flooder), now).is_empty())
        .count();
    assert_eq!(answered, 100);
    assert_eq!(r.counts().rate_limited, 200);
    // Another querier is answered meanwhile, and the flooder again a second later.
    let other: SocketAddr = "192.0.2.21:40000".parse().unwrap();
    assert_eq!(r.receive(&q, &group(other), now).len(), 1);
    let later = now + Duration::from_secs(1);
    assert_eq!(r.receive(&q, &group(flooder), later).len(), 1);
}

#[test]
fn simultaneous_probes_the_later_data_wins() {
    let start = Instant::now();
    let peer: SocketAddr = PEER.parse().unwrap();
    let probe_of = |address: &str| {
        let mut m = query("master-0.local.", RecordType::ANY, false);
        for o in publication(address)
            .records()
            .unwrap()
            .into_iter()
            .filter(|o| o.unique)
        {
            m.add_name_server(o.record);
        }
        m
    };
    // Ours (192.0.2.10) against a later address: we lose, wait a second, probe again.
    let mut r = responder(start);
    let first = r.next_timeout().unwrap();
    r.poll(first);
    r.receive(&probe_of("192.0.2.99"), &group(peer), first);
    assert_eq!(r.next_timeout(), Some(first + Duration::from_secs(1)));
    // Against an earlier address: we win and go on.
    let mut r = responder(start);
    r.poll(first);
    r.receive(&probe_of("192.0.2.1"), &group(peer), first);
    assert_eq!(r.next_timeout(), Some(first + Duration::from_millis(250)));
    // Our own probe, looped back: nothing happens.
    r.receive(&probe_of("192.0.2.10"), &group(peer), first);
    assert_eq!(r.next_timeout(), Some(first + Duration::from_millis(250)));
}

#[test]
fn goodbye_and_address_changes() {
    let start = Instant::now();
    let mut r = responder(start);
    let (_, now) = establish(&mut r, start);
    let bye = r.goodbye();
    assert!(bye.message.answers().iter().all(|a| a.ttl() == 0));
    assert_eq!(bye.message.answers().len(), 5);
    // A new address: a goodbye for the old A record, then probing and announcing again.
    let out = r.replace(publication("192.0.2.11").records().unwrap(), now);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].message.answers()[0].ttl(), 0);
    assert!(!r.established());
    let (sent, _) = establish(&mut r, now);
    assert_eq!(sent.len(), 5);
}

#[test]
fn large_answers_are_split_into_packets_that_fit() {
    let services = (0..200)
        .map(|i| Service {
            instance: format!("instance {i}"),
            kind: "_http._tcp".into(),
            domain: "local.".into(),
            port: 8000,
            target: "many.local.".into(),
            txt: vec![],
            ttl: OTHER_TTL,
        })
        .collect();
    let p = Publication {
        hosts: vec![Host {
            name: "many.local.".into(),
            addresses: vec!["192.0.2.10".parse().unwrap()],
        }],
        services,
    };
    let start = Instant::now();
    let mut r = Responder::new(p.records().unwrap(), start, 1);
    let (sent, _) = establish(&mut r, start);
    for (_, o) in sent {
        let whole = o.message.to_vec().unwrap();
        assert!(whole.len() > 1400);
        let parts = mdns_publish::responder::packets(&o.message, &whole);
        assert!(parts.len() > 1);
        let (mut records, mut questions) = (0, 0);
        for part in &parts {
            assert!(part.len() <= 1400, "{}", part.len());
            let m = Message::from_vec(part).unwrap();
            records += m.answers().len() + m.name_servers().len();
            questions += m.queries().len();
        }
        assert_eq!(
            records,
            o.message.answers().len() + o.message.name_servers().len()
        );
        // A probe's questions are spread over its packets (an announcement has none).
        assert_eq!(questions, o.message.queries().len());
    }
}

//! Fuzz what mdns-publish does with datagrams from the link: arbitrary bytes, as a query or
//! a response, from port 5353 or another, multicast or unicast, to a responder in every phase,
//! and a browse taking in several of them from two sources across rounds (what `--watch`
//! carries): never panic; whatever the responder answers encodes; the browse's count of held
//! records stays within its cap.

#![no_main]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hickory_proto::op::Message;
use libfuzzer_sys::fuzz_target;
use mdns_publish::browse::Seen;
use mdns_publish::link::Arrival;
use mdns_publish::records::{Host, Publication, Service};
use mdns_publish::responder::Responder;

fn publication() -> Publication {
    Publication {
        hosts: vec![Host { name: "master-0.local.".into(), addresses: vec!["192.0.2.10".parse().unwrap(), "2001:db8::10".parse().unwrap()] }],
        services: vec![Service {
            instance: "lab master-0".into(),
            kind: "_workstation._tcp".into(),
            domain: "local.".into(),
            port: 42424,
            target: "master-0.local.".into(),
            txt: vec!["role=master".into()],
            ttl: 4500,
        }],
    }
}

fuzz_target!(|data: &[u8]| {
    // Up to eight datagrams, split at each "\xff\x00\xff".
    let datagrams: Vec<&[u8]> = split(data).into_iter().take(8).collect();
    let start = Instant::now();
    let records = publication().records().expect("valid records");
    for (from, to) in [
        ("192.0.2.20:5353", "224.0.0.251"),
        ("192.0.2.20:5353", "192.0.2.10"),
        ("192.0.2.20:40000", "224.0.0.251"),
        ("[2001:db8::20]:5353", "ff02::fb"),
    ] {
        let arrival = Arrival {
            from: from.parse::<SocketAddr>().expect("an address"),
            to: Some(to.parse().expect("an address")),
            ttl: Some(255),
        };
        let mut r = Responder::new(records.clone(), start, 7);
        // Probing, then established.
        for at in [Duration::ZERO, Duration::from_secs(3)] {
            let now = start + at;
            let _ = r.poll(now);
            for d in &datagrams {
                let Ok(message) = Message::from_vec(d) else { continue };
                for o in r.receive(&message, &arrival, now) {
                    o.message.to_vec().expect("our answers encode");
                }
            }
        }
    }
    let mut seen = Seen::default();
    let kind = mdns_publish::records::name("_workstation._tcp.local.").expect("a name");
    for (i, d) in datagrams.iter().enumerate() {
        let Ok(message) = Message::from_vec(d) else { continue };
        let from = if i % 2 == 0 { "192.0.2.20" } else { "192.0.2.66" };
        let now = start + Duration::from_secs(i as u64 * 30);
        seen.receive_at(&message, from.parse().expect("an address"), now);
        seen.expire(now);
        let _ = seen.found(&kind, "", 0, None, std::time::SystemTime::now());
    }
    let _ = seen.query(&[kind]).to_vec();
});

fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(3).position(|w| w == b"\xff\x00\xff") {
        out.push(&rest[..at]);
        rest = &rest[at + 3..];
    }
    out.push(rest);
    out
}

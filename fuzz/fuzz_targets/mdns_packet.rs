//! Fuzz what mdns-publish does with a datagram from the link: arbitrary bytes, as a query or
//! a response, from port 5353 or another, to a responder in every phase and to a browse,
//! never panic; whatever the responder answers encodes.

#![no_main]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hickory_proto::op::Message;
use libfuzzer_sys::fuzz_target;
use mdns_publish::browse::Seen;
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
    let Ok(message) = Message::from_vec(data) else { return };
    let start = Instant::now();
    let records = publication().records().expect("valid records");
    for from in ["192.0.2.20:5353", "192.0.2.20:40000", "[2001:db8::20]:5353"] {
        let from: SocketAddr = from.parse().expect("an address");
        let mut r = Responder::new(records.clone(), start, 7);
        // Probing, then established.
        for at in [Duration::ZERO, Duration::from_secs(3)] {
            let now = start + at;
            let _ = r.poll(now);
            for o in r.receive(&message, from, now) {
                o.message.to_vec().expect("our answers encode");
            }
        }
    }
    let mut seen = Seen::default();
    seen.receive(&message);
    let kind = mdns_publish::records::name("_workstation._tcp.local.").expect("a name");
    let _ = seen.found(&kind, "", 0);
    let _ = seen.query(&[kind]).to_vec();
});

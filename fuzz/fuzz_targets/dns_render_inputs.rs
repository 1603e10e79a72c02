//! Fuzz what dns-render reads besides the cluster and the inventory (ipi-core's targets cover
//! those): resolv.conf (upstreams and the prepender) and DNSData. Arbitrary text gives an
//! output or an error naming the input, never a panic; the prepender is idempotent.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let own = ["192.0.2.1".parse().expect("an address")];
    match dns_render::resolv::upstreams(&text, "fuzz.conf", &own) {
        Ok(u) => assert!(!u.is_empty() && u.iter().all(|a| !a.is_loopback())),
        Err(e) => assert!(e.starts_with("fuzz.conf"), "{e}"),
    }
    let once = dns_render::resolv::prepend(&text, own[0], "lab.example.com");
    assert!(once.contains("nameserver 192.0.2.1\n"));
    assert_eq!(dns_render::resolv::prepend(&once, own[0], "lab.example.com"), once);
    if let Err(e) = dns_render::dnsdata::hosts(&text, "fuzz.yaml") {
        assert!(e.starts_with("fuzz.yaml"), "{e}");
    }
});

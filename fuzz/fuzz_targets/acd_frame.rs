//! Fuzz the address-conflict-detection parsers: arbitrary bytes as a received Ethernet frame
//! to `ipi_core::acd::frame::parse`, and whatever it reads fed to a probe for an IPv4 and an
//! IPv6 address; the same bytes as text to the `--probe-timing` parser (`Timing`), whose
//! accepted values must print back to themselves. Nothing may panic; a frame from the probing
//! interface's own MAC is never an answer.

#![no_main]

use std::net::IpAddr;

use ipi_core::acd::{frame, Probe, Step, Timing, Verdict};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Ok(t)) = std::str::from_utf8(data).map(str::parse::<Timing>) {
        assert_eq!(t.to_string().parse::<Timing>().ok(), Some(t));
    }
    let Some(seen) = frame::parse(data) else {
        return;
    };
    let own = seen.source();
    for target in ["192.0.2.5", "2001:db8::5"] {
        let target: IpAddr = target.parse().expect("a literal address");
        let mut probe = Probe::new(target, own, Timing::FAST, 1);
        let _ = probe.poll(0);
        probe.on_seen(&seen);
        if let Step::Done(Verdict::Answered { mac, .. }) = probe.poll(0) {
            assert_ne!(mac, own, "our own frame taken as an answer: {seen:?}");
        }
    }
});

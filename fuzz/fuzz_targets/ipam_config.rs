//! Fuzz ipam's readers of NetConfig, IPSet, MetalLB IPAddressPool and L2Advertisement files,
//! and its address ranges. Arbitrary text gives a checked object or problems that name the
//! input, never a panic; a NetConfig that reads has subnets whose every range lies inside their
//! cidr, an L2Advertisement only interface names Linux can hold.

#![no_main]

use ipam::netconfig::{IpSet, NetConfig};
use ipi_store::l2adv::L2Advertisement;
use ipi_store::pool::AddressPool;
use ipi_store::range::Span;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = Span::parse(&text);
    match NetConfig::parse(&text, "fuzz.yaml") {
        Ok(n) => {
            for s in &n.subnets {
                for span in &s.pool.space.spans {
                    assert!(s.cidr.contains(span.first) && s.cidr.contains(span.last));
                }
            }
            if let Err(p) = IpSet::parse(&text, "fuzz-ipset.yaml", &n) {
                assert!(p.0.iter().all(|m| m.starts_with("fuzz-ipset.yaml")), "{p}");
            }
        }
        Err(p) => assert!(p.0.iter().all(|m| m.starts_with("fuzz.yaml")), "{p}"),
    }
    if let Err(p) = AddressPool::parse(&text, "fuzz-pool.yaml") {
        assert!(p.0.iter().all(|m| m.starts_with("fuzz-pool.yaml")), "{p}");
    }
    match L2Advertisement::parse(&text, "fuzz-l2.yaml") {
        Ok(a) => assert!(a.interfaces.iter().all(|i| !i.is_empty() && i.len() <= 15)),
        Err(p) => assert!(p.0.iter().all(|m| m.starts_with("fuzz-l2.yaml")), "{p}"),
    }
});

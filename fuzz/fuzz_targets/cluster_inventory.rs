//! Fuzz ipi-core's readers of the two files every program shares: install-config.yaml (the
//! whole model, and the machine networks alone) and the node inventory (text, JSON, kubectl
//! JSON). Arbitrary text gives a model or errors naming the input, never a panic; an inventory
//! that reads writes back to text that reads to the same inventory.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let nodes = ipi_core::Inventory::parse(&text, "fuzz.nodes").ok();
    if let Some(n) = &nodes {
        let again = ipi_core::Inventory::parse(&n.to_text(), "again").expect("our own text reads");
        assert_eq!(&again, n);
    }
    match ipi_core::Cluster::parse(&text, "fuzz.yaml", nodes.as_ref()) {
        Ok(c) => assert!(!c.api_vips.is_empty() && !c.machine_networks.is_empty()),
        Err(e) => assert!(e.to_string().starts_with("fuzz.yaml"), "{e}"),
    }
});

//! Fuzz ipam's reader of CNI network configs (the network config on stdin, its `ipam` section
//! in whereabouts or host-local style). Arbitrary bytes give a config or an error of the CNI
//! codes a config can cause (1, 6, 7), never a panic; a config that reads has range sets of one
//! family each, ranges inside their subnets, pools under the network's prefix, a first address
//! that its pool may hand out, and a result that renders.

#![no_main]

use libfuzzer_sys::fuzz_target;

use ipam::cni::config::{self, SUPPORTED};

fuzz_target!(|data: &[u8]| {
    for (command, needs) in [("ADD", "0.3.0"), ("CHECK", "0.4.0"), ("GC", "1.1.0")] {
        let conf = match config::parse(data, command, needs) {
            Ok(c) => c,
            Err(e) => {
                assert!(matches!(e.code(), 1 | 6 | 7), "{e}");
                assert!(e.to_string().starts_with("network config on stdin: "), "{e}");
                continue;
            }
        };
        assert!(SUPPORTED.contains(&conf.cni_version.as_str()));
        let pools = conf.ipam.pools();
        assert_eq!(pools.len(), conf.ipam.sets.len());
        let mut first = Vec::new();
        for (set, pool) in conf.ipam.sets.iter().zip(&pools) {
            assert!(pool.name.starts_with(&conf.ipam.pool_prefix()));
            let v4 = set.ranges.first().is_some_and(|r| r.subnet.is_ipv4());
            for r in &set.ranges {
                assert_eq!(r.subnet.is_ipv4(), v4, "one family per set");
                assert!(r.subnet.contains(r.span.first) && r.subnet.contains(r.span.last));
            }
            let space = &pool.space;
            let ip = space
                .spans
                .iter()
                .find_map(|s| space.next_allowed(s, 0))
                .expect("a config that reads hands out an address from every set");
            assert_eq!(space.refusal(ip), None);
            assert!(set.range_of(ip).is_some());
            first.push(ip);
        }
        let text = ipam::cni::result_json(&conf, &first, conf.dns.as_ref());
        assert!(text.starts_with("{\"cniVersion\":"), "{text}");
    }
});

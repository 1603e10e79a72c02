//! 16 processes x 500 allocations on one range, with the file store, the etcd store, and the
//! etcd store over TLS with authentication on, as ipam's user by its client certificate (each
//! process makes its own TLS connection; a password would cost etcd a bcrypt per process, which
//! on 2 cores takes more than the test's 5 minutes for 8,000): no address handed out twice,
//! none lost. Each allocation is a
//! real `ipam pool reserve` process; 16 of them run at any moment.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;

use common::{allocate_concurrently, etcd, listed_at, pool_file, secure_etcd, Ipam, Target};

const PROCESSES: usize = 16;
const EACH: usize = 500;

/// Runs the allocations against `store` and checks the answers against `ipam list`.
fn no_duplicate_no_loss(store: &Target) {
    let url = &store.url;
    let dir = tempfile::tempdir().unwrap();
    // 8192 addresses for 8000 allocations: the range nearly fills up, so late allocations
    // search past many taken addresses.
    let pool = pool_file(dir.path(), "busy", &["2001:db8::/115"]);
    let ipam = Ipam::copy();
    let run = allocate_concurrently(ipam.path(), &pool, store, PROCESSES, EACH);
    eprintln!(
        "{url}: {} allocations by {PROCESSES} concurrent processes in {:.1} s ({:.0}/s)",
        run.reported.len(),
        run.elapsed.as_secs_f64(),
        run.reported.len() as f64 / run.elapsed.as_secs_f64()
    );
    assert!(
        run.failures.is_empty(),
        "{} failed:\n{}",
        run.failures.len(),
        run.failures.join("\n")
    );
    assert_eq!(run.reported.len(), PROCESSES * EACH);
    let mut by_address = HashMap::new();
    for (name, address) in &run.reported {
        if let Some(other) = by_address.insert(*address, name) {
            panic!("{address} was handed out to both {other} and {name}");
        }
    }
    let stored = listed_at(ipam.path(), store);
    let stored = &stored["pool/busy"];
    assert_eq!(stored.len(), PROCESSES * EACH, "reservations in the store");
    for (name, address) in &run.reported {
        assert_eq!(stored.get(address), Some(name), "{name} was told {address}");
    }
}

#[test]
fn file_store_16_processes_500_allocations_each() {
    let dir = tempfile::tempdir().unwrap();
    no_duplicate_no_loss(&Target::plain(
        &dir.path().join("store").display().to_string(),
    ));
}

#[test]
fn etcd_store_16_processes_500_allocations_each() {
    let Some(etcd) = etcd() else { return };
    no_duplicate_no_loss(&Target::etcd(&etcd));
}

#[test]
fn etcd_tls_store_16_processes_500_allocations_each() {
    let Some(etcd) = secure_etcd() else { return };
    no_duplicate_no_loss(&Target::etcd_by_certificate(&etcd));
}

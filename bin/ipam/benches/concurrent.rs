//! Allocations per second with 16 concurrent processes, the file store against the etcd store.
//!
//! Each allocation is one whole `ipam pool reserve` process (start, read the pool, open the
//! store, reserve, print), as a CNI runtime or a script would run it; 16 run at any moment,
//! each worker starting its next as soon as its last exits, 500 per worker, on one range
//! (2001:db8::/115, 8192 addresses) that ends up nearly full. One process at a time is
//! measured too, for the cost of a single allocation. The etcd is a real one-member cluster on
//! loopback (Debian's etcd-server), fsyncing its log as in production. Every run's answers are
//! checked: no address twice, each one in the store.
//!
//! `cargo bench -p ipam --bench concurrent` (needs etcd-server and etcd-client: `scripts/bench`
//! installs them). `BENCH_EACH=N` changes the 500.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashSet;

use common::{allocate_concurrently, listed, pool_file, Ipam, Target};

const PROCESSES: usize = 16;

/// Runs `processes` x `each` allocations on a fresh pool; allocations per second.
fn rate(ipam: &Ipam, url: &str, pool: &str, processes: usize, each: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let file = pool_file(dir.path(), pool, &["2001:db8::/115"]);
    let run = allocate_concurrently(ipam.path(), &file, &Target::plain(url), processes, each);
    assert!(run.failures.is_empty(), "{}", run.failures.join("\n"));
    let unique: HashSet<_> = run.reported.iter().map(|(_, a)| *a).collect();
    assert_eq!(
        unique.len(),
        processes * each,
        "an address handed out twice"
    );
    assert_eq!(
        listed(ipam.path(), url)[&format!("pool/{pool}")].len(),
        processes * each
    );
    run.reported.len() as f64 / run.elapsed.as_secs_f64()
}

fn main() {
    let each: usize = std::env::var("BENCH_EACH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let ipam = Ipam::copy();
    let dir = tempfile::tempdir().unwrap();
    let file_url = dir.path().join("store").display().to_string();
    let etcd = if ipi_lab::etcd::available() {
        Some(ipi_lab::etcd::Etcd::start().unwrap())
    } else {
        None
    };
    println!("| store | processes at once | allocations | allocations/s | etcd requests per allocation |");
    println!("| --- | --- | --- | --- | --- |");
    let mut results = Vec::new();
    for (label, url) in
        std::iter::once(("file", file_url)).chain(etcd.iter().map(|e| ("etcd", e.url())))
    {
        let mut rates = Vec::new();
        for (pool, processes) in [("one", 1), ("many", PROCESSES)] {
            let before = etcd
                .as_ref()
                .filter(|_| label == "etcd")
                .map(|e| e.requests().unwrap());
            let rate = rate(&ipam, &url, pool, processes, each);
            let allocations = processes * each;
            // What each allocation cost etcd: lost races show as more Txn per allocation.
            let requests = match (&etcd, before) {
                (Some(e), Some(before)) => e
                    .requests()
                    .unwrap()
                    .iter()
                    .map(|(method, n)| {
                        (
                            method.clone(),
                            n.saturating_sub(before.get(method).copied().unwrap_or(0)),
                        )
                    })
                    .filter(|(_, n)| *n > 0)
                    .map(|(method, n)| format!("{method} {:.1}", n as f64 / allocations as f64))
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "-".to_owned(),
            };
            println!("| {label} | {processes} | {allocations} | {rate:.0} | {requests} |");
            rates.push(rate);
        }
        results.push((label, rates[0], rates[1]));
    }
    if let [(_, file_one, file_many), (_, etcd_one, etcd_many)] = results[..] {
        println!(
            "\nfile / etcd: {:.2}x with 1 process, {:.2}x with {PROCESSES} at once",
            file_one / etcd_one,
            file_many / etcd_many
        );
    }
}

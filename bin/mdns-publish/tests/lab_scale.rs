//! Discovery at cluster scale: 20 nodes and then 100 on one link (one network namespace
//! each, mdns-publish as the units run it). Every inventory must hold every node, keep holding
//! them, and lose a node killed without a goodbye within 10 s; and the packets a node sends at
//! steady state must not grow with the cluster (traffic that grows as N, not N²).

#![allow(clippy::unwrap_used, dead_code)]

use std::time::Duration;

#[path = "support/scale.rs"]
mod scale;

use scale::{Cluster, Stack, Steady};

/// The most a node's packets a second may grow from 20 nodes to 100 (1.0 is linear traffic;
/// one-shot rounds answered by every node, as before, gave 5).
const GROWTH: f64 = 1.5;

/// Starts `n` nodes, checks the inventories and the departure, and returns the steady state.
fn measure(n: usize) -> Steady {
    let mut cluster = Cluster::start(n, Stack::Ours);
    let took = cluster
        .until_complete(Duration::from_secs(60))
        .unwrap_or_else(|k| {
            panic!(
                "{n} nodes: {k} of {n} inventories complete after 60 s\n{}",
                cluster.incomplete_log()
            )
        });
    eprintln!("{n} nodes: every inventory complete after {took:.1?}");
    // Past the first rounds' burst, into the back-off.
    std::thread::sleep(Duration::from_secs(10));
    let steady = cluster.steady(Duration::from_secs(20));
    eprintln!("{n} nodes at steady state: {steady:?}");
    assert_eq!(
        cluster.complete(),
        n,
        "{n} nodes: an inventory lost a node at steady state\n{}",
        cluster.incomplete_log()
    );
    let gone = cluster.kill(n / 2, Duration::from_secs(10));
    let gone = gone.unwrap_or_else(|| {
        panic!("{n} nodes: a node killed without a goodbye is still in an inventory after 10 s")
    });
    eprintln!("{n} nodes: a killed node left every inventory after {gone:.1?}");
    steady
}

#[test]
fn a_hundred_nodes_find_each_other_and_each_sends_no_more_than_at_twenty() {
    if !ipi_lab::available() {
        return;
    }
    let small = measure(20);
    let big = measure(100);
    let growth = big.packets_per_node() / small.packets_per_node();
    assert!(
        growth <= GROWTH,
        "a node sends {:.2} packets/s at 100 nodes, {:.2} at 20: {growth:.2}x (at most {GROWTH}x)",
        big.packets_per_node(),
        small.packets_per_node()
    );
}

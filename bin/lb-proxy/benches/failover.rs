//! Issue 16's table: what a backend failure costs the API's clients, for haproxy and lb-proxy
//! with OpenShift's settings, with haproxy's tuned keywords, and lb-proxy `--cluster`. Three
//! stand-in API servers in a lab, a client asking `/readyz` through the proxy every 50 ms (3 s
//! limit), one server failing in each of five ways (tests/support/failover.rs, shared with
//! tests/failover_lab.rs).
//!
//! `sudo cargo bench -p lb-proxy --bench failover` (needs haproxy and nft; `scripts/bench`
//! installs them). `BENCH_SECONDS=N` watches N seconds after each failure (default 25, the
//! issue's).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/failover.rs"]
mod failover;

use std::time::Duration;

use failover::{Bed, Failure, Setup, Tally};

fn main() {
    if !ipi_lab::has_net_admin() {
        eprintln!("failover: needs CAP_NET_ADMIN (run as root)");
        return;
    }
    for (tool, package) in [("haproxy", "haproxy"), ("nft", "nftables")] {
        if !ipi_lab::tool(tool, package) {
            std::process::exit(2);
        }
    }
    let seconds = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    let after = Duration::from_secs(seconds);
    let mut bed = Bed::new();
    let (default, tuned) = (bed.config(false, ""), bed.config(true, ""));
    let setups = [
        ("haproxy 2.6", Setup::Haproxy(default.clone())),
        ("haproxy tuned", Setup::Haproxy(tuned.clone())),
        ("lb-proxy", Setup::LbProxy(default)),
        ("lb-proxy tuned", Setup::LbProxy(tuned)),
        ("lb-proxy --cluster", Setup::Cluster),
    ];
    let mut rows: Vec<(Failure, Vec<Tally>)> = Vec::new();
    for failure in Failure::ALL {
        let mut row = Vec::new();
        for (name, setup) in &setups {
            let (tally, _) = bed.run(setup, failure, Duration::from_secs(1), after);
            eprintln!("{}, {name}: {tally}", failure.label());
            row.push(tally);
        }
        rows.push((failure, row));
    }
    println!(
        "\n{seconds} s after the failure, a request every 50 ms (3 s limit); \
         tuned: option redispatch 1, retry-on conn-failure empty-response response-timeout, \
         timeout connect 1s, observe layer4 error-limit 1 on-error mark-down\n"
    );
    let names: Vec<&str> = setups.iter().map(|(n, _)| *n).collect();
    println!("| backend failure | {} |", names.join(" | "));
    println!("| --- |{}", " --- |".repeat(names.len()));
    for (failure, row) in rows {
        let cells: Vec<String> = row.iter().map(cell).collect();
        println!("| {} | {} |", failure.label(), cells.join(" | "));
    }
}

/// One cell: failed of all, slow, the worst extra wait, and until when requests failed.
fn cell(t: &Tally) -> String {
    let mut s = format!(
        "{} of {} failed, {} slow, worst +{} ms",
        t.failed,
        t.requests,
        t.slow,
        t.worst_extra.as_millis()
    );
    if let Some(last) = t.last_failure {
        s.push_str(&format!(", failing until {:.1} s", last.as_secs_f64()));
    }
    s
}

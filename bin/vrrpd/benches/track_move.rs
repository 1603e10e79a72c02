//! Track-script moves, judged by a client: a track script starts failing on the master, and
//! the time until a third host is served through the VIP by the other router. vrrpd with
//! `preempt_on_lower_priority`, vrrpd without it (keepalived's semantics) and keepalived, each
//! in a fresh lab, several runs each; medians and ratios printed (below 1.0 is faster).
//! Scenario: tests/track_move/mod.rs.
//!
//! `cargo bench -p vrrpd --bench track_move` as root (it builds network namespaces);
//! `RUNS=N` sets the runs per program (default 3).

// The shared test helpers unwrap: a panic there fails the bench, as it fails a test.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use ipi_net_tests::vrrp::Speaker;

#[allow(dead_code, reason = "the bench uses a few of the shared test helpers")]
#[path = "../tests/support/mod.rs"]
mod support;
#[path = "../tests/track_move/mod.rs"]
mod track_move;

use track_move::Mode;

const MODES: [Mode; 3] = [
    Mode {
        speaker: Speaker::Vrrpd,
        keyword: true,
    },
    Mode {
        speaker: Speaker::Vrrpd,
        keyword: false,
    },
    Mode {
        speaker: Speaker::Keepalived,
        keyword: false,
    },
];

fn main() {
    if !ipi_lab::has_net_admin() {
        eprintln!("track_move: needs CAP_NET_ADMIN (run as root)");
        return;
    }
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3);
    let mut medians = [Duration::ZERO; 3];
    for (n, mode) in MODES.into_iter().enumerate() {
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| track_move::run(mode, &vrrpd).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        times.sort();
        eprintln!("{}: {times:?}", mode.name());
        medians[n] = times[times.len() / 2];
    }
    let keepalived = medians[2].as_secs_f64();
    let goal = track_move::CHECK_INTERVAL + track_move::skew_time() + Duration::from_millis(100);
    println!("\n| track script fails -> client served by the new master | median of {runs} | / keepalived | / vrrpd without |");
    println!("| --- | --- | --- | --- |");
    for (mode, t) in MODES.into_iter().zip(medians) {
        let t = t.as_secs_f64();
        println!(
            "| {} | {t:.3} s | {:.2} | {:.2} |",
            mode.name(),
            t / keepalived,
            t / medians[1].as_secs_f64()
        );
    }
    println!(
        "\ngoal: check interval {} s + Skew_Time {:.3} s + 0.1 s = {:.3} s; backup's \
         Master_Down_Interval {:.3} s",
        track_move::CHECK_INTERVAL.as_secs(),
        track_move::skew_time().as_secs_f64(),
        goal.as_secs_f64(),
        track_move::group()
            .master_down_interval(track_move::BACKUP)
            .as_secs_f64()
    );
}

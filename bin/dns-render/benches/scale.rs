//! dns-render at scale: a Corefile, the dnsmasq files and a hosts fragment for 10, 1,000 and
//! 10,000 nodes, each as a whole process (start, read, render, write) under GNU time; wall time
//! and peak RSS. Writing a file includes the fsync of the file and of its directory (the
//! atomic write is durable); the Corefile is also rendered to standard output, without. The goal: linear, 10,000 nodes under 50 ms. The upstream, OpenShift's
//! runtimecfg, renders from Go templates inside a long-running daemon and has no command to
//! time beside it.
//!
//! `cargo bench -p dns-render --bench scale` (needs GNU time: `scripts/bench` installs it).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_dns-render");

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ipi_lab::install_config(d, &["2001:db8::/64"], &["2001:db8::5"], &["2001:db8::7"]);
    std::fs::write(d.join("resolv.conf"), "nameserver 2001:db8:53::1\n").unwrap();
    println!("| nodes | output | wall time | peak RSS | per node |");
    println!("| --- | --- | --- | --- | --- |");
    for n in [10usize, 1_000, 10_000] {
        let mut nodes = String::new();
        for i in 0..n {
            nodes.push_str(&format!("node-{i} worker 2001:db8::{:x}\n", 0x100 + i));
        }
        std::fs::write(d.join("nodes"), nodes).unwrap();
        for (label, args) in [
            (
                "Corefile to stdout",
                vec!["corefile", "--resolv", "RESOLV", "--node-ip", "2001:db8::1"],
            ),
            (
                "Corefile -o (fsync)",
                vec![
                    "corefile",
                    "--resolv",
                    "RESOLV",
                    "--node-ip",
                    "2001:db8::1",
                    "-o",
                    "OUT/Corefile",
                ],
            ),
            (
                "dnsmasq",
                vec![
                    "dnsmasq",
                    "--resolv",
                    "RESOLV",
                    "--node-ip",
                    "2001:db8::1",
                    "--out-dir",
                    "OUT",
                ],
            ),
            ("hosts", vec!["hosts", "-o", "OUT/hosts"]),
        ] {
            let (wall, rss) = measure(d, &args);
            println!(
                "| {n} | {label} | {wall:.1} ms | {rss} KiB | {:.2} us |",
                wall * 1000.0 / n as f64
            );
        }
    }
}

/// Best of five runs: (wall ms, peak RSS KiB).
fn measure(d: &Path, args: &[&str]) -> (f64, u64) {
    let fill = |a: &&str| {
        a.replace("RESOLV", d.join("resolv.conf").to_str().unwrap())
            .replace("OUT", d.to_str().unwrap())
    };
    let mut best = (f64::MAX, 0);
    for _ in 0..5 {
        let _ = std::fs::remove_file(d.join("Corefile"));
        let start = Instant::now();
        let out = Command::new("/usr/bin/time")
            .args(["-f", "%M", BIN])
            .args(args.iter().take(1))
            .args(["--cluster", d.join("install-config.yaml").to_str().unwrap()])
            .args(["--nodes", d.join("nodes").to_str().unwrap()])
            .args(args.iter().skip(1).map(fill))
            .output()
            .unwrap();
        let wall = start.elapsed().as_secs_f64() * 1000.0;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        let rss = err
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        if wall < best.0 {
            best = (wall, rss);
        }
    }
    best
}

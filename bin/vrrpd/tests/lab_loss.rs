//! Lossy adverts (issue #15): 40 % of the master's adverts dropped on their way out (nftables
//! on protocol 112), three routers, one VIP, VRRPv3 with 1 s adverts; keepalived and vrrpd run
//! the same scenario in the same test. Changes of holder are counted as the client's neighbour
//! cache sees them: the gratuitous ARPs for the VIP on the wire, in order, each change of their
//! sender MAC one change of holder (a takeover that the master undoes within milliseconds, by
//! answering the backup's lower-priority advert, is still two). A client connecting every
//! 50 ms is printed beside it, but it misses such short flips.
//!
//! Random loss (`numgen random mod 100 < 40`, the measurement) makes the count a matter
//! of chance: a backup takes over only after three adverts in a row are lost (Master_Down_
//! Interval 3.53 s at priority 120), 0.6 x 0.4^3 = 3.8 % of seconds, so 0.8 takeovers (1.5
//! changes of holder) in 20 s on average for either program, and two runs differ by two or more
//! takeovers often enough (~8 %) to make a comparison of single runs flaky. The test therefore
//! drops the same 40 % for both, deterministically: `numgen inc mod 10 < 4`, four adverts in a
//! row out of every ten, which any correct backup must answer with a takeover and the master
//! with taking the VIP back, twice in 20 s. `LOSS_PATTERN=random LOSS_RUNS=N` runs the random
//! variant N times and compares the totals within what chance allows (three standard
//! deviations).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ipi_lab::{wait_for, Host, Lab};
use ipi_net_tests::vrrp::{Group, Router, Speaker};
use support::{answers, Wire};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

/// How long the loss lasts in each run.
const LOSS: Duration = Duration::from_secs(20);

fn group() -> Group {
    Group {
        vrid: 70,
        ..Group::v3_dual(100)
    }
}

fn vip() -> IpAddr {
    IpAddr::V4(group().vip4.unwrap())
}

fn nft(host: &Host, script: &str) {
    let path = host.dir().join("loss.nft");
    std::fs::write(&path, script).unwrap();
    let out = host.run("nft", ["-f", path.to_str().unwrap()]).unwrap();
    assert!(out.success, "nft in {}: {}", host.name(), out.stderr);
}

/// The changes of holder during and after the loss: the senders of the gratuitous ARPs for the
/// VIP (host names) with repeats removed, and the hosts that answered the client.
fn run(speaker: Speaker, rule: &str) -> (Vec<String>, Vec<String>) {
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let g = Group {
        vip6: None,
        ..group()
    };
    let mut lab = Lab::new().unwrap();
    let (a, b, c, client, _answer) = support::three_routers(&mut lab);
    let _ra = Router::start(&a, speaker, &g, 150, Some(&vrrpd)).unwrap();
    let _rb = Router::start(&b, speaker, &g, 120, Some(&vrrpd)).unwrap();
    let _rc = Router::start(&c, speaker, &g, 100, Some(&vrrpd)).unwrap();
    wait_for(Duration::from_secs(15), Duration::from_millis(50), || {
        answers(&client, vip()).as_deref() == Some("a")
    })
    .unwrap_or_else(|| panic!("{speaker:?}: the client never reached a"));
    std::thread::sleep(Duration::from_secs(2));
    let macs = [(mac_of(&a), "a"), (mac_of(&b), "b"), (mac_of(&c), "c")];
    let wire = Wire::start(&lab, "loss");

    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (client, stop) = (client.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut seen: Vec<String> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Some(name) = answers(&client, vip()) {
                    if seen.last() != Some(&name) {
                        seen.push(name);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            seen
        })
    };
    nft(
        &a,
        &format!(
            "table inet loss {{\n  chain out {{\n    type filter hook output priority 0;\n    \
             ip protocol 112 {rule} counter drop\n  }}\n}}\n"
        ),
    );
    std::thread::sleep(LOSS);
    let out = a.run("nft", ["list", "table", "inet", "loss"]).unwrap();
    let dropped: u64 = out
        .stdout
        .split("counter packets ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no counter in {}", out.stdout));
    eprintln!("{speaker:?}: {dropped} of the master's adverts dropped in {LOSS:?}");
    // 40 % of one advert a second, give or take chance.
    assert!(dropped >= 3, "the loss rule dropped {dropped} adverts");
    let out = a.run("nft", ["delete", "table", "inet", "loss"]).unwrap();
    assert!(out.success, "{}", out.stderr);
    // Long enough for a backup that took over in the last second to hear a again.
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let seen = watcher.join().unwrap();
    assert_eq!(seen.last().map(String::as_str), Some("a"), "{seen:?}");
    let mut holders: Vec<String> = Vec::new();
    for garp in wire.stop().garps(vip()) {
        let who = macs
            .iter()
            .find(|(m, _)| *m == garp.eth_src)
            .map_or("?", |(_, n)| n)
            .to_string();
        if holders.last() != Some(&who) {
            holders.push(who);
        }
    }
    (holders, seen)
}

fn mac_of(host: &Host) -> String {
    support::mac(host)
}

fn changes(v: &[String]) -> usize {
    v.len().saturating_sub(1)
}

#[test]
fn lossy_adverts_move_the_vip_no_more_often_than_keepalived() {
    if !ipi_lab::available()
        || !ipi_lab::tool("keepalived", "keepalived")
        || !ipi_lab::tool("nft", "nftables")
    {
        return;
    }
    let random = std::env::var("LOSS_PATTERN").is_ok_and(|p| p == "random");
    let rule = if random {
        "numgen random mod 100 < 40"
    } else {
        "numgen inc mod 10 < 4"
    };
    let runs: usize = std::env::var("LOSS_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let (mut k, mut v) = (0, 0);
    for _ in 0..runs {
        for speaker in [Speaker::Keepalived, Speaker::Vrrpd] {
            let (holders, seen) = run(speaker, rule);
            let n = changes(&holders);
            eprintln!(
                "{}: {n} changes of holder on the wire {holders:?}; the client saw {seen:?}",
                speaker.name()
            );
            if speaker == Speaker::Keepalived {
                k += n;
            } else {
                v += n;
            }
        }
    }
    eprintln!("{rule}, {runs} run(s) of {LOSS:?}: keepalived {k}, vrrpd {v} changes of holder");
    if random {
        // Takeovers under random loss are rare and independent: about Poisson, 0.8 a run for
        // either program (see the top), so the difference of the two totals over N runs has a
        // variance of 1.6 N takeovers. Three standard deviations of it, two changes each, is
        // the most by which vrrpd may exceed keepalived by chance: 8 changes in one run, 24 in
        // ten, where a backup that took over at each single lost advert (8 of 20) would make
        // 16 a run.
        let allowance = 2 * (3.0 * (1.6 * runs as f64).sqrt()).ceil() as usize;
        assert!(
            v <= k + allowance,
            "vrrpd changed holder {v} times, keepalived {k}, over {runs} random run(s) \
             (allowed {allowance} more)"
        );
        return;
    }
    // The same drops for both: each burst of four lost adverts is one takeover and one return,
    // two changes; the master's answers to the backup's adverts count against the same
    // counter for both programs, so one burst may land a second later or earlier, but never
    // an extra one: no allowance beyond one takeover's two changes.
    assert!(
        v <= k + 2 * runs,
        "vrrpd changed holder {v} times, keepalived {k}"
    );
}

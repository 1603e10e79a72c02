//! The chaos schedule's short run: the cluster in a box (the bootstrap node gone) under every
//! kind of fault once, in the order of a fixed seed, with the clients running all
//! along (the API through its VIP every 20 ms and on a long-lived connection, every node's DNS,
//! the Ingress VIP's router). Asserted are the invariants, not times: no client request failed
//! or was answered wrongly during the faults that need no outage (reloads, a backup's faults,
//! a killed mdns daemon), apart from the asked node's own DNS server while that node is
//! powered off or unpublished; after the split brain heals one node holds the API VIP and the
//! API client is answered within one advert interval (plus a margin for a loaded machine);
//! every daemon a unit restarts is running at the end; no rendered file is half-written. The
//! table of what the clients saw per fault class is printed.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use ipi_net_tests::chaos::clients::Outcome;
use ipi_net_tests::chaos::schedule::{Kind, Schedule};
use ipi_net_tests::chaos::{self, report, Budget, Run};
use ipi_net_tests::cluster::{build_programs, Options, ADVERT_CS};

/// The fixed seed of the short run.
const SEED: u64 = 17;

/// What a loaded two-core machine may add to one advert interval before the split brain is
/// seen healed (the sampler's 100 ms, `ip addr` and the client's own requests included).
const MARGIN: Duration = Duration::from_secs(3);

/// The requests that failed or were answered wrongly during the faults that need no outage:
/// (fault, its target, client, what happened). Left out: the node's own DNS server while the
/// node is away (powered off, or its name unpublished), and one request of the long-lived
/// connection when a backup master is powered off (the API server at its other end may be
/// the one that went; the next request, on a new connection, must be answered).
fn needless_failures(run: &Run) -> Vec<String> {
    let mut out = Vec::new();
    for w in run.windows.iter().filter(|w| !w.kind.needs_outage()) {
        for (client, requests) in &run.seen.requests {
            if client == &format!("dns@{}", w.target) {
                continue;
            }
            let mut bad: Vec<_> = requests
                .iter()
                .filter(|r| w.start <= r.at && r.at < w.end && r.outcome != Outcome::Ok)
                .collect();
            if w.kind == Kind::PowerOffBackup && client == "stream" && bad.len() == 1 {
                bad.clear();
            }
            for r in bad {
                out.push(format!(
                    "{} on {} at {:.1} s: {client} {:?}",
                    w.kind.label(),
                    w.target,
                    r.at.as_secs_f64(),
                    r.outcome
                ));
            }
        }
    }
    out
}

#[test]
fn chaos_short_run() {
    if !ipi_lab::available() {
        return;
    }
    let options = Options::beside_current_exe().unwrap();
    build_programs(&options).unwrap();
    let t0 = Instant::now();
    let mut say = |line: &str| eprintln!("{:7.3} {line}", t0.elapsed().as_secs_f64());
    let mut cluster = chaos::prepare(&options, &mut say).unwrap_or_else(|e| panic!("{e}"));
    let budget = Budget {
        faults: Kind::ALL.len(),
        length: Duration::from_secs(200),
    };
    let schedule = Schedule::new(SEED, Duration::from_secs(2));
    let run =
        chaos::run(&mut cluster, schedule, budget, &mut say).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", report::table(&run, None));
    eprintln!("{}", report::failures(&run).join("\n"));
    let logs = || cluster.nodes().iter().map(|n| n.logs()).collect::<String>();

    assert!(
        run.dead.is_empty(),
        "daemons left dead: {:?}\n{}",
        run.dead,
        logs()
    );
    assert!(
        run.broken_files.is_empty(),
        "rendered files not whole: {:?}",
        run.broken_files
    );
    let last = run.seen.samples.last().unwrap();
    assert!(
        last.api.len() == 1 && last.ingress.len() == 1,
        "each VIP on one node at the end: {last:?}"
    );
    assert!(
        run.skipped.is_empty(),
        "faults not applied: {:?}",
        run.skipped
    );
    assert_eq!(
        run.windows.len(),
        Kind::ALL.len(),
        "every kind of fault once"
    );
    let needless = needless_failures(&run);
    assert!(
        needless.is_empty(),
        "clients failed during faults that need no outage:\n{}",
        needless.join("\n")
    );
    // A SIGKILLed lb-proxy on the API VIP's holder: its unit's ExecStopPost= takes the
    // VIP:6443 redirect with it, so the API's clients reach the node's own API server until
    // lb-proxy is back (0.3 s of failed requests over the clients here); with the redirect left
    // behind they were refused for its RestartSec= (2 s) and its start (4.4 s).
    let proxy = report::rows(&run)
        .get(&Kind::KillProxyHolder)
        .copied()
        .unwrap_or_default();
    assert!(
        proxy.faults == 1 && proxy.failed_ms < 2000,
        "lb-proxy killed on the holder: {proxy:?}"
    );
    let advert = Duration::from_millis(u64::from(ADVERT_CS) * 10);
    for (single, answered) in report::heals(&run) {
        let single = single.unwrap_or(Duration::MAX);
        let answered = answered.unwrap_or(Duration::MAX);
        say(&format!("split brain healed: one holder after {single:?}, the API client answered after {answered:?}"));
        assert!(
            single <= advert + MARGIN,
            "one API VIP holder {single:?} after the heal"
        );
        assert!(
            answered <= advert + MARGIN,
            "the API client answered {answered:?} after the heal"
        );
    }
    say("done");
}

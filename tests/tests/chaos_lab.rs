//! The chaos schedule's short run: the cluster in a box (the bootstrap node gone) under every
//! kind of fault once, in the order of a fixed seed, with the clients running all
//! along (the API through its VIP every 20 ms and on a long-lived connection, every node's DNS,
//! the Ingress VIP's router). Asserted are the invariants, not times: no client request failed
//! or was answered wrongly during the faults that need no outage (reloads, a backup's faults,
//! a killed mdns daemon), apart from the asked node's own DNS server while that node is
//! powered off or unpublished; each fault was felt (its proof read while it was held); the
//! protocol's invariants per fault class hold (moves, time with two holders and with none,
//! each client's outage: [`broken_invariants`]); after the split brain heals one node holds
//! the API VIP and the API client's ARP entry holds that node's MAC within one advert interval
//! (plus a margin for a loaded machine);
//! every daemon a unit restarts is running at the end; no rendered file is half-written. The
//! table of what the clients saw per fault class is printed.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use ipi_core::vrrp::Version;
use ipi_net_tests::chaos::clients::Outcome;
use ipi_net_tests::chaos::schedule::{Kind, Schedule};
use ipi_net_tests::chaos::{self, report, Budget, Run};
use ipi_net_tests::cluster::{build_programs, Options, ADVERT_CS, MASTER_API, WORKER_INGRESS};
use ipi_net_tests::rfc;

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

/// The protocol's invariants per fault class, from the rows of the report and each client's
/// outages; what broke them, one line each. With T the advert interval (1 s) and MDI the
/// longest Master_Down_Interval of the cluster (the workers' Ingress priority, RFC 3768 6.1):
/// - a VIP moves only when the fault justifies it, and then once. A link flap of the Ingress
///   holder may move it twice: measured once (seed 17), not yet explained, named in the note
///   of issue 30;
/// - time with two holders: for a fault that silences a holder without taking its address
///   (a VRRP partition, a SIGSTOPped daemon) from the backup's takeover (MDI) until the heal
///   plus one advert, at most `hold - MDI + T + MARGIN`; for every other fault at most
///   `T + MARGIN` (a backup that took over after lost adverts, until the master's answer);
/// - time with no holder: none unless the fault justifies a move, then at most
///   `MDI + MARGIN` (the backup's timer runs from the last advert heard);
/// - each client's longest outage in a fault that needs one (its own node's DNS server left
///   out: that server is what the fault takes away): at most `MDI + MARGIN`.
fn broken_invariants(run: &Run) -> Vec<String> {
    let t = rfc::centis(ADVERT_CS);
    let mdi = [MASTER_API, WORKER_INGRESS]
        .map(|p| rfc::master_down_interval(Version::V2, p, t))
        .into_iter()
        .max()
        .unwrap_or_default();
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let mut out = Vec::new();
    for (kind, row) in report::rows(run) {
        let moves_allowed = usize::from(kind == Kind::LinkFlap);
        if row.needless > moves_allowed {
            out.push(format!("{}: {} needless moves", kind.label(), row.needless));
        }
        let two = match kind {
            Kind::SplitBrain | Kind::StopVipHolder => kind.hold().saturating_sub(mdi) + t + MARGIN,
            _ => t + MARGIN,
        };
        if row.two_ms > ms(two) {
            out.push(format!(
                "{}: {} ms with two holders (at most {two:?})",
                kind.label(),
                row.two_ms
            ));
        }
        let justified = run
            .windows
            .iter()
            .any(|w| w.kind == kind && w.justifies.is_some());
        let none = if justified {
            mdi + MARGIN
        } else {
            Duration::ZERO
        };
        if row.none_ms > ms(none) {
            out.push(format!(
                "{}: {} ms with no holder (at most {none:?})",
                kind.label(),
                row.none_ms
            ));
        }
    }
    for (w, client, outage) in report::longest_outages(run) {
        if w.kind.needs_outage() && outage > ms(mdi + MARGIN) {
            out.push(format!(
                "{} on {}: {client} failed for {outage} ms (at most {:?})",
                w.kind.label(),
                w.target,
                mdi + MARGIN
            ));
        }
    }
    out
}

/// After the split brain heals, one node holds the API VIP and the API client's ARP entry
/// holds that node's MAC within one advert interval (plus [`MARGIN`]).
fn heals_are_followed(run: &Run, say: &mut dyn FnMut(&str)) {
    let advert = rfc::centis(ADVERT_CS);
    let heals = report::heals(run);
    assert_eq!(heals.len(), 1, "one split brain in the run");
    for (single, arp) in heals {
        let single = single.unwrap_or(Duration::MAX);
        let arp = arp.unwrap_or(Duration::MAX);
        say(&format!(
            "split brain healed: one holder after {single:?}, the API client's ARP entry on it \
             after {arp:?}"
        ));
        assert!(
            single <= advert + MARGIN,
            "one API VIP holder {single:?} after the heal"
        );
        // The router that stepped down answers no more for the VIP: a client left with its MAC
        // is cut off until its ARP entry expires, unless the winner re-announces the VIP.
        assert!(
            arp <= advert + MARGIN,
            "the API client's ARP entry held the one holder's MAC only {arp:?} after the heal"
        );
    }
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
    let broken = broken_invariants(&run);
    assert!(
        broken.is_empty(),
        "invariants broken:\n{}",
        broken.join("\n")
    );
    heals_are_followed(&run, &mut say);
    say("done");
}

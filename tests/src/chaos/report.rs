//! What a run's clients saw, summed per fault class: milliseconds during which requests
//! failed (per client, from a failed request to the next answered one, added over the
//! clients), requests failed and answered wrongly (a DNS answer naming a VIP nobody held
//! counts), VIP moves and how many no fault justified, time with two holders of a VIP and
//! with none; and the table, ours beside upstream.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::Duration;

use super::clients::{Outcome, Request, Sample};
use super::faults::Vip;
use super::schedule::Kind;
use super::{Run, Window};
use crate::cluster::{API_VIP, INGRESS_VIP};

/// One fault class's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Row {
    /// Faults of the class in the run.
    pub faults: usize,
    /// Milliseconds during which a client's requests failed, added over the clients.
    pub failed_ms: u64,
    /// Requests that failed.
    pub failed: usize,
    /// Requests answered wrongly.
    pub wrong: usize,
    /// Moves of a VIP from one holder to another.
    pub moves: usize,
    /// Moves no fault justified (more than one for a fault that justified one).
    pub needless: usize,
    /// Milliseconds with a VIP on two nodes at once.
    pub two_ms: u64,
    /// Milliseconds with a VIP on no node.
    pub none_ms: u64,
}

/// The figures of every fault class in the run.
pub fn rows(run: &Run) -> BTreeMap<Kind, Row> {
    let mut rows: BTreeMap<Kind, Row> = BTreeMap::new();
    for w in &run.windows {
        let row = rows.entry(w.kind).or_default();
        row.faults += 1;
        holders(row, w, &run.seen.samples);
    }
    for requests in run.seen.requests.values() {
        for (at, ms) in outages(requests) {
            if let Some(w) = window(&run.windows, at) {
                rows.entry(w.kind).or_default().failed_ms += ms;
            }
        }
        for r in requests {
            let Some(w) = window(&run.windows, r.at) else {
                continue;
            };
            let row = rows.entry(w.kind).or_default();
            match &r.outcome {
                Outcome::Failed(_) => row.failed += 1,
                Outcome::Wrong(_) => row.wrong += 1,
                Outcome::Ok if names_nobody(r, &run.seen.samples) => row.wrong += 1,
                Outcome::Ok => {}
            }
        }
    }
    rows
}

/// The failed stretches of one client: where each began, and how long until the next
/// answered request (in ms; to the last request when none followed).
pub fn outages(requests: &[Request]) -> Vec<(Duration, u64)> {
    let mut out = Vec::new();
    let mut since: Option<Duration> = None;
    for r in requests {
        match (&r.outcome, since) {
            (Outcome::Ok, Some(s)) => {
                out.push((s, millis(r.at.saturating_sub(s))));
                since = None;
            }
            (Outcome::Failed(_) | Outcome::Wrong(_), None) => since = Some(r.at),
            _ => {}
        }
    }
    if let (Some(s), Some(last)) = (since, requests.last()) {
        out.push((s, millis(last.at + last.latency - s)));
    }
    out
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The fault whose window holds `at`.
fn window(windows: &[Window], at: Duration) -> Option<&Window> {
    windows.iter().find(|w| w.start <= at && at < w.end)
}

/// Whether a DNS answer named a VIP that nobody held when it was given.
fn names_nobody(r: &Request, samples: &[Sample]) -> bool {
    let Some(address) = r.address else {
        return false;
    };
    let Some(s) = samples.iter().rev().find(|s| s.at <= r.at) else {
        return false;
    };
    (address == IpAddr::V4(API_VIP) && s.api.is_empty())
        || (address == IpAddr::V4(INGRESS_VIP) && s.ingress.is_empty())
}

/// Moves, two holders and none, from the samples in the fault's window.
fn holders(row: &mut Row, w: &Window, samples: &[Sample]) {
    let before = samples.iter().rev().find(|s| s.at < w.start);
    for vip in [Vip::Api, Vip::Ingress] {
        let of = |s: &Sample| -> Vec<String> {
            match vip {
                Vip::Api => s.api.clone(),
                Vip::Ingress => s.ingress.clone(),
            }
        };
        let mut last = before.map(of).filter(|h| h.len() == 1);
        let mut moves = 0;
        let inside: Vec<&Sample> = samples
            .iter()
            .filter(|s| w.start <= s.at && s.at < w.end)
            .collect();
        for (i, s) in inside.iter().enumerate() {
            let h = of(s);
            let dt = inside
                .get(i + 1)
                .map_or(Duration::ZERO, |n| n.at.saturating_sub(s.at));
            match h.len() {
                0 => row.none_ms += millis(dt),
                1 => {
                    if last.as_ref().is_some_and(|l| *l != h) {
                        moves += 1;
                    }
                    last = Some(h);
                }
                _ => row.two_ms += millis(dt),
            }
        }
        row.moves += moves;
        let justified = usize::from(w.justifies == Some(vip));
        row.needless += moves.saturating_sub(justified);
    }
}

/// Per fault, per client: the longest outage ([`outages`]) that began in the fault's window,
/// in ms, as (fault, client, ms); the client of the fault's own node's DNS server is left out
/// (that server is what the fault takes away).
pub fn longest_outages(run: &Run) -> Vec<(&Window, &str, u64)> {
    let mut out = Vec::new();
    for w in &run.windows {
        for (client, requests) in &run.seen.requests {
            if client == &format!("dns@{}", w.target) {
                continue;
            }
            let longest = outages(requests)
                .into_iter()
                .filter(|(at, _)| w.start <= *at && *at < w.end)
                .map(|(_, ms)| ms)
                .max();
            if let Some(ms) = longest {
                out.push((w, client.as_str(), ms));
            }
        }
    }
    out
}

/// Per fault, per client: the requests that failed or were answered wrongly, and the first
/// reason (one line each), for a reader looking for what went wrong.
pub fn failures(run: &Run) -> Vec<String> {
    let mut out = Vec::new();
    for w in &run.windows {
        for (client, requests) in &run.seen.requests {
            let bad: Vec<&Request> = requests
                .iter()
                .filter(|r| w.start <= r.at && r.at < w.end && r.outcome != Outcome::Ok)
                .collect();
            if let Some(first) = bad.first() {
                out.push(format!(
                    "{:>7.1} s {} ({}): {client}: {} from {:.1} s, first {:?}",
                    w.start.as_secs_f64(),
                    w.kind.label(),
                    w.target,
                    bad.len(),
                    first.at.as_secs_f64(),
                    first.outcome
                ));
            }
        }
    }
    out
}

/// The split-brain heals of a run: for each, how long after the heal until one node held
/// the API VIP again, and until the API client's ARP entry for it held that node's MAC
/// ([`Window::arp`]; None: never).
pub fn heals(run: &Run) -> Vec<(Option<Duration>, Option<Duration>)> {
    run.windows
        .iter()
        .filter(|w| w.kind == Kind::SplitBrain)
        .map(|w| {
            let single = run
                .seen
                .samples
                .iter()
                .find(|s| s.at >= w.undone && s.api.len() == 1)
                .map(|s| s.at - w.undone);
            (single, w.arp)
        })
        .collect()
}

/// The table: a row per fault class, ours beside upstream when there is an upstream run.
pub fn table(ours: &Run, upstream: Option<&Run>) -> String {
    let o = rows(ours);
    let u = upstream.map(rows);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "| fault (seed {}) | n | failed ms | failed req | wrong | moves (needless) | two holders ms | no holder ms |",
        ours.seed
    );
    let _ = writeln!(t, "| --- | --- | --- | --- | --- | --- | --- | --- |");
    for kind in Kind::ALL {
        let a = o.get(&kind).copied().unwrap_or_default();
        let b = u
            .as_ref()
            .map(|u| u.get(&kind).copied().unwrap_or_default());
        let cell = |f: &dyn Fn(&Row) -> String| match &b {
            Some(b) => format!("{} / {}", f(&a), f(b)),
            None => f(&a),
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            kind.label(),
            cell(&|r| r.faults.to_string()),
            cell(&|r| r.failed_ms.to_string()),
            cell(&|r| r.failed.to_string()),
            cell(&|r| r.wrong.to_string()),
            cell(&|r| format!("{} ({})", r.moves, r.needless)),
            cell(&|r| r.two_ms.to_string()),
            cell(&|r| r.none_ms.to_string()),
        );
    }
    if upstream.is_some() {
        t.push_str("\nEach cell: ours / upstream (keepalived + haproxy).\n");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(ms: u64, ok: bool) -> Request {
        Request {
            at: Duration::from_millis(ms),
            latency: Duration::from_millis(5),
            outcome: if ok {
                Outcome::Ok
            } else {
                Outcome::Failed("x".into())
            },
            address: None,
        }
    }

    #[test]
    fn an_outage_lasts_from_the_first_failure_to_the_next_answer() {
        let rs = [
            r(0, true),
            r(20, false),
            r(40, false),
            r(60, true),
            r(80, false),
        ];
        assert_eq!(
            outages(&rs),
            [
                (Duration::from_millis(20), 40),
                (Duration::from_millis(80), 5)
            ]
        );
        assert!(outages(&[r(0, true), r(20, true)]).is_empty());
    }
}

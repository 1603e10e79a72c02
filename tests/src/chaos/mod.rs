//! Chaos: the cluster in a box under a seeded fault schedule, measured as its clients see it.
//!
//! [`run`] starts the clients ([`clients`]: the API through its VIP, a long-lived connection,
//! every node's DNS, the Ingress VIP's router) and the holder sampler, then applies the
//! [`schedule`]'s faults one after the other ([`faults`]: each applied, held, undone, then
//! quiet time), waits for what the units restart to be back, and stops the clients. What
//! they saw, per fault, is summed per fault class by [`report`], ours beside upstream.

pub mod clients;
pub mod faults;
pub mod proof;
pub mod report;
pub mod schedule;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clients::{Clients, Seen};
use faults::{Active, Vip};
use schedule::{Kind, Planned, Schedule};

use ipi_lab::Host;

use crate::cluster::{Cluster, ClusterError, Options, Role, Stack, API_VIP};

/// One fault as it happened: from its start to the start of the next (its quiet time
/// included), when it was undone, and what it justified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// What.
    pub kind: Kind,
    /// On which node(s).
    pub target: String,
    /// The VIP whose move it justifies.
    pub justifies: Option<Vip>,
    /// When it was applied, from the start of the run.
    pub start: Duration,
    /// When it was undone.
    pub undone: Duration,
    /// When its quiet time ended.
    pub end: Duration,
    /// What showed that it took effect ([`faults::undo`]).
    pub felt: String,
    /// For a split brain: how long after the heal until the API VIP had one holder and the
    /// API client's ARP entry for it held that holder's MAC (None: not within
    /// [`HEAL_LIMIT`], or another kind of fault).
    pub arp: Option<Duration>,
}

/// How long a split brain's heal is watched for the client to follow the one holder left: a
/// client stranded on the MAC of the router that stepped down would follow only when its ARP
/// entry expires (about 25 s: base_reachable_time 30 s halved at random, delay and probes).
pub const HEAL_LIMIT: Duration = Duration::from_secs(10);

/// A whole run: what was done, and what was seen.
#[derive(Debug, Clone)]
pub struct Run {
    /// The stack it ran against.
    pub stack: Stack,
    /// The schedule's seed.
    pub seed: u64,
    /// The faults, in order.
    pub windows: Vec<Window>,
    /// Faults that could not be applied (no single holder at that moment...): why.
    pub skipped: Vec<(Kind, String)>,
    /// What the clients and the sampler saw.
    pub seen: Seen,
    /// At the end: units of a node that is up, that run a daemon and are not running (node,
    /// unit, why).
    pub dead: Vec<(String, String, String)>,
    /// At the end: rendered files that are not whole (path, why).
    pub broken_files: Vec<(PathBuf, String)>,
}

/// How long a run goes on: until `faults` faults or `length`, whichever is first.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// At most this many faults.
    pub faults: usize,
    /// Until this much time has passed (no fault starts after it).
    pub length: Duration,
}

/// How long the daemons the faults killed get to be back at the end (`RestartSec=` of 5 s
/// and 10 s, readiness, on a loaded machine).
const BACK: Duration = Duration::from_secs(40);

/// The cluster as the schedule starts from it: up, settled, the bootstrap node gone (the
/// API VIP on a master), requests through the API VIP answered by every master.
pub fn prepare(options: &Options, say: &mut dyn FnMut(&str)) -> Result<Cluster, ClusterError> {
    let mut c = Cluster::up(options, say)?;
    let settled = c.settle(Duration::from_secs(120))?;
    say(&format!("settled after {:.1} s", settled.as_secs_f64()));
    let m = c.remove_bootstrap()?;
    say(&format!(
        "bootstrap removed: the API VIP on {} after {:.1} s",
        m.to,
        m.took.as_secs_f64()
    ));
    let masters: Vec<String> = c
        .names(Role::Master)
        .into_iter()
        .map(String::from)
        .collect();
    c.spread_over(6, &masters, Duration::from_secs(60))?;
    Ok(c)
}

/// Runs the schedule on the cluster (up, settled, the bootstrap node removed). `say` gets a
/// line per fault.
pub fn run(
    c: &mut Cluster,
    schedule: Schedule,
    budget: Budget,
    say: &mut dyn FnMut(&str),
) -> Result<Run, ClusterError> {
    let seed = schedule.seed;
    let clients = Clients::start(c)?;
    let t0 = clients.t0;
    // A baseline before the first fault.
    std::thread::sleep(Duration::from_secs(2));
    let mut windows = Vec::new();
    let mut skipped = Vec::new();
    for p in schedule.take(budget.faults) {
        if t0.elapsed() >= budget.length {
            break;
        }
        // Said before it is applied too: a fault whose step hangs is named by the last line.
        say(&format!(
            "{:>7.1} s  {} ...",
            t0.elapsed().as_secs_f64(),
            p.kind.label()
        ));
        match one(c, p, t0, &clients.api_host) {
            Ok(w) => {
                say(&format!(
                    "{:>7.1} s  {:<36} {} (undone at {:.1} s; {})",
                    w.start.as_secs_f64(),
                    p.kind.label(),
                    w.target,
                    w.undone.as_secs_f64(),
                    w.felt
                ));
                windows.push(w);
            }
            Err(e) => {
                say(&format!(
                    "{:>7.1} s  {}: skipped, {e}",
                    t0.elapsed().as_secs_f64(),
                    p.kind.label()
                ));
                skipped.push((p.kind, e.to_string()));
                std::thread::sleep(p.quiet);
            }
        }
    }
    let dead = wait_back(c);
    let seen = clients.stop();
    Ok(Run {
        stack: c.options().stack,
        seed,
        windows,
        skipped,
        seen,
        dead,
        broken_files: broken_files(c),
    })
}

/// One fault: applied, held, proved felt and undone, quiet (a split brain's heal watched
/// from `client`).
fn one(c: &mut Cluster, p: Planned, t0: Instant, client: &Host) -> Result<Window, ClusterError> {
    let start = t0.elapsed();
    let applied = Instant::now();
    let a: Active = faults::apply(c, p)?;
    std::thread::sleep(p.kind.hold().saturating_sub(applied.elapsed()));
    let held = proof::held(c, &a, faults::TABLE)?;
    let ended = faults::undo(c, &a)?;
    let felt = held.or(ended).unwrap_or_default();
    let undone = t0.elapsed();
    let arp = (p.kind == Kind::SplitBrain)
        .then(|| proof::client_follows(c, client, API_VIP, HEAL_LIMIT))
        .flatten();
    std::thread::sleep(p.quiet.saturating_sub(t0.elapsed() - undone));
    let target = match &a.peer {
        Some(peer) => format!("{} and {peer}", a.target),
        None => a.target.clone(),
    };
    Ok(Window {
        kind: p.kind,
        target,
        justifies: a.justifies,
        start,
        undone,
        end: t0.elapsed(),
        felt,
        arp,
    })
}

/// Waits (up to [`BACK`]) until every up node runs every daemon of its role; what is still
/// not running then.
fn wait_back(c: &Cluster) -> Vec<(String, String, String)> {
    let mut dead = Vec::new();
    ipi_lab::wait_for(BACK, Duration::from_millis(250), || {
        dead = c
            .nodes()
            .iter()
            .filter(|n| n.is_up())
            .flat_map(|n| {
                n.dead_units()
                    .into_iter()
                    .map(|(u, why)| (n.name.clone(), u, why))
            })
            .collect();
        dead.is_empty()
    });
    dead
}

/// The files the nodes' programs render (`/run/ipi-net/inventory/nodes`, `/run/ipi-net/dns/*`)
/// that are not whole: empty, not ending in a newline, or a temporary file left beside them.
pub fn broken_files(c: &Cluster) -> Vec<(PathBuf, String)> {
    let mut broken = Vec::new();
    for n in c.nodes().iter().filter(|n| n.is_up()) {
        let run = n.host.dir().join("run");
        let mut files = Vec::new();
        for dir in ["inventory", "dns"] {
            if let Ok(entries) = std::fs::read_dir(run.join(dir)) {
                files.extend(entries.flatten().map(|e| e.path()));
            }
        }
        for f in files {
            let name = f.file_name().map(|s| s.to_string_lossy().into_owned());
            let Ok(bytes) = std::fs::read(&f) else {
                continue;
            };
            let why = if name.is_some_and(|s| s.starts_with('.') || s.contains(".tmp")) {
                Some("a temporary file left behind")
            } else if bytes.is_empty() {
                Some("empty")
            } else if !bytes.ends_with(b"\n") {
                Some("does not end with a newline")
            } else {
                None
            };
            if let Some(why) = why {
                broken.push((f, why.to_string()));
            }
        }
    }
    broken
}

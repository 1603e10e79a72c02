//! The chaos schedule's long run: the cluster in a box (the bootstrap node gone) under the
//! seeded fault schedule for N minutes, the clients running all along, once with our
//! programs and once with upstream's (keepalived and haproxy in place of vrrpd and lb-proxy),
//! the same seed; the table per fault class printed, ours beside upstream.
//!
//! `cargo bench -p ipi-net-tests --bench chaos -- --minutes N --seed S [--stack ours|upstream]`
//! as root (it builds network namespaces); `scripts/bench chaos` runs it. Defaults: 30
//! minutes, seed 17, both stacks.

use std::time::{Duration, Instant};

use ipi_net_tests::chaos::schedule::Schedule;
use ipi_net_tests::chaos::{self, report, Budget, Run};
use ipi_net_tests::cluster::{build_programs, ClusterError, Options, Stack};

/// What the command line asked for.
struct Args {
    minutes: u64,
    seed: u64,
    stacks: Vec<Stack>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        minutes: 30,
        seed: 17,
        stacks: vec![Stack::Ours, Stack::Upstream],
    };
    let mut words = std::env::args().skip(1);
    while let Some(w) = words.next() {
        let mut value = |what: &str| words.next().ok_or_else(|| format!("{what} needs a value"));
        match w.as_str() {
            "--minutes" => {
                a.minutes = value("--minutes")?
                    .parse()
                    .map_err(|_| "--minutes: not a whole number".to_string())?;
            }
            "--seed" => {
                a.seed = value("--seed")?
                    .parse()
                    .map_err(|_| "--seed: not a whole number".to_string())?;
            }
            "--stack" => {
                a.stacks = match value("--stack")?.as_str() {
                    "ours" => vec![Stack::Ours],
                    "upstream" => vec![Stack::Upstream],
                    other => return Err(format!("--stack {other}: ours or upstream")),
                };
            }
            // What cargo bench passes to every bench.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

/// One stack's run on a cluster of its own.
fn run(stack: Stack, a: &Args) -> Result<Run, ClusterError> {
    let mut options = Options::beside_current_exe()?;
    options.stack = stack;
    build_programs(&options)?;
    let t0 = Instant::now();
    let mut say = |line: &str| eprintln!("{:8.1} {stack:?} {line}", t0.elapsed().as_secs_f64());
    let mut cluster = chaos::prepare(&options, &mut say)?;
    let budget = Budget {
        faults: usize::MAX,
        length: Duration::from_secs(a.minutes * 60),
    };
    let schedule = Schedule::new(a.seed, Duration::from_secs(3));
    let r = chaos::run(&mut cluster, schedule, budget, &mut say)?;
    for line in report::failures(&r) {
        eprintln!("{stack:?} {line}");
    }
    if !r.dead.is_empty() || !r.broken_files.is_empty() {
        eprintln!(
            "{stack:?}: left dead {:?}, files not whole {:?}",
            r.dead, r.broken_files
        );
    }
    Ok(r)
}

fn main() {
    if !ipi_lab::has_net_admin() {
        eprintln!("chaos: needs CAP_NET_ADMIN (run as root)");
        return;
    }
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("chaos: {e}\nusage: chaos [--minutes N] [--seed S] [--stack ours|upstream]");
            std::process::exit(2);
        }
    };
    let mut runs = Vec::new();
    for stack in &a.stacks {
        match run(*stack, &a) {
            Ok(r) => runs.push(r),
            Err(e) => eprintln!("chaos: the {stack:?} stack: {e}"),
        }
    }
    let ours = runs.iter().find(|r| r.stack == Stack::Ours);
    let upstream = runs.iter().find(|r| r.stack == Stack::Upstream);
    match (ours, upstream) {
        (Some(o), u) => println!("{}", report::table(o, u)),
        (None, Some(u)) => println!("upstream only:\n{}", report::table(u, None)),
        (None, None) => std::process::exit(1),
    }
    println!(
        "{} minutes per stack, seed {}; failed ms added over the clients (API every 20 ms, a \
         long-lived connection, each node's DNS, the Ingress router)",
        a.minutes, a.seed
    );
}
